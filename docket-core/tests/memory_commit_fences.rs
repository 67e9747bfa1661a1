//! The double fence of commits, identity and validation order (`docs/storage-contract.md`,
//! “Transitions”; `docs/reliability.md`, “Fenced commits”; `docs/reliability.md`, “Bad input”;
//! scenarios 9 and 13 of `docs/scenarios.md`). Every rejected write is checked byte-for-byte.

mod common;

use serde_json::json;

use common::*;
use docket_core::model::{ClaimToken, GraphHash, GraphId, OwnerScope, RunStatus, Scope, MAX_SEQ};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

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

// ---- `docs/reliability.md`, “Fenced commits” ----------------------------------------------------

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

// ---- 13 [TRANSITION-CLAIMED-TENANCY-IDENTITY] -------------------------------------------

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

// ---- `docs/reliability.md`, “Bad input”: sequence bounds ----------------------------------------

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
