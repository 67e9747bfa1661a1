//! Fixtures shared by the PostgreSQL store tests. Each test opens its own schema.
#![allow(dead_code)]

pub mod proxy;

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use docket_core::graph::{graph_hash, GraphDocument};
use docket_core::model::{
    CheckpointType, ClaimToken, Event, EventType, GraphId, GraphRef, OwnerScope, Run, RunId,
    RunStatus, Scope, TenantId, Timestamp, ValueMap,
};
use docket_core::store::{
    BatchedInit, ClaimBatch, ClaimClass, ClaimLease, ClaimRequest, ClaimedCommit, ClaimedSchedule,
    GraphStore, InitProposal, ReleaseWake, RunStore, UnclaimedCommit,
};
use docket_postgres::testing::{self, PostgresHarness, SchemaGuard};
use docket_postgres::PostgresStore;
use serde_json::json;

/// A store in a fresh schema. Panics (fails the test) when the server is unreachable.
pub async fn open() -> (PostgresStore, SchemaGuard) {
    PostgresHarness::new()
        .open_store()
        .await
        .expect("the PostgreSQL test server must be reachable (DOCKET_TEST_POSTGRES_URL)")
}

/// A store in a fresh schema with one pooled connection: every statement runs in the same
/// server session, so its cached plans are shared and the server's counters flush from it
/// (`runs_counters`). Panics (fails the test) when the server is unreachable.
pub async fn open_single_connection() -> (PostgresStore, SchemaGuard) {
    PostgresHarness::new()
        .pool_size(1)
        .open_store()
        .await
        .expect("the PostgreSQL test server must be reachable (DOCKET_TEST_POSTGRES_URL)")
}

pub async fn snapshot(store: &PostgresStore) -> String {
    testing::raw_snapshot(store).await.expect("snapshot")
}

pub fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000 + ms)
}

pub fn tenant(id: &str) -> OwnerScope {
    OwnerScope::Tenant(TenantId::new(id).expect("tenant id"))
}

pub fn rid(id: &str) -> RunId {
    RunId::new(id).expect("run id")
}

pub fn graph_doc(id: &str, revision: u64) -> GraphDocument {
    GraphDocument::from_json(&format!(
        r#"{{"schema_version":1,"id":"{id}","metadata":{{"revision":{revision}}}}}"#
    ))
    .expect("graph document")
}

pub fn graph_ref_of(doc: &GraphDocument) -> GraphRef {
    GraphRef {
        graph_id: GraphId::new(doc.id.clone()).expect("graph id"),
        graph_hash: graph_hash(doc),
    }
}

/// Saves revision 0 of graph `g1` for `owner` and returns its address.
pub async fn save_graph(store: &PostgresStore, owner: &OwnerScope) -> GraphRef {
    let doc = graph_doc("g1", 0);
    let graph_ref = graph_ref_of(&doc);
    store
        .save_graph(owner, &graph_ref, &doc, t(0))
        .await
        .expect("save graph");
    graph_ref
}

/// A freshly initialized run document (seq 1, one event).
pub fn initialized_run(id: &str, graph: &GraphRef, at: Timestamp) -> Run {
    let mut input = ValueMap::new();
    input.insert(
        "text".into(),
        json!("nul \u{0} inside, float 1e20 and -0.0"),
    );
    input.insert("numbers".into(), json!([1e20, -0.0, 3, 1.5]));
    let mut run = Run::new_created(
        rid(id),
        graph.graph_id.clone(),
        graph.graph_hash.clone(),
        input,
        ValueMap::new(),
    );
    run.status = RunStatus::Running;
    run.started_at = Some(at);
    run.updated_at = Some(at);
    run.checkpoint_seq = 1;
    run.event_seq = 1;
    run
}

pub fn event(run: &Run, seq: u64, at: Timestamp, note: &str) -> Event {
    let mut payload = ValueMap::new();
    payload.insert("note".into(), json!(note));
    Event {
        run_id: run.id.clone(),
        seq,
        event_type: EventType::CheckpointCommitted,
        step: run.step,
        node_id: None,
        channel_id: None,
        task_id: None,
        timestamp: at,
        payload,
        metadata: ValueMap::new(),
    }
}

/// Saves the graph (idempotent) and initializes run `id`, due at `wake`.
pub async fn start(store: &PostgresStore, owner: &OwnerScope, id: &str, wake: Timestamp) -> Run {
    let graph = save_graph(store, owner).await;
    let run = initialized_run(id, &graph, t(0));
    let events = vec![event(&run, 1, t(0), "init")];
    store
        .initialize(
            owner,
            InitProposal {
                run,
                checkpoint_type: CheckpointType::RunInitialized,
                wake_at: wake,
                now: t(0),
            },
            events,
        )
        .await
        .expect("initialize")
}

/// A start of run `id` of `graph` (owned by nobody), due at once.
pub fn init_member(graph: &GraphRef, id: &str) -> BatchedInit {
    let run = initialized_run(id, graph, t(0));
    let events = vec![event(&run, 1, t(0), "init")];
    BatchedInit {
        owner: OwnerScope::Tenantless,
        proposal: InitProposal {
            run,
            checkpoint_type: CheckpointType::RunInitialized,
            wake_at: t(0),
            now: t(0),
        },
        events,
    }
}

