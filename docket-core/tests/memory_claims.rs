//! `claim_due` on the memory store: classes, order, TTL, attempts and poison
//! (`docs/state-machines.md`, “Operational transitions”; `docs/claim-order.md`;
//! `docs/reliability.md`, “Claims and leases”; scenarios 128–132 of `docs/scenarios.md`).

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::{ClaimClass, ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("nonzero")
}

// ---- 128 ---------------------------------------------------------------------------------

#[tokio::test]
async fn claim_due_batches_ready_and_expired_runs_with_minted_tokens() {
    let (store, graph) = store_with_graph().await;
    let stuck = start_run(&store, &OwnerScope::Tenantless, &graph, "stuck", t(0)).await;
    let first = claim_one(&store, t(0)).await;
    assert_eq!(first.claim_attempt, 1);
    let ready = start_run(&store, &OwnerScope::Tenantless, &graph, "ready", t(1_000)).await;
    let batch = store
        .claim_due(&claim_policy(t(61_000), 10))
        .await
        .expect("claim");
    assert!(batch.poisoned.is_empty());
    let by_id: Vec<_> = batch.leases.iter().map(|l| l.run_id.clone()).collect();
    assert_eq!(by_id, vec![stuck.id.clone(), ready.id.clone()]);
    let steal = &batch.leases[0];
    assert_eq!(steal.claim_attempt, 2, "a steal after the TTL is attempt 2");
    assert!(steal.claim_token.is_uuid());
    assert_ne!(steal.claim_token, first.claim_token);
    assert_eq!(steal.claimed_at, t(61_000));
    assert_eq!((steal.checkpoint_seq, steal.orphan_ttl_ms), (1, 60_000));
    assert_eq!(steal.owner, OwnerScope::Tenantless);
    assert_eq!(
        (&steal.graph_id, &steal.graph_hash),
        (&graph.graph_id, &graph.graph_hash)
    );
    assert_eq!(batch.leases[1].claim_attempt, 1);
    let info = store
        .inspect_run(&Scope::System, &ready.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.claimed_at, info.wake_at, info.claim_attempts),
        (Some(t(61_000)), None, 1)
    );
}

#[tokio::test]
async fn waiting_terminal_and_poisoned_runs_are_never_claimed() {
    let (store, graph) = store_with_graph().await;
    for (id, status, wake) in [
        ("waiting", RunStatus::Waiting, ReleaseWake::External),
        ("done", RunStatus::Done, ReleaseWake::Terminal),
    ] {
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, id, t(0)).await;
        let (proposal, events) = unclaimed(&run, status, wake, t(1));
        store
            .commit_unclaimed(&Scope::System, 1, proposal, events)
            .await
            .expect("park");
    }
    start_run(&store, &OwnerScope::Tenantless, &graph, "poisoned", t(0)).await;
    let mut policy = claim_policy(t(2), 5);
    policy.max_claim_attempts = nz(1);
    policy.orphan_ttl_ms = 0;
    store.claim_due(&policy).await.expect("lease");
    policy.now = t(3);
    assert_eq!(
        store
            .claim_due(&policy)
            .await
            .expect("poison")
            .poisoned
            .len(),
        1
    );
    policy.now = t(1_000_000);
    let batch = assert_no_change(&store, store.claim_due(&policy)).await;
    assert_eq!(batch.outcome_count(), 0);
}

// ---- 129 ---------------------------------------------------------------------------------

async fn ready_and_expired(
    store: &MemoryStore,
) -> (docket_core::model::RunId, docket_core::model::RunId) {
    let graph = publish(store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    let expired = start_run(store, &OwnerScope::Tenantless, &graph, "e1", t(0)).await;
    claim_one(store, t(0)).await;
    start_run(store, &OwnerScope::Tenantless, &graph, "e2", t(1)).await;
    claim_one(store, t(1)).await;
    let ready = start_run(store, &OwnerScope::Tenantless, &graph, "r1", t(50_000)).await;
    (ready.id, expired.id)
}

#[tokio::test]
async fn demand_one_serves_the_preferred_class_and_falls_through() {
    let store = MemoryStore::new();
    let (ready, expired) = ready_and_expired(&store).await;
    let mut policy = claim_policy(t(70_000), 1);
    policy.preference = Some(ClaimClass::Ready);
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.leases[0].run_id, ready);
    // Ready class is now empty: the preference falls through to an expired run.
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.leases[0].run_id, expired);
    policy.preference = Some(ClaimClass::Expired);
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.leases[0].run_id.as_str(), "e2");
}

