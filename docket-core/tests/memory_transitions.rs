//! The three transitions of the memory store (spec §4.1; §9.1 scenarios 7–15, 138, 139;
//! reliability §8 A and C). Every rejected write is checked byte-for-byte against the store.

mod common;

use std::sync::Arc;

use serde_json::json;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{
    CheckpointType, ClaimToken, EventType, GraphHash, GraphId, OwnerScope, RunStatus, Scope,
    MAX_SEQ,
};
use docket_core::store::{Backend, ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

// ---- 1 [CONTRACT-CALLBACK-COMPLETENESS] -------------------------------------------------

#[tokio::test]
async fn the_memory_store_is_a_complete_backend_with_wakeups() {
    let backend: Arc<dyn Backend> = Arc::new(MemoryStore::new());
    assert!(backend.wakeups().is_some());
    let page = backend
        .list_runs(
            &Scope::System,
            &docket_core::model::RunQuery {
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert!(page.runs.is_empty() && !page.has_more);
}

// ---- 7 [TRANSITION-INITIALIZE-TENANCY] --------------------------------------------------

#[tokio::test]
async fn initialize_succeeds_once_and_stores_run_events_and_schedule() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(10)).await;
    assert_eq!(run.checkpoint_seq, 1);
    let info = store
        .inspect_run(&Scope::Tenantless, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, run);
    assert_eq!(info.owner, OwnerScope::Tenantless);
    assert_eq!(info.wake_at, Some(t(10)));
    assert_eq!(
        (info.claimed_at, info.claim_attempts, info.claim_abandons),
        (None, 0, 0)
    );
    assert!(info.poison.is_none());
    let latest = store
        .fetch_latest_event(&Scope::Tenantless, &run.id)
        .await
        .expect("latest")
        .expect("an event");
    assert_eq!(latest.seq, 2);
    assert_eq!(latest.event_type, EventType::CheckpointCommitted);
}

#[tokio::test]
async fn reinitializing_a_run_id_is_a_conflict_with_same_or_different_content() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(10)).await;
    let same = initialized_run(&run.id, &graph, t(10));
    let events = init_events(&same, t(10));
    assert_rejected(
        &store,
        StoreErrorKind::Conflict,
        store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(same, t(10), t(10)),
            events,
        ),
    )
    .await;
    let mut different = initialized_run(&run.id, &graph, t(20));
    different.input = map(json!({ "amount": 99 }));
    let events = init_events(&different, t(20));
    assert_rejected(
        &store,
        StoreErrorKind::Conflict,
        store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(different, t(20), t(20)),
            events,
        ),
    )
    .await;
}

#[tokio::test]
async fn initialize_on_an_unknown_graph_hash_is_not_found_and_stores_nothing() {
    let (store, graph) = store_with_graph().await;
    let mut forged = graph.clone();
    forged.graph_hash = GraphHash::new("f".repeat(64)).expect("hash");
    let run = initialized_run(&rid("r1"), &forged, t(1));
    let events = init_events(&run, t(1));
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(run, t(1), t(1)),
            events,
        ),
    )
    .await;
}

#[tokio::test]
async fn initialize_needs_the_graph_in_the_owners_own_scope() {
    let (store, graph) = store_with_graph().await;
    let run = initialized_run(&rid("r1"), &graph, t(1));
    let events = init_events(&run, t(1));
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.initialize(&tenant("a"), init_proposal(run, t(1), t(1)), events),
    )
    .await;
}

#[tokio::test]
async fn a_run_id_taken_by_one_tenant_conflicts_for_another() {
    let store = MemoryStore::new();
    let graph_a = publish(&store, &tenant("a"), "g", 1, t(0)).await;
    let graph_b = publish(&store, &tenant("b"), "g", 1, t(0)).await;
    start_run(&store, &tenant("a"), &graph_a, "shared", t(1)).await;
    let run = initialized_run(&rid("shared"), &graph_b, t(2));
    let events = init_events(&run, t(2));
    assert_rejected(
        &store,
        StoreErrorKind::Conflict,
        store.initialize(&tenant("b"), init_proposal(run, t(2), t(2)), events),
    )
    .await;
}

// ---- 8 / 139 [TRANSITION-INITIALIZE-REJECTIONS] -----------------------------------------

