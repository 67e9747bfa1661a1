//! What commits do to the schedule, the claim and the counters (`docs/state-machines.md`,
//! “Operational transitions”; scenarios 11 and 14 of `docs/scenarios.md`) and the status matrix.

mod common;

use serde_json::json;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{ClaimToken, EventType, GraphHash, OwnerScope, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

// ---- 14 [TRANSITION-CLAIMED-SCHEDULES] --------------------------------------------------

async fn commit_with_schedule(
    status: RunStatus,
    schedule: ClaimedSchedule,
) -> (MemoryStore, docket_core::model::Run, ClaimToken) {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(&run, status, &lease.claim_token, schedule, t(3));
    let committed = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit");
    (store, committed, lease.claim_token)
}

#[tokio::test]
async fn external_and_terminal_releases_leave_neither_wake_nor_claim() {
    for (status, wake) in [
        (RunStatus::Waiting, ReleaseWake::External),
        (RunStatus::Done, ReleaseWake::Terminal),
        (RunStatus::Failed, ReleaseWake::Terminal),
        (RunStatus::Cancelled, ReleaseWake::Terminal),
    ] {
        let (store, run, _) = commit_with_schedule(status, ClaimedSchedule::Release(wake)).await;
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        assert_eq!(info.run.status, status);
        assert_eq!(info.run.checkpoint_seq, 2);
        assert_eq!((info.claimed_at, info.wake_at), (None, None), "{status}");
    }
}

#[tokio::test]
async fn schedules_that_do_not_fit_the_status_are_invalid() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let cases = [
        (RunStatus::Waiting, ClaimedSchedule::RetainClaim),
        (
            RunStatus::Done,
            ClaimedSchedule::Release(ReleaseWake::Immediate),
        ),
        (
            RunStatus::Waiting,
            ClaimedSchedule::Release(ReleaseWake::At(t(5))),
        ),
        (
            RunStatus::Running,
            ClaimedSchedule::Release(ReleaseWake::External),
        ),
        (
            RunStatus::Running,
            ClaimedSchedule::Release(ReleaseWake::Terminal),
        ),
        (
            RunStatus::Cancelled,
            ClaimedSchedule::Release(ReleaseWake::External),
        ),
    ];
    for (status, schedule) in cases {
        let (proposal, events) = claimed(&run, status, &lease.claim_token, schedule, t(3));
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.commit_claimed(&Scope::System, proposal, events),
        )
        .await;
    }
}

#[tokio::test]
async fn a_status_change_outside_the_matrix_is_invalid_once_the_fences_match() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Waiting,
        &lease.claim_token,
        ClaimedSchedule::Release(ReleaseWake::External),
        t(3),
    );
    let waiting = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("running → waiting");
    // waiting → done is not in the matrix (only running or cancelled may follow waiting).
    let (proposal, events) = unclaimed(&waiting, RunStatus::Done, ReleaseWake::Terminal, t(4));
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_unclaimed(&Scope::System, 2, proposal, events),
    )
    .await;
    // ...but a stale proposal with the same status change is a stale fence, not invalid.
    let (proposal, events) = unclaimed(&run, RunStatus::Done, ReleaseWake::Terminal, t(4));
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_unclaimed(&Scope::System, 1, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn terminal_runs_are_absorbing() {
    let (store, run, _) = commit_with_schedule(
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
    )
    .await;
    for (status, wake) in [
        (RunStatus::Running, ReleaseWake::Immediate),
        (RunStatus::Cancelled, ReleaseWake::Terminal),
        (RunStatus::Done, ReleaseWake::Terminal),
    ] {
        let (proposal, events) = unclaimed(&run, status, wake, t(9));
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.commit_unclaimed(&Scope::System, 2, proposal, events),
        )
        .await;
    }
}

// ---- 11 [TRANSITION-UNCLAIMED-CAS] ------------------------------------------------------

#[tokio::test]
async fn unclaimed_cas_sequence_matches_the_shared_scenario() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let (proposal, events) = unclaimed(&run, RunStatus::Running, ReleaseWake::Immediate, t(3));
    let run2 = store
        .commit_unclaimed(&Scope::Tenantless, 1, proposal.clone(), events.clone())
        .await
        .expect("seq 2");
    // Repeating, or a different proposal at the same expected seq: stale.
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_unclaimed(&Scope::Tenantless, 1, proposal, events),
    )
    .await;
    let (other, other_events) = unclaimed(&run, RunStatus::Cancelled, ReleaseWake::Terminal, t(4));
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_unclaimed(&Scope::Tenantless, 1, other, other_events),
    )
    .await;
    // The next seq commits with its event.
    let (proposal, events) = unclaimed(&run2, RunStatus::Running, ReleaseWake::Immediate, t(5));
    let run3 = store
        .commit_unclaimed(&Scope::Tenantless, 2, proposal, events)
        .await
        .expect("seq 3");
    assert_eq!(run3.checkpoint_seq, 3);
    assert_eq!(
        store
            .fetch_event(&Scope::Tenantless, &run.id, 4)
            .await
            .expect("event 4")
            .timestamp,
        t(5)
    );
    // Wrong tenant: not found, no event.
    let (proposal, events) = unclaimed(&run3, RunStatus::Running, ReleaseWake::Immediate, t(6));
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.commit_unclaimed(&tenant_scope("a"), 3, proposal.clone(), events.clone()),
    )
    .await;
    // Graph-hash rebind: invalid.
    let mut rebound = proposal.clone();
    rebound.run.graph_hash = GraphHash::new("1".repeat(64)).expect("hash");
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_unclaimed(&Scope::Tenantless, 3, rebound, events.clone()),
    )
    .await;
    // Different content at an existing event seq: event conflict.
    let mut conflicting = events.clone();
    let mut contradiction = event(&run.id, 4, EventType::NodeFailed, t(6));
    contradiction.payload = map(json!({ "attempt": 1 }));
    conflicting.push(contradiction);
    assert_rejected(
        &store,
        StoreErrorKind::EventConflict,
        store.commit_unclaimed(&Scope::Tenantless, 3, proposal, conflicting),
    )
    .await;
    let stored = store
        .fetch_run(&Scope::Tenantless, &run.id)
        .await
        .expect("fetch");
    assert_eq!(stored.checkpoint_seq, 3);
}
