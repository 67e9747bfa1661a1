//! Fixtures shared by the memory-store and lifecycle tests: ids, times, graphs, runs, events,
//! moments built by hand (the real runtime is not needed to exercise storage), and helpers
//! that prove a rejected write left the store byte-identical.

#![allow(dead_code)]

pub mod scripted;

use std::future::Future;
use std::num::NonZeroU32;
use std::time::Duration;

use serde_json::{json, Value};

use docket_core::graph::{graph_hash, GraphDocument};
use docket_core::memory::MemoryStore;
use docket_core::model::{
    CheckpointType, ClaimToken, Event, EventType, Failure, GraphRef, InterruptState,
    InterruptStatus, OwnerScope, Run, RunId, RunStatus, Scope, TenantId, Timestamp, ValueMap,
};
use docket_core::runtime::{Disposition, Moment, Mutation, ParkKind, ParkReason};
use docket_core::store::{
    ClaimLease, ClaimRequest, ClaimedCommit, ClaimedSchedule, GraphStore, InitProposal,
    ReleaseWake, RunStore, StoreError, StoreErrorKind, UnclaimedCommit,
};

/// A fixed origin so test times read as small offsets.
pub const ORIGIN_MS: i64 = 1_800_000_000_000;

/// `ORIGIN + ms`.
pub fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ORIGIN_MS + ms)
}

pub fn rid(id: &str) -> RunId {
    RunId::new(id).expect("test run id")
}

pub fn tenant(id: &str) -> OwnerScope {
    OwnerScope::Tenant(TenantId::new(id).expect("test tenant id"))
}

pub fn tenant_scope(id: &str) -> Scope {
    Scope::from(tenant(id))
}

pub fn map(value: Value) -> ValueMap {
    match value {
        Value::Object(map) => map,
        other => panic!("test map expected, got {other}"),
    }
}

/// A minimal effective document; `version` changes its content (and so its hash).
pub fn graph_doc(id: &str, version: u64) -> GraphDocument {
    GraphDocument::from_value(json!({
        "schema_version": 1,
        "id": id,
        "metadata": { "version": version },
    }))
    .expect("test graph document")
}

pub fn graph_ref_of(doc: &GraphDocument) -> GraphRef {
    GraphRef {
        graph_id: docket_core::model::GraphId::new(doc.id.clone()).expect("graph id"),
        graph_hash: graph_hash(doc),
    }
}

/// Saves version `version` of graph `id` for `owner` at `now`.
pub async fn publish(
    store: &MemoryStore,
    owner: &OwnerScope,
    id: &str,
    version: u64,
    now: Timestamp,
) -> GraphRef {
    let doc = graph_doc(id, version);
    let graph_ref = graph_ref_of(&doc);
    store
        .save_graph(owner, &graph_ref, &doc, now)
        .await
        .expect("save graph");
    graph_ref
}