#[tokio::test]
async fn initialize_accepts_only_a_running_initialized_run() {
    let (store, graph) = store_with_graph().await;
    for status in [
        RunStatus::Created,
        RunStatus::Waiting,
        RunStatus::Done,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ] {
        let mut run = initialized_run(&rid("r1"), &graph, t(1));
        run.status = status;
        run.finished_at = status.is_terminal().then_some(t(1));
        let events = init_events(&run, t(1));
        let error = assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.initialize(
                &OwnerScope::Tenantless,
                init_proposal(run, t(1), t(1)),
                events,
            ),
        )
        .await;
        assert!(
            error.to_string().contains("running") || status == RunStatus::Created,
            "{error}"
        );
    }
}

#[tokio::test]
async fn initialize_rejects_seq_zero_missing_updated_at_and_wrong_checkpoint_types() {
    let (store, graph) = store_with_graph().await;
    let mut zero = initialized_run(&rid("r1"), &graph, t(1));
    zero.checkpoint_seq = 0;
    let mut no_updated = initialized_run(&rid("r1"), &graph, t(1));
    no_updated.updated_at = None;
    for run in [zero, no_updated] {
        let events = init_events(&run, t(1));
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.initialize(
                &OwnerScope::Tenantless,
                init_proposal(run, t(1), t(1)),
                events,
            ),
        )
        .await;
    }
    for checkpoint_type in CheckpointType::ALL
        .iter()
        .copied()
        .filter(|c| *c != CheckpointType::RunInitialized)
    {
        let run = initialized_run(&rid("r1"), &graph, t(1));
        let events = init_events(&run, t(1));
        let mut proposal = init_proposal(run, t(1), t(1));
        proposal.checkpoint_type = checkpoint_type;
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.initialize(&OwnerScope::Tenantless, proposal, events),
        )
        .await;
    }
}

#[tokio::test]
async fn a_failed_run_without_its_failure_payload_is_rejected() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (mut proposal, events) = claimed(
        &run,
        RunStatus::Failed,
        &lease.claim_token,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(3),
    );
    proposal.run.failure = None;
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
}

// ---- 9 [TRANSITION-CLAIMED-FENCES] ------------------------------------------------------

#[tokio::test]
async fn a_claimed_commit_accepts_an_identical_already_stored_event() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let stored = store
        .fetch_event(&Scope::System, &run.id, 2)
        .await
        .expect("stored checkpoint");
    let (proposal, mut events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    events.insert(0, stored);
    let committed = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit");
    assert_eq!(committed.checkpoint_seq, 2);
    let latest = store
        .fetch_latest_event(&Scope::System, &run.id)
        .await
        .expect("latest")
        .expect("event");
    assert_eq!(latest.seq, 3);
}

#[tokio::test]
async fn replaying_a_committed_claimed_proposal_is_stale_and_changes_nothing() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    store
        .commit_claimed(&Scope::System, proposal.clone(), events.clone())
        .await
        .expect("first commit");
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn a_wrong_token_is_stale_and_stores_neither_run_nor_event() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &ClaimToken::mint(),
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    assert!(matches!(
        store.fetch_event(&Scope::System, &run.id, 3).await,
        Err(e) if e.kind() == StoreErrorKind::NotFound
    ));
}

#[tokio::test]
async fn a_claimed_commit_that_changes_identity_is_an_invalid_transition() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (mut proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    proposal.run.graph_hash = GraphHash::new("0".repeat(64)).expect("hash");
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn a_seq_skip_is_an_invalid_transition() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (mut proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    proposal.run.checkpoint_seq = proposal.expected_seq + 3;
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn a_fresh_claimed_commit_stores_its_event_for_fetch_and_latest() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    let expected = events[0].clone();
    store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit");
    let fetched = store
        .fetch_event(&Scope::Tenantless, &run.id, 3)
        .await
        .expect("fetch");
    assert_eq!(fetched, expected);
    let latest = store
        .fetch_latest_event(&Scope::Tenantless, &run.id)
        .await
        .expect("latest");
    assert_eq!(latest, Some(expected));
}

// ---- reliability §8 A 1–6 --------------------------------------------------------------

#[tokio::test]
async fn a_current_commit_advances_the_seq_by_one_and_reads_back_exactly() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    let proposed = proposal.run.clone();
    let committed = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit");
    assert_eq!(committed.checkpoint_seq, run.checkpoint_seq + 1);
    assert_eq!(committed, proposed);
    let read = store
        .fetch_run(&Scope::Tenantless, &run.id)
        .await
        .expect("fetch");
    assert_eq!(read, proposed);
}

