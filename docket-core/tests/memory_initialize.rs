//! `initialize` on the memory store (`docs/storage-contract.md`, “Transitions”; scenarios 1, 7, 8,
//! 138 and 139 of `docs/scenarios.md`). Every rejected write is checked byte-for-byte against the
//! store.

mod common;

use std::sync::Arc;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{CheckpointType, EventType, OwnerScope, RunStatus, Scope};
use docket_core::store::{Backend, RunStore, StoreErrorKind};

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
