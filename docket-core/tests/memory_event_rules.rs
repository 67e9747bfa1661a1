//! Event identity, idempotency and conflicts inside transitions (`docs/storage-contract.md`,
//! “Transitions”; `docs/storage-contract.md`, “Reading events”; scenario 15 of
//! `docs/scenarios.md`).

mod common;

use serde_json::json;

use common::*;
use docket_core::model::{OwnerScope, RunStatus, Scope, MAX_SEQ};
use docket_core::store::{ClaimedSchedule, RunStore, StoreErrorKind};

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