#[tokio::test]
async fn commits_built_on_a_past_or_future_seq_are_stale() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    let run2 = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("seq 2");
    // Built on seq 1 (the past) and on seq 3 (the future) while the run sits at seq 2.
    for base in [&run, &next_run(&run2, RunStatus::Running, t(4))] {
        let (proposal, events) = claimed(
            base,
            RunStatus::Running,
            &lease.claim_token,
            ClaimedSchedule::RetainClaim,
            t(5),
        );
        assert_rejected(
            &store,
            StoreErrorKind::StaleCheckpoint,
            store.commit_claimed(&Scope::System, proposal, events),
        )
        .await;
    }
}

#[tokio::test]
async fn a_superseded_token_is_stale() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let first = claim_one(&store, t(2)).await;
    store
        .release_claim(&run.id, &first.claim_token, t(3))
        .await
        .expect("release");
    let second = claim_one(&store, t(4)).await;
    assert_ne!(first.claim_token, second.claim_token);
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &first.claim_token,
        ClaimedSchedule::RetainClaim,
        t(5),
    );
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn a_claimed_commit_on_an_unclaimed_run_is_stale_whatever_the_token() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    for token in [
        ClaimToken::mint(),
        ClaimToken::new("never-issued").expect("token"),
    ] {
        let (proposal, events) = claimed(
            &run,
            RunStatus::Running,
            &token,
            ClaimedSchedule::RetainClaim,
            t(5),
        );
        assert_rejected(
            &store,
            StoreErrorKind::StaleCheckpoint,
            store.commit_claimed(&Scope::System, proposal, events),
        )
        .await;
    }
}

// ---- 13 [TRANSITION-CLAIMED-TENANCY-IDENTITY] -------------------------------------------

#[tokio::test]
async fn a_well_formed_commit_for_an_unknown_run_is_not_found() {
    let (store, graph) = store_with_graph().await;
    let ghost = initialized_run(&rid("ghost"), &graph, t(1));
    let (proposal, events) = claimed(
        &ghost,
        RunStatus::Running,
        &ClaimToken::mint(),
        ClaimedSchedule::RetainClaim,
        t(2),
    );
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn malformed_proposals_are_rejected_before_any_lookup() {
    let (store, graph) = store_with_graph().await;
    let ghost = initialized_run(&rid("ghost"), &graph, t(1));
    let (mut proposal, events) = claimed(
        &ghost,
        RunStatus::Running,
        &ClaimToken::mint(),
        ClaimedSchedule::RetainClaim,
        t(2),
    );
    proposal.run.checkpoint_seq += 1;
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    let (proposal, events) = unclaimed(&ghost, RunStatus::Running, ReleaseWake::External, t(2));
    assert_rejected(
        &store,
        StoreErrorKind::InvalidTransition,
        store.commit_unclaimed(&Scope::System, 1, proposal, events),
    )
    .await;
}

#[tokio::test]
async fn a_cross_tenant_commit_is_not_found_even_when_its_identity_is_wrong() {
    let store = MemoryStore::new();
    let graph = publish(&store, &tenant("a"), "g", 1, t(0)).await;
    let run = start_run(&store, &tenant("a"), &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        assert_rejected(
            &store,
            StoreErrorKind::NotFound,
            store.commit_claimed(&scope, proposal.clone(), events.clone()),
        )
        .await;
    }
    let mut rebound = proposal.clone();
    rebound.run.graph_id = GraphId::new("other").expect("id");
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.commit_claimed(&tenant_scope("b"), rebound, events.clone()),
    )
    .await;
    store
        .commit_claimed(&tenant_scope("a"), proposal, events)
        .await
        .expect("the owner's scope commits");
}

