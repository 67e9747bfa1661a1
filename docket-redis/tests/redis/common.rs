//! Fixtures shared by the Redis store tests: a fresh namespace per test, valid graphs, runs,
//! events and proposals, and a fixed time base driven explicitly (no wall clock).

use std::num::NonZeroU32;

use docket_core::graph::{graph_hash, GraphDocument};
use docket_core::model::{
    CheckpointType, ClaimToken, Event, EventType, Failure, GraphId, GraphRef, OwnerScope, Run,
    RunId, RunStatus, Scope, TenantId, Timestamp, ValueMap,
};
use docket_core::store::{
    ClaimClass, ClaimLease, ClaimRequest, ClaimedCommit, ClaimedSchedule, GraphStore, InitProposal,
    ReleaseWake, RunStore, UnclaimedCommit,
};
use docket_redis::testing::{RedisGuard, RedisHarness};
use docket_redis::RedisStore;
use serde_json::json;

/// A store on a fresh namespace; the guard deletes the namespace when dropped.
pub struct Fx {
    pub store: RedisStore,
    pub guard: RedisGuard,
}

/// Opens a fresh namespace. An unreachable server fails the test (never skips it).
pub async fn open() -> Fx {
    let (store, guard) = RedisHarness::from_env()
        .open_store()
        .await
        .expect("the Redis test server (DOCKET_TEST_REDIS_URL) must be reachable");
    Fx { store, guard }
}

impl Fx {
    /// The raw content of the namespace.
    pub async fn snapshot(&self) -> String {
        self.guard.snapshot().await.expect("snapshot")
    }
}

/// The fixed time base of every test: 2023-11-14T22:13:20Z, plus `ms` milliseconds.
pub fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000 + ms)
}

pub fn rid(id: &str) -> RunId {
    RunId::new(id).expect("run id")
}

pub fn tenant(id: &str) -> OwnerScope {
    OwnerScope::Tenant(TenantId::new(id).expect("tenant id"))
}

pub fn scope_of(owner: &OwnerScope) -> Scope {
    Scope::from(owner)
}

/// A valid effective document with id `id`; `variant` changes its content (and hash).
pub fn graph_doc(id: &str, variant: u64) -> GraphDocument {
    GraphDocument::from_value(json!({
        "schema_version": 1,
        "id": id,
        "metadata": { "variant": variant }
    }))
    .expect("graph document")
}

pub fn graph_ref_of(doc: &GraphDocument) -> GraphRef {
    GraphRef {
        graph_id: GraphId::new(doc.id.clone()).expect("graph id"),
        graph_hash: graph_hash(doc),
    }
}

/// Saves graph `id` (variant 0) for `owner` and returns its address.
pub async fn publish(store: &RedisStore, owner: &OwnerScope, id: &str) -> GraphRef {
    publish_variant(store, owner, id, 0, t(0)).await
}

pub async fn publish_variant(
    store: &RedisStore,
    owner: &OwnerScope,
    id: &str,
    variant: u64,
    at: Timestamp,
) -> GraphRef {
    let doc = graph_doc(id, variant);
    let graph_ref = graph_ref_of(&doc);
    store
        .save_graph(owner, &graph_ref, &doc, at)
        .await
        .expect("save graph");
    graph_ref
}

/// A freshly initialized running run (`checkpoint_seq` 1, `event_seq` 1).
pub fn initialized_run(id: &str, graph: &GraphRef, at: Timestamp) -> Run {
    let mut input = ValueMap::new();
    input.insert("n".into(), json!(1));
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

/// An event of `run` at `seq`.
pub fn event(run: &Run, seq: u64, at: Timestamp, tag: &str) -> Event {
    let mut payload = ValueMap::new();
    payload.insert("tag".into(), json!(tag));
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

pub fn init_proposal(run: Run, wake_at: Timestamp, now: Timestamp) -> InitProposal {
    InitProposal {
        run,
        checkpoint_type: CheckpointType::RunInitialized,
        wake_at,
        now,
    }
}

/// Initializes run `id` on `graph`, due at `wake_at`, with one event at seq 1.
pub async fn start(
    store: &RedisStore,
    owner: &OwnerScope,
    id: &str,
    graph: &GraphRef,
    wake_at: Timestamp,
) -> Run {
    let run = initialized_run(id, graph, t(0));
    let events = vec![event(&run, 1, t(0), "init")];
    store
        .initialize(owner, init_proposal(run, wake_at, t(0)), events)
        .await
        .expect("initialize")
}

/// Publishes graph `g` for `owner` and starts run `id` due at `t(0)`.
pub async fn start_simple(store: &RedisStore, owner: &OwnerScope, id: &str) -> Run {
    let graph = publish(store, owner, "g").await;
    start(store, owner, id, &graph, t(0)).await
}

/// The next document: `checkpoint_seq + 1`, one more event, `status`, updated at `at`.
pub fn next(run: &Run, status: RunStatus, at: Timestamp) -> Run {
    let mut next = run.clone();
    next.checkpoint_seq += 1;
    next.event_seq += 1;
    next.status = status;
    next.updated_at = Some(at);
    match status {
        RunStatus::Done => {
            next.output = Some(ValueMap::new());
            next.finished_at = Some(at);
        }
        RunStatus::Failed => {
            next.failure = Some(Failure {
                code: "node_failed".into(),
                message: "boom".into(),
                node_id: None,
                details: ValueMap::new(),
            });
            next.finished_at = Some(at);
        }
        RunStatus::Cancelled => next.finished_at = Some(at),
        _ => {}
    }
    next
}

/// The checkpoint event of a `next` document.
pub fn next_event(run: &Run, at: Timestamp) -> Event {
    event(run, run.event_seq, at, "moment")
}

pub fn claimed_commit(
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

pub fn unclaimed_commit(run: Run, wake: ReleaseWake, now: Timestamp) -> UnclaimedCommit {
    let checkpoint_type = if run.status == RunStatus::Cancelled {
        CheckpointType::RunCancelled
    } else {
        CheckpointType::InterruptResolved
    };
    UnclaimedCommit {
        run,
        checkpoint_type,
        wake,
        now,
    }
}

pub fn policy(
    now: Timestamp,
    limit: u32,
    orphan_ttl_ms: u64,
    max_attempts: u32,
    preference: Option<ClaimClass>,
) -> ClaimRequest {
    ClaimRequest {
        policy: Default::default(),
        now,
        limit: NonZeroU32::new(limit).expect("limit"),
        orphan_ttl_ms,
        max_claim_attempts: NonZeroU32::new(max_attempts).expect("max attempts"),
        preference,
    }
}

/// Claims exactly one lease at `now` (TTL 60 s, 5 attempts).
pub async fn claim_one(store: &RedisStore, now: Timestamp) -> ClaimLease {
    let batch = store
        .claim_due(&policy(now, 1, 60_000, 5, None))
        .await
        .expect("claim");
    assert_eq!(batch.poisoned, vec![]);
    assert_eq!(batch.leases.len(), 1, "exactly one lease expected");
    batch.leases.into_iter().next().expect("one lease")
}

/// Commits `run` as its claim holder with one event and returns the new document.
pub async fn commit_as_holder(
    store: &RedisStore,
    run: &Run,
    token: &ClaimToken,
    status: RunStatus,
    schedule: ClaimedSchedule,
    at: Timestamp,
) -> Run {
    let next = next(run, status, at);
    let events = vec![next_event(&next, at)];
    store
        .commit_claimed(
            &Scope::System,
            claimed_commit(next, run.checkpoint_seq, token, schedule, at),
            events,
        )
        .await
        .expect("claimed commit")
}