/// A store with graph `g` (version 1) published tenantless at `t(0)`.
pub async fn store_with_graph() -> (MemoryStore, GraphRef) {
    let store = MemoryStore::new();
    let graph = publish(&store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    (store, graph)
}

pub fn event(run_id: &RunId, seq: u64, event_type: EventType, at: Timestamp) -> Event {
    Event {
        run_id: run_id.clone(),
        seq,
        event_type,
        step: 0,
        node_id: None,
        channel_id: None,
        task_id: None,
        timestamp: at,
        payload: ValueMap::new(),
        metadata: ValueMap::new(),
    }
}

/// The `checkpoint_committed` event closing a moment of `run` (its last assigned seq).
pub fn checkpoint_event(
    run: &Run,
    checkpoint_type: CheckpointType,
    disposition: Disposition,
    at: Timestamp,
) -> Event {
    let mut e = event(&run.id, run.event_seq, EventType::CheckpointCommitted, at);
    e.step = run.step;
    e.metadata = envelope(run, checkpoint_type, disposition);
    e
}

pub fn envelope(run: &Run, checkpoint_type: CheckpointType, disposition: Disposition) -> ValueMap {
    let park_reason = match disposition {
        Disposition::Continue => Value::Null,
        Disposition::Park { reason, .. } => Value::from(reason.as_str()),
    };
    map(json!({
        "checkpoint_seq": run.checkpoint_seq,
        "checkpoint_type": checkpoint_type.as_str(),
        "graph_step": run.step,
        "wake_disposition": disposition.wake_disposition(),
        "park_reason": park_reason,
        "active_superstep": null,
        "node_attempts": [],
    }))
}

/// A freshly initialized running run: seq 1, events 1 (`run_initialized`) and 2 (checkpoint).
pub fn initialized_run(id: &RunId, graph: &GraphRef, at: Timestamp) -> Run {
    let mut run = Run::new_created(
        id.clone(),
        graph.graph_id.clone(),
        graph.graph_hash.clone(),
        map(json!({ "amount": 3 })),
        ValueMap::new(),
    );
    run.status = RunStatus::Running;
    run.started_at = Some(at);
    run.updated_at = Some(at);
    run.checkpoint_seq = 1;
    run.event_seq = 2;
    run
}

/// The two events of [`initialized_run`].
pub fn init_events(run: &Run, at: Timestamp) -> Vec<Event> {
    let mut first = event(&run.id, 1, EventType::RunInitialized, at);
    first.payload = map(json!({ "inputs": ["amount"] }));
    vec![
        first,
        checkpoint_event(
            run,
            CheckpointType::RunInitialized,
            Disposition::Continue,
            at,
        ),
    ]
}

/// The initialization moment of a run (disposition `continue`).
pub fn init_moment(id: &RunId, graph: &GraphRef, at: Timestamp) -> Moment {
    let run = initialized_run(id, graph, at);
    let events = init_events(&run, at);
    moment(
        run,
        events,
        CheckpointType::RunInitialized,
        Disposition::Continue,
        at,
    )
}

pub fn moment(
    run: Run,
    events: Vec<Event>,
    checkpoint_type: CheckpointType,
    disposition: Disposition,
    at: Timestamp,
) -> Moment {
    let checkpoint_metadata = envelope(&run, checkpoint_type, disposition);
    Moment {
        run,
        events,
        checkpoint_type,
        checkpoint_metadata,
        disposition,
        proposed_at: at,
        pending_attempts: Vec::new(),
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

/// Initializes run `id` on `graph` for `owner` at `at` (wake due at `at`).
pub async fn start_run(
    store: &MemoryStore,
    owner: &OwnerScope,
    graph: &GraphRef,
    id: &str,
    at: Timestamp,
) -> Run {
    let run = initialized_run(&rid(id), graph, at);
    let events = init_events(&run, at);
    store
        .initialize(owner, init_proposal(run, at, at), events)
        .await
        .expect("initialize")
}

/// The next document after `prev`: seq + 1, one more event, `updated_at = at`, and the fields
/// a durable `status` requires.
pub fn next_run(prev: &Run, status: RunStatus, at: Timestamp) -> Run {
    let mut run = prev.clone();
    run.status = status;
    run.checkpoint_seq = prev.checkpoint_seq + 1;
    run.event_seq = prev.event_seq + 1;
    run.updated_at = Some(at);
    run.output = (status == RunStatus::Done).then(|| map(json!({ "result": 1 })));
    run.failure = (status == RunStatus::Failed).then(|| Failure {
        code: "node_failed".into(),
        message: "boom".into(),
        node_id: Some("a".into()),
        details: ValueMap::new(),
    });
    run.finished_at = status.is_terminal().then_some(at);
    run
}

/// The checkpoint type that usually produces `status`.
pub fn checkpoint_type_for(status: RunStatus) -> CheckpointType {
    match status {
        RunStatus::Waiting => CheckpointType::InterruptRequested,
        RunStatus::Done => CheckpointType::RunCompleted,
        RunStatus::Failed => CheckpointType::RunFailed,
        RunStatus::Cancelled => CheckpointType::RunCancelled,
        RunStatus::Running | RunStatus::Created => CheckpointType::StepCommitted,
    }
}

/// The disposition that fits `status` (`continue` for running).
pub fn disposition_for(status: RunStatus) -> Disposition {
    let park = |kind, reason| Disposition::Park { kind, reason };
    match status {
        RunStatus::Waiting => park(ParkKind::External, ParkReason::AwaitingInterrupts),
        RunStatus::Done => park(ParkKind::Terminal, ParkReason::RunCompleted),
        RunStatus::Failed => park(ParkKind::Terminal, ParkReason::RunFailed),
        RunStatus::Cancelled => park(ParkKind::Terminal, ParkReason::RunCancelled),
        RunStatus::Running | RunStatus::Created => Disposition::Continue,
    }
}

/// A one-event moment after `prev` (just its checkpoint event).
pub fn next_moment(
    prev: &Run,
    status: RunStatus,
    disposition: Disposition,
    at: Timestamp,
) -> Moment {
    let run = next_run(prev, status, at);
    let checkpoint_type = checkpoint_type_for(status);
    let events = vec![checkpoint_event(&run, checkpoint_type, disposition, at)];
    moment(run, events, checkpoint_type, disposition, at)
}

/// A claimed commit of `moment` built on `prev_seq`.
pub fn claimed_commit(moment: &Moment, token: &ClaimToken, now: Timestamp) -> ClaimedCommit {
    ClaimedCommit {
        run: moment.run.clone(),
        expected_seq: moment.run.checkpoint_seq - 1,
        claim_token: token.clone(),
        checkpoint_type: moment.checkpoint_type,
        schedule: moment.disposition.claimed_schedule(),
        now,
    }
}

/// An unclaimed commit of `moment`.
pub fn unclaimed_commit(moment: &Moment, now: Timestamp) -> UnclaimedCommit {
    UnclaimedCommit {
        run: moment.run.clone(),
        checkpoint_type: moment.checkpoint_type,
        wake: moment.disposition.unclaimed_wake(),
        now,
    }
}

/// A plain claimed commit of `prev` → `status` with `schedule`.
pub fn claimed(
    prev: &Run,
    status: RunStatus,
    token: &ClaimToken,
    schedule: ClaimedSchedule,
    now: Timestamp,
) -> (ClaimedCommit, Vec<Event>) {
    let m = next_moment(prev, status, disposition_for(status), now);
    let mut proposal = claimed_commit(&m, token, now);
    proposal.schedule = schedule;
    (proposal, m.events)
}

/// A plain unclaimed commit of `prev` → `status` with `wake`.
pub fn unclaimed(
    prev: &Run,
    status: RunStatus,
    wake: ReleaseWake,
    now: Timestamp,
) -> (UnclaimedCommit, Vec<Event>) {
    let m = next_moment(prev, status, disposition_for(status), now);
    let mut proposal = unclaimed_commit(&m, now);
    proposal.wake = wake;
    (proposal, m.events)
}

pub fn claim_policy(now: Timestamp, limit: u32) -> ClaimRequest {
    ClaimRequest {
        policy: Default::default(),
        now,
        limit: NonZeroU32::new(limit).expect("nonzero limit"),
        orphan_ttl_ms: 60_000,
        max_claim_attempts: NonZeroU32::new(5).expect("nonzero"),
        preference: None,
    }
}

/// Claims exactly one run at `now` and returns its lease.
pub async fn claim_one(store: &MemoryStore, now: Timestamp) -> ClaimLease {
    let batch = store
        .claim_due(&claim_policy(now, 1))
        .await
        .expect("claim_due");
    assert!(batch.poisoned.is_empty(), "unexpected poison: {batch:?}");
    let mut leases = batch.leases;
    assert_eq!(leases.len(), 1, "expected one lease");
    leases.remove(0)
}

/// Awaits `op`, asserts it failed with `kind`, and asserts the store is byte-identical to
/// before the call. Returns the error for further checks.
pub async fn assert_rejected<T, F>(store: &MemoryStore, kind: StoreErrorKind, op: F) -> StoreError
where
    T: std::fmt::Debug,
    F: Future<Output = Result<T, StoreError>>,
{
    let before = store.raw_snapshot();
    let result = op.await;
    let error = match result {
        Ok(value) => panic!("expected {kind:?}, got Ok({value:?})"),
        Err(error) => error,
    };
    assert_eq!(error.kind(), kind, "unexpected error: {error}");
    assert_eq!(
        store.raw_snapshot(),
        before,
        "a rejected write changed the store"
    );
    error
}

/// Awaits `op` and asserts it succeeded without changing a single stored byte.
pub async fn assert_no_change<T, F>(store: &MemoryStore, op: F) -> T
where
    F: Future<Output = Result<T, StoreError>>,
{
    let before = store.raw_snapshot();
    let value = match op.await {
        Ok(value) => value,
        Err(error) => panic!("expected success, got {error}"),
    };
    assert_eq!(store.raw_snapshot(), before, "the store changed");
    value
}

/// Polls `condition` every few milliseconds until it holds or `deadline` passes.
pub async fn eventually(deadline: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let until = tokio::time::Instant::now() + deadline;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Open interrupt `id` registered by node `ask` at `at`.
pub fn open_interrupt(id: &str, at: Timestamp) -> InterruptState {
    InterruptState {
        id: id.into(),
        node_id: "ask".into(),
        status: InterruptStatus::Open,
        resume_channel: "approved".into(),
        schema: None,
        created_at: at,
        resolved_at: None,
        metadata: ValueMap::new(),
    }
}

/// A `cancel_run`-shaped pure mutation (`docs/state-machines.md`, “Run status”): cancelled →
/// unchanged; done/failed → refused; running/waiting → a `run_cancelled` moment at `at`.
pub fn cancel_mutation(run: &Run, at: Timestamp) -> Result<Mutation, &'static str> {
    match run.status {
        RunStatus::Cancelled => Ok(Mutation::Unchanged(Box::new(run.clone()))),
        RunStatus::Done | RunStatus::Failed => Err("inactive_run"),
        RunStatus::Created => Err("invalid_run"),
        RunStatus::Running | RunStatus::Waiting => {
            let mut next = next_run(run, RunStatus::Cancelled, at);
            next.event_seq = run.event_seq + 2;
            let disposition = disposition_for(RunStatus::Cancelled);
            let events = vec![
                event(&run.id, run.event_seq + 1, EventType::RunCancelled, at),
                checkpoint_event(&next, CheckpointType::RunCancelled, disposition, at),
            ];
            Ok(Mutation::Commit(Box::new(moment(
                next,
                events,
                CheckpointType::RunCancelled,
                disposition,
                at,
            ))))
        }
    }
}

/// A `resolve_interrupt`-shaped pure mutation: the open interrupt `id` becomes resolved, the
/// run running, woken immediately.
pub fn resolve_mutation(run: &Run, id: &str, at: Timestamp) -> Result<Mutation, &'static str> {
    if run.status.is_terminal() {
        return Err("inactive_run");
    }
    let Some(interrupt) = run.interrupts.get(id) else {
        return Err("not_found");
    };
    if interrupt.status != InterruptStatus::Open {
        return Err("already_resolved");
    }
    let mut next = next_run(run, RunStatus::Running, at);
    next.event_seq = run.event_seq + 3;
    if let Some(state) = next.interrupts.get_mut(id) {
        state.status = InterruptStatus::Resolved;
        state.resolved_at = Some(at);
    }
    let disposition = Disposition::Park {
        kind: ParkKind::Immediate,
        reason: ParkReason::InterruptResolved,
    };
    let mut resolved = event(&run.id, run.event_seq + 1, EventType::InterruptResolved, at);
    resolved.node_id = Some(interrupt.node_id.clone());
    resolved.payload = map(json!({ "interrupt_id": id, "resume_channel": "approved" }));
    let mut updated = event(&run.id, run.event_seq + 2, EventType::ChannelUpdated, at);
    updated.channel_id = Some("state:approved".into());
    updated.payload = map(json!({ "writers": [interrupt.node_id] }));
    let events = vec![
        resolved,
        updated,
        checkpoint_event(&next, CheckpointType::InterruptResolved, disposition, at),
    ];
    Ok(Mutation::Commit(Box::new(moment(
        next,
        events,
        CheckpointType::InterruptResolved,
        disposition,
        at,
    ))))
}