#[tokio::test]
async fn changed_graph_id_or_started_at_is_invalid_even_with_a_stale_fence() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    claim_one(&store, t(2)).await;
    let stale_token = ClaimToken::mint();
    let (base, events) = claimed(
        &run,
        RunStatus::Running,
        &stale_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    let mut graph_id = base.clone();
    graph_id.run.graph_id = GraphId::new("other").expect("id");
    let mut started_at = base.clone();
    started_at.run.started_at = Some(t(0));
    for proposal in [graph_id, started_at] {
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.commit_claimed(&Scope::System, proposal, events.clone()),
        )
        .await;
    }
}

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
async fn retain_claim_keeps_the_claim_restamped_with_no_wake() {
    let (store, run, token) =
        commit_with_schedule(RunStatus::Running, ClaimedSchedule::RetainClaim).await;
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.run.status, info.run.checkpoint_seq),
        (RunStatus::Running, 2)
    );
    assert_eq!((info.claimed_at, info.wake_at), (Some(t(3)), None));
    assert_eq!(info.claim_attempts, 0);
    store
        .refresh_claim(&run.id, &token, t(4))
        .await
        .expect("still held");
}

#[tokio::test]
async fn immediate_release_sets_a_wake_at_now_and_clears_the_claim() {
    let (store, run, token) = commit_with_schedule(
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    )
    .await;
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(3))));
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&run.id, &token, t(4)),
    )
    .await;
}

#[tokio::test]
async fn timed_release_wakes_exactly_at_the_given_instant() {
    let (store, run, token) = commit_with_schedule(
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(9_000))),
    )
    .await;
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(9_000))));
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&run.id, &token, t(4)),
    )
    .await;
}

#[tokio::test]
async fn external_and_terminal_releases_leave_neither_wake_nor_claim() {
    for (status, wake) in [
        (RunStatus::Waiting, ReleaseWake::External),
        (RunStatus::Done, ReleaseWake::Terminal),
        (RunStatus::Failed, ReleaseWake::Terminal),
        (RunStatus::Cancelled, ReleaseWake::Terminal),
    ] {
        let (store, run, token) =
            commit_with_schedule(status, ClaimedSchedule::Release(wake)).await;
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        assert_eq!(info.run.status, status);
        assert_eq!(info.run.checkpoint_seq, 2);
        assert_eq!((info.claimed_at, info.wake_at), (None, None), "{status}");
        assert_rejected(
            &store,
            StoreErrorKind::ClaimLost,
            store.refresh_claim(&run.id, &token, t(4)),
        )
        .await;
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
async fn an_unclaimed_commit_revokes_a_live_claim() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, events) = unclaimed(&run, RunStatus::Running, ReleaseWake::Immediate, t(3));
    store
        .commit_unclaimed(&Scope::Tenantless, 1, proposal, events)
        .await
        .expect("signal commit");
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&run.id, &lease.claim_token, t(4)),
    )
    .await;
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(3))));
    assert_eq!(info.claim_attempts, 0);
}

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

#[tokio::test]
async fn a_signal_commit_clears_poison_and_resets_counters() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let mut policy = claim_policy(t(2), 1);
    policy.max_claim_attempts = std::num::NonZeroU32::new(1).expect("nonzero");
    policy.orphan_ttl_ms = 0;
    store.claim_due(&policy).await.expect("claim");
    policy.now = t(3);
    let batch = store.claim_due(&policy).await.expect("poison");
    assert_eq!(batch.poisoned.len(), 1);
    let (proposal, events) = unclaimed(&run, RunStatus::Cancelled, ReleaseWake::Terminal, t(4));
    store
        .commit_unclaimed(&Scope::Tenantless, 1, proposal, events)
        .await
        .expect("cancel");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert!(info.poison.is_none());
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
}

// ---- 15 [TRANSITION-EVENT-CANONICAL] ----------------------------------------------------

#[tokio::test]
async fn a_commit_contradicting_a_stored_event_stores_nothing_not_even_fresh_seqs() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    let (proposal, mut events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(3),
    );
    let mut contradiction = store
        .fetch_event(&Scope::System, &run.id, 2)
        .await
        .expect("stored");
    contradiction.payload = map(json!({ "forged": true }));
    events.push(contradiction);
    let error = assert_rejected(
        &store,
        StoreErrorKind::EventConflict,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    assert!(matches!(
        error,
        docket_core::store::StoreError::EventConflict { seq: 2 }
    ));
    assert!(store.fetch_event(&Scope::System, &run.id, 3).await.is_err());
}

