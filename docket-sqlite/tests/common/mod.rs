//! Fixtures shared by the integration tests: a store in a temp dir with one published graph,
//! run documents and events built by hand, and the "rejected writes change nothing" check.

#![allow(dead_code, missing_docs)]

use std::future::Future;
use std::num::NonZeroU32;

use docket_core::graph::{graph_hash, GraphDocument};
use docket_core::model::{
    CheckpointType, ClaimToken, Event, EventType, Failure, GraphId, GraphRef, OwnerScope, Run,
    RunId, RunStatus, Scope, TenantId, Timestamp, ValueMap,
};
use docket_core::store::{
    ClaimLease, ClaimRequest, ClaimedCommit, ClaimedSchedule, GraphStore, InitProposal,
    ReleaseWake, RunStore, StoreError, UnclaimedCommit,
};
use docket_sqlite::testing::{raw_snapshot, SqliteGuard};
use docket_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

/// The base instant of every test (2023-11-14T22:13:20Z).
pub const T0_MS: i64 = 1_700_000_000_000;

/// `T0 + ms`.
pub fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0_MS + ms)
}

pub fn rid(id: &str) -> RunId {
    RunId::new(id).expect("test run id")
}

pub fn tenant(id: &str) -> OwnerScope {
    OwnerScope::Tenant(TenantId::new(id).expect("test tenant id"))
}

pub fn graph_doc(id: &str, description: &str) -> GraphDocument {
    let mut doc = GraphDocument::from_json(&json!({ "schema_version": 1, "id": id }).to_string())
        .expect("test graph document");
    doc.description = Some(description.to_owned());
    doc
}

pub fn graph_ref_of(doc: &GraphDocument) -> GraphRef {
    GraphRef {
        graph_id: GraphId::new(doc.id.clone()).expect("graph id"),
        graph_hash: graph_hash(doc),
    }
}

/// A freshly initialized run (`running`, `checkpoint_seq` 1, two events).
pub fn initial_run(id: &str, graph: &GraphRef, at: Timestamp) -> Run {
    let mut input = ValueMap::new();
    input.insert("amount".into(), json!(12.5));
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
    run.event_seq = 2;
    run
}

pub fn event(run: &Run, seq: u64, event_type: EventType, at: Timestamp) -> Event {
    let mut payload = ValueMap::new();
    payload.insert("n".into(), json!(seq));
    Event {
        run_id: run.id.clone(),
        seq,
        event_type,
        step: run.step,
        node_id: None,
        channel_id: None,
        task_id: None,
        timestamp: at,
        payload,
        metadata: ValueMap::new(),
    }
}

pub fn init_events(run: &Run) -> Vec<Event> {
    let at = run.started_at.expect("started");
    vec![
        event(run, 1, EventType::RunInitialized, at),
        event(run, 2, EventType::CheckpointCommitted, at),
    ]
}

pub fn init_proposal(run: &Run, wake_at: Timestamp, now: Timestamp) -> InitProposal {
    InitProposal {
        run: run.clone(),
        checkpoint_type: CheckpointType::RunInitialized,
        wake_at,
        now,
    }
}

/// The next moment of `run`: seq + 1, one checkpoint event, `updated_at = at`, the given
/// status (terminal statuses get `finished_at`, `failed` a failure).
pub fn advance(run: &Run, status: RunStatus, at: Timestamp) -> (Run, Vec<Event>) {
    let mut next = run.clone();
    next.status = status;
    next.checkpoint_seq += 1;
    next.event_seq += 1;
    next.updated_at = Some(at);
    next.finished_at = status.is_terminal().then_some(at);
    next.output = (status == RunStatus::Done).then(ValueMap::new);
    next.failure = (status == RunStatus::Failed).then(|| Failure {
        code: "node_failed".into(),
        message: "boom".into(),
        node_id: None,
        details: ValueMap::new(),
    });
    let events = vec![event(
        &next,
        next.event_seq,
        EventType::CheckpointCommitted,
        at,
    )];
    (next, events)
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

/// A store in a fresh temp dir with the tenantless graph `g` published at `T0`.
pub struct Fx {
    pub store: SqliteStore,
    pub guard: SqliteGuard,
    pub graph: GraphRef,
    pub doc: GraphDocument,
}

pub async fn fx() -> Fx {
    fx_with(SqliteOptions::default()).await
}

pub async fn fx_with(options: SqliteOptions) -> Fx {
    let guard = SqliteGuard::new().expect("temp dir");
    let store = SqliteStore::open(options.with_path(guard.path()))
        .await
        .expect("open store");
    let doc = graph_doc("g", "v1");
    let graph = graph_ref_of(&doc);
    store
        .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(0))
        .await
        .expect("save graph");
    Fx {
        store,
        guard,
        graph,
        doc,
    }
}

impl Fx {
    /// Every stored row, rendered deterministically.
    pub fn snapshot(&self) -> String {
        raw_snapshot(self.guard.path()).expect("raw snapshot")
    }

    /// Publishes graph `g` for `owner` too.
    pub async fn publish_for(&self, owner: &OwnerScope) {
        self.store
            .save_graph(owner, &self.graph, &self.doc, t(0))
            .await
            .expect("save graph");
    }

    /// Initializes run `id` (tenantless) started at `T0`, due at `wake_at`.
    pub async fn start(&self, id: &str, wake_at: Timestamp) -> Run {
        self.start_in(&OwnerScope::Tenantless, id, wake_at).await
    }

    pub async fn start_in(&self, owner: &OwnerScope, id: &str, wake_at: Timestamp) -> Run {
        let run = initial_run(id, &self.graph, t(0));
        self.store
            .initialize(owner, init_proposal(&run, wake_at, t(0)), init_events(&run))
            .await
            .expect("initialize")
    }

    /// Claims exactly one run at `now` and returns its lease.
    pub async fn claim_one(&self, now: Timestamp) -> ClaimLease {
        let batch = self.store.claim_due(&policy(now, 1)).await.expect("claim");
        assert_eq!(batch.leases.len(), 1, "expected one lease: {batch:?}");
        batch.leases.into_iter().next().expect("one lease")
    }

    /// Commits the next moment of `run_id` under `lease` with `schedule`.
    pub async fn commit_next(
        &self,
        lease: &ClaimLease,
        status: RunStatus,
        schedule: ClaimedSchedule,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        let current = self
            .store
            .fetch_run(&Scope::System, &lease.run_id)
            .await
            .expect("fetch");
        let (next, events) = advance(&current, status, now);
        self.store
            .commit_claimed(
                &Scope::System,
                claimed(
                    next,
                    current.checkpoint_seq,
                    &lease.claim_token,
                    schedule,
                    now,
                ),
                events,
            )
            .await
    }

    /// Awaits `write`, expects it to fail, and proves the store is byte-identical afterwards.
    pub async fn rejected<T: std::fmt::Debug>(
        &self,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> StoreError {
        let before = self.snapshot();
        let error = write.await.expect_err("the write should be rejected");
        assert_eq!(
            before,
            self.snapshot(),
            "a rejected write changed the store"
        );
        error
    }

    /// Awaits `write` and proves it left the store byte-identical (success-shaped no-ops).
    pub async fn unchanged<T>(&self, write: impl Future<Output = T>) -> T {
        let before = self.snapshot();
        let out = write.await;
        assert_eq!(before, self.snapshot(), "a no-op write changed the store");
        out
    }
}