/// The next moment of `run`: seq + 1, one more event, updated at `at`.
pub fn next(run: &Run, at: Timestamp) -> Run {
    let mut next = run.clone();
    next.checkpoint_seq += 1;
    next.event_seq += 1;
    next.updated_at = Some(at);
    next
}

/// `next` turned terminal (`done`).
pub fn done(run: &Run, at: Timestamp) -> Run {
    let mut next = next(run, at);
    next.status = RunStatus::Done;
    next.finished_at = Some(at);
    next.output = Some(ValueMap::new());
    next
}

pub fn policy(now: Timestamp, limit: u32) -> ClaimRequest {
    ClaimRequest {
        policy: Default::default(),
        now,
        limit: NonZeroU32::new(limit).expect("limit"),
        orphan_ttl_ms: 60_000,
        max_claim_attempts: NonZeroU32::new(5).expect("max"),
        preference: None,
    }
}

pub fn with_ttl(mut p: ClaimRequest, ttl_ms: u64) -> ClaimRequest {
    p.orphan_ttl_ms = ttl_ms;
    p
}

pub fn with_max(mut p: ClaimRequest, max: u32) -> ClaimRequest {
    p.max_claim_attempts = NonZeroU32::new(max).expect("max");
    p
}

pub fn preferring(mut p: ClaimRequest, class: ClaimClass) -> ClaimRequest {
    p.preference = Some(class);
    p
}

/// Claims exactly one lease for `id` (the only due run) at `now`.
pub async fn claim_one(store: &PostgresStore, now: Timestamp) -> ClaimLease {
    let batch = store.claim_due(&policy(now, 1)).await.expect("claim");
    assert_eq!(batch.poisoned, vec![], "no poison expected");
    assert_eq!(batch.leases.len(), 1, "one lease expected");
    batch.leases.into_iter().next().expect("lease")
}

pub fn lease_ids(batch: &ClaimBatch) -> Vec<String> {
    batch
        .leases
        .iter()
        .map(|l| l.run_id.as_str().to_owned())
        .collect()
}

pub fn claimed(
    run: Run,
    expected_seq: u64,
    token: &ClaimToken,
    schedule: ClaimedSchedule,
    now: Timestamp,
) -> ClaimedCommit {
    ClaimedCommit {
        run,
        expected_seq,
        claim_token: token.clone(),
        checkpoint_type: CheckpointType::StepCommitted,
        schedule,
        now,
    }
}

pub fn unclaimed(run: Run, wake: ReleaseWake, now: Timestamp) -> UnclaimedCommit {
    UnclaimedCommit {
        run,
        checkpoint_type: CheckpointType::InterruptResolved,
        wake,
        now,
    }
}

pub const SYSTEM: Scope = Scope::System;

/// Commits `proposal` (the moment after `prev`, with one event) under `token` at `at` with
/// `schedule`, asserting success; returns `proposal`.
pub async fn commit_moment(
    store: &PostgresStore,
    token: &ClaimToken,
    prev: &Run,
    proposal: Run,
    schedule: ClaimedSchedule,
    at: Timestamp,
) -> Run {
    let events = vec![event(&proposal, proposal.event_seq, at, "moment")];
    store
        .commit_claimed(
            &SYSTEM,
            claimed(proposal.clone(), prev.checkpoint_seq, token, schedule, at),
            events,
        )
        .await
        .expect("commit");
    proposal
}

/// What the server counted for one table of the schema (`pg_stat_user_tables`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableCounters {
    /// Rows inserted.
    pub inserts: i64,
    /// Rows updated.
    pub updates: i64,
    /// Of which heap-only (HOT) updates.
    pub hot_updates: i64,
    /// Sequential scans of the table started.
    pub seq_scans: i64,
}

/// What the server counted for the schema's `runs` table.
pub type RunsCounters = TableCounters;

/// The server's counters for the schema's `table` once `arrived` holds for them. The store's
/// connection is asked to publish its counters at the end of its next transaction
/// (`pg_stat_force_next_flush`, PostgreSQL 15 and later; a backend publishes them at most
/// once a second otherwise), then the counters are read until they arrive — so give the
/// store one connection (`open_single_connection`) for the flush to reach the backend that
/// wrote.
pub async fn table_counters(
    store: &PostgresStore,
    schema: &str,
    table: &str,
    arrived: impl Fn(&TableCounters) -> bool,
) -> TableCounters {
    let pool = testing::pool(store);
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .expect("flush the connection's counters");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (inserts, updates, hot_updates, seq_scans): (i64, i64, i64, i64) = sqlx::query_as(
            "SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, seq_scan FROM pg_stat_user_tables
             WHERE schemaname = $1 AND relname = $2",
        )
        .bind(schema)
        .bind(table)
        .fetch_one(pool)
        .await
        .expect("the table's counters");
        let counted = TableCounters {
            inserts,
            updates,
            hot_updates,
            seq_scans,
        };
        if arrived(&counted) {
            return counted;
        }
        assert!(
            Instant::now() < deadline,
            "the server's counters of {table} never arrived: {counted:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server's counters for the schema's `runs` once they show at least `updates` updates
/// (see [`table_counters`]).
pub async fn runs_counters(store: &PostgresStore, schema: &str, updates: i64) -> RunsCounters {
    table_counters(store, schema, "runs", |c| c.updates >= updates).await
}