#[tokio::test]
async fn identical_duplicate_events_in_one_initialize_collapse() {
    let (store, graph) = store_with_graph().await;
    let run = initialized_run(&rid("r1"), &graph, t(1));
    let mut events = init_events(&run, t(1));
    events.push(events[0].clone());
    events.push(events[1].clone());
    store
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(run.clone(), t(1), t(1)),
            events,
        )
        .await
        .expect("initialize");
    let page = store
        .list_events(
            &Scope::System,
            &run.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("list");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[tokio::test]
async fn contradictory_duplicates_in_one_initialize_conflict_and_store_no_run() {
    let (store, graph) = store_with_graph().await;
    let run = initialized_run(&rid("r1"), &graph, t(1));
    let mut events = init_events(&run, t(1));
    let mut twin = events[0].clone();
    twin.payload = map(json!({ "inputs": [] }));
    events.push(twin);
    assert_rejected(
        &store,
        StoreErrorKind::EventConflict,
        store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(run, t(1), t(1)),
            events,
        ),
    )
    .await;
}

#[tokio::test]
async fn events_of_another_run_or_with_bad_content_are_invalid_transitions() {
    let (store, graph) = store_with_graph().await;
    let run = initialized_run(&rid("r1"), &graph, t(1));
    let mut foreign = init_events(&run, t(1));
    foreign[0].run_id = rid("someone-else");
    let mut zero = init_events(&run, t(1));
    zero[0].seq = 0;
    let mut huge = init_events(&run, t(1));
    huge[0].seq = MAX_SEQ + 1;
    let mut reserved = init_events(&run, t(1));
    reserved[0].payload = map(json!({ "$ref": 1 }));
    for events in [foreign, zero, huge, reserved] {
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.initialize(
                &OwnerScope::Tenantless,
                init_proposal(run.clone(), t(1), t(1)),
                events,
            ),
        )
        .await;
    }
}

// ---- 138 ambiguous initialize ------------------------------------------------------------

#[tokio::test]
async fn an_ambiguous_initialize_retried_surfaces_as_a_conflict() {
    let (store, graph) = store_with_graph().await;
    let run = initialized_run(&rid("r1"), &graph, t(1));
    let events = init_events(&run, t(1));
    let proposal = init_proposal(run, t(1), t(1));
    // The first attempt landed although its caller never saw the answer.
    store
        .initialize(&OwnerScope::Tenantless, proposal.clone(), events.clone())
        .await
        .expect("first");
    assert_rejected(
        &store,
        StoreErrorKind::Conflict,
        store.initialize(&OwnerScope::Tenantless, proposal, events),
    )
    .await;
}

// ---- reliability §8 C 23: sequence bounds ------------------------------------------------

#[tokio::test]
async fn an_expected_seq_at_the_maximum_is_refused_without_wrapping() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let lease = claim_one(&store, t(2)).await;
    for expected in [MAX_SEQ, u64::MAX] {
        let (mut proposal, events) = claimed(
            &run,
            RunStatus::Running,
            &lease.claim_token,
            ClaimedSchedule::RetainClaim,
            t(3),
        );
        proposal.expected_seq = expected;
        proposal.run.checkpoint_seq = expected.wrapping_add(1);
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.commit_claimed(&Scope::System, proposal, events),
        )
        .await;
    }
}

#[tokio::test]
async fn large_portable_payloads_round_trip_exactly() {
    let (store, graph) = store_with_graph().await;
    let mut run = initialized_run(&rid("r1"), &graph, t(1));
    let big = "x".repeat(1 << 20);
    run.input = map(json!({ "big": big, "float": 0.1 + 0.2, "tiny": 5e-324, "unicode": "zß水🍌" }));
    let events = init_events(&run, t(1));
    let stored = store
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(run.clone(), t(1), t(1)),
            events,
        )
        .await
        .expect("initialize");
    assert_eq!(stored, run);
    assert_eq!(
        store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("fetch"),
        run
    );
}