// ---- 130 ---------------------------------------------------------------------------------

// ---- 131 ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_commit_resets_attempts_so_progress_is_never_poisoned() {
    let (store, graph) = store_with_graph().await;
    let mut run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(1);
    for i in 1..=4 {
        policy.now = t(i * 10);
        let batch = store.claim_due(&policy).await.expect("claim");
        let lease = &batch.leases[0];
        assert_eq!(lease.claim_attempt, 1);
        let (proposal, events) = claimed(
            &run,
            RunStatus::Running,
            &lease.claim_token,
            ClaimedSchedule::Release(ReleaseWake::Immediate),
            t(i * 10 + 1),
        );
        run = store
            .commit_claimed(&Scope::System, proposal, events)
            .await
            .expect("progress");
    }
    assert!(store
        .raw_snapshot()
        .contains("\"latest_checkpoint_type\":\"step_committed\""));
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claim_attempts, 0);
    assert_eq!(info.run.checkpoint_seq, 5);
}

// ---- scenario 132; `docs/reliability.md`, “Claims and leases” -----------------------------------

#[tokio::test]
async fn a_claim_becomes_stealable_only_strictly_after_the_ttl() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let first = claim_one(&store, t(0)).await;
    let at_boundary = assert_no_change(&store, store.claim_due(&claim_policy(t(60_000), 5))).await;
    assert_eq!(
        at_boundary.outcome_count(),
        0,
        "a live lease is never stolen"
    );
    let steal = store
        .claim_due(&claim_policy(t(60_001), 5))
        .await
        .expect("claim");
    assert_eq!(steal.leases.len(), 1);
    assert_ne!(steal.leases[0].claim_token, first.claim_token);
}

// ---- `docs/reliability.md`, “Claims and leases” -------------------------------------------------

#[tokio::test]
async fn a_holder_whose_lease_was_stolen_is_fenced_and_the_thief_progresses() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let a = claim_one(&store, t(0)).await;
    let b = claim_one(&store, t(60_001)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &b.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_002),
    );
    let after_b = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("b commits");
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &a.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_003),
    );
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    // A cannot commit on top of B's state either.
    let (proposal, events) = claimed(
        &after_b,
        RunStatus::Running,
        &a.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_004),
    );
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    let (proposal, events) = claimed(
        &after_b,
        RunStatus::Running,
        &b.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_005),
    );
    let after = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("b continues");
    assert_eq!(after.checkpoint_seq, 3);
}

// ---- the run in a lease --------------------------------------------------------------------

#[tokio::test]
async fn a_lease_carries_its_run_and_keeps_only_a_document_that_is_its_run() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let other = start_run(&store, &OwnerScope::Tenantless, &graph, "r2", t(5_000)).await;
    let mut lease = claim_one(&store, t(10)).await;
    assert_eq!(
        lease.run.as_ref(),
        Some(&run),
        "the memory store hands the run over"
    );

    // Another run, or this run at another checkpoint, is not this lease's run.
    lease.run = None;
    assert!(!lease.attach_run(other.clone()));
    let mut later = run.clone();
    later.checkpoint_seq += 1;
    assert!(!lease.attach_run(later));
    // A document that does not decode is dropped, not an error.
    assert!(!lease.attach_document(b"{not json"));
    assert!(!lease.attach_document(&serde_json::to_vec(&other).expect("encode")));
    assert_eq!(lease.run, None);
    assert!(lease.attach_document(&serde_json::to_vec(&run).expect("encode")));
    assert_eq!(lease.run.as_ref(), Some(&run));
}
