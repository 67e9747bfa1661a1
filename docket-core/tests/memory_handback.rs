//! Refresh, release, abandon and poison recovery on the memory store (`docs/state-machines.md`,
//! “Operational transitions”; `docs/storage-contract.md`, “Handing claims back”; scenarios 5 and
//! 134–136 of `docs/scenarios.md`).

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{ClaimToken, OwnerScope, PoisonReason, RunStatus, Scope};
use docket_core::store::{
    AbandonMode, AbandonOutcome, AbandonPolicy, ReleaseWake, RunStore, StoreErrorKind,
};

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("nonzero")
}

fn abandon(expected_seq: u64, now_ms: i64, retry_ms: i64, max: u32) -> AbandonPolicy {
    AbandonPolicy {
        expected_seq,
        now: t(now_ms),
        retry_at: t(retry_ms),
        max_claim_abandons: nz(max),
        mode: AbandonMode::Poisoning,
    }
}

// ---- 5 [RUN-CLAIM-LIVENESS-RECOVERY] / 134 -----------------------------------------------

// ---- 5 / 135 abandon ---------------------------------------------------------------------

#[tokio::test]
async fn abandon_reschedules_then_poisons_as_in_the_shared_scenario() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    // Stale abandons: wrong token, wrong seq, unknown run.
    for (id, token, seq) in [
        (run.id.clone(), ClaimToken::mint(), 1),
        (run.id.clone(), lease.claim_token.clone(), 0),
        (rid("ghost"), lease.claim_token.clone(), 1),
    ] {
        let outcome = assert_no_change(
            &store,
            store.abandon_claim(&id, &token, &abandon(seq, 10, 20, 1)),
        )
        .await;
        assert_eq!(outcome, AbandonOutcome::Stale);
    }
    let outcome = store
        .abandon_claim(&run.id, &lease.claim_token, &abandon(1, 10, 1_000, 1))
        .await
        .expect("abandon");
    assert_eq!(outcome, AbandonOutcome::Rescheduled);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(1_000)), None));
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));

    let lease = claim_one(&store, t(1_000)).await;
    let outcome = store
        .abandon_claim(&run.id, &lease.claim_token, &abandon(1, 1_010, 2_000, 1))
        .await
        .expect("abandon");
    assert_eq!(outcome, AbandonOutcome::Poisoned);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));
    let poison = info.poison.expect("poisoned");
    assert_eq!(poison.reason, PoisonReason::MaxClaimAbandonsExceeded);
    assert_eq!(poison.poisoned_at, t(1_010));
    assert_eq!(info.run, run, "abandon never touches the document");

    let recovered = store
        .retry_poisoned_run(&Scope::Tenantless, &run.id, t(3_000))
        .await
        .expect("retry");
    assert_eq!(recovered, run);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.wake_at, Some(t(3_000)));
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert!(info.poison.is_none());
}

#[tokio::test]
async fn abandons_hand_the_attempt_back_so_only_launches_count_toward_poison() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(1);
    for i in 0..3 {
        policy.now = t(i * 100);
        let batch = store.claim_due(&policy).await.expect("claim");
        assert_eq!(
            batch.leases.len(),
            1,
            "round {i}: attempts were handed back"
        );
        let outcome = store
            .abandon_claim(
                &run.id,
                &batch.leases[0].claim_token,
                &abandon(1, i * 100, i * 100, 10),
            )
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
    }
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 3));
}

#[tokio::test]
async fn non_poisoning_abandon_without_backoff_wakes_at_retry_at_and_never_poisons() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    for i in 0..3 {
        let lease = claim_one(&store, t(i * 10)).await;
        let mut policy = abandon(1, i * 10, i * 10 + 5, 1);
        policy.mode = AbandonMode::NonPoisoning { backoff: None };
        let outcome = store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        assert_eq!(info.wake_at, Some(t(i * 10 + 5)));
    }
}

// ---- 136 retry_poisoned_run --------------------------------------------------------------

#[tokio::test]
async fn retry_poisoned_is_terminal_first_scoped_and_idempotent() {
    let store = MemoryStore::new();
    let graph = publish(&store, &tenant("a"), "g", 1, t(0)).await;
    let run = start_run(&store, &tenant("a"), &graph, "r1", t(0)).await;
    // Healthy: returned unchanged, nothing written.
    let same = assert_no_change(
        &store,
        store.retry_poisoned_run(&tenant_scope("a"), &run.id, t(1)),
    )
    .await;
    assert_eq!(same, run);
    // Other tenant, tenantless and unknown: not found.
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        assert_rejected(
            &store,
            StoreErrorKind::NotFound,
            store.retry_poisoned_run(&scope, &run.id, t(1)),
        )
        .await;
    }
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.retry_poisoned_run(&Scope::System, &rid("ghost"), t(1)),
    )
    .await;
    // Terminal: inactive.
    let (proposal, events) = unclaimed(&run, RunStatus::Cancelled, ReleaseWake::Terminal, t(2));
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("cancel");
    assert_rejected(
        &store,
        StoreErrorKind::InactiveRun,
        store.retry_poisoned_run(&Scope::System, &run.id, t(3)),
    )
    .await;
}
