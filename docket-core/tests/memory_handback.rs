//! Refresh, release, abandon and poison recovery on the memory store (`docs/state-machines.md`,
//! “Operational transitions”; `docs/storage-contract.md`, “Handing claims back”; scenarios 5 and
//! 134–136 of `docs/scenarios.md`).

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{ClaimToken, OwnerScope, PoisonReason, RunStatus, Scope};
use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimedSchedule, ReleaseWake,
    RunStore, StoreErrorKind,
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

#[tokio::test]
async fn refresh_is_token_guarded_and_never_moves_claimed_at_backwards() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(100)).await;
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&run.id, &ClaimToken::mint(), t(200)),
    )
    .await;
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&rid("ghost"), &lease.claim_token, t(200)),
    )
    .await;
    store
        .refresh_claim(&run.id, &lease.claim_token, t(50))
        .await
        .expect("refresh");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claimed_at, Some(t(100)));
    store
        .refresh_claim(&run.id, &lease.claim_token, t(300))
        .await
        .expect("refresh");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claimed_at, Some(t(300)));
}

#[tokio::test]
async fn an_expired_but_unstolen_claim_may_still_refresh() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    store
        .refresh_claim(&run.id, &lease.claim_token, t(500_000))
        .await
        .expect("refresh after expiry");
    let batch = store
        .claim_due(&claim_policy(t(500_000), 1))
        .await
        .expect("claim");
    assert_eq!(
        batch.outcome_count(),
        0,
        "the refreshed claim is live again"
    );
}

#[tokio::test]
async fn stale_release_is_a_harmless_no_op() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    claim_one(&store, t(0)).await;
    assert_no_change(
        &store,
        store.release_claim(&run.id, &ClaimToken::mint(), t(5)),
    )
    .await;
    assert_no_change(
        &store,
        store.release_claim(&rid("ghost"), &ClaimToken::mint(), t(5)),
    )
    .await;
}

#[tokio::test]
async fn current_release_wakes_at_the_release_time_and_keeps_attempts() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    store
        .release_claim(&run.id, &lease.claim_token, t(7))
        .await
        .expect("release");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.wake_at, info.claimed_at, info.claim_attempts),
        (Some(t(7)), None, 1)
    );
    // Releasing again with the old token is a no-op.
    assert_no_change(
        &store,
        store.release_claim(&run.id, &lease.claim_token, t(9)),
    )
    .await;
    // The run can be claimed again and committed with the new token.
    let again = claim_one(&store, t(8)).await;
    assert_eq!(again.claim_attempt, 2);
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &again.claim_token,
        ClaimedSchedule::RetainClaim,
        t(9),
    );
    store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit after re-claim");
}

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
async fn abandon_after_the_holders_first_commit_is_stale() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(1),
    );
    store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit");
    let outcome = assert_no_change(
        &store,
        store.abandon_claim(&run.id, &lease.claim_token, &abandon(1, 2, 3, 5)),
    )
    .await;
    assert_eq!(outcome, AbandonOutcome::Stale);
}

#[tokio::test]
async fn abandon_with_retry_before_now_is_an_invalid_argument() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    assert_rejected(
        &store,
        StoreErrorKind::InvalidArgument,
        store.abandon_claim(&run.id, &lease.claim_token, &abandon(1, 10, 9, 5)),
    )
    .await;
    let mut bad_backoff = abandon(1, 10, 10, 5);
    bad_backoff.mode = AbandonMode::NonPoisoning {
        backoff: Some(AbandonBackoff {
            base_ms: 100,
            cap_ms: 50,
        }),
    };
    assert_rejected(
        &store,
        StoreErrorKind::InvalidArgument,
        store.abandon_claim(&run.id, &lease.claim_token, &bad_backoff),
    )
    .await;
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
async fn non_poisoning_abandons_back_off_exponentially_to_the_cap() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut wakes = Vec::new();
    let mut now = 0;
    for _ in 0..4 {
        let lease = claim_one(&store, t(now)).await;
        let mut policy = abandon(1, now, now, 1);
        policy.mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: 100,
                cap_ms: 300,
            }),
        };
        let outcome = store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        let wake = info.wake_at.expect("wake");
        wakes.push((wake.millis_since(t(now)), info.claim_abandons));
        now = wake.millis_since(t(0)) as i64;
    }
    assert_eq!(wakes, vec![(100, 1), (200, 2), (300, 3), (300, 4)]);
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

#[tokio::test]
async fn retry_poisoned_fully_resets_an_attempts_poison() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(2);
    policy.orphan_ttl_ms = 0;
    for i in 1..=3 {
        policy.now = t(i);
        store.claim_due(&policy).await.expect("claim");
    }
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert!(info.is_poisoned());
    assert_eq!(info.claim_attempts, 2);
    store
        .retry_poisoned_run(&Scope::System, &run.id, t(10))
        .await
        .expect("retry");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.wake_at, info.claim_attempts, info.claim_abandons),
        (Some(t(10)), 0, 0)
    );
    assert!(!info.is_poisoned());
    let lease = claim_one(&store, t(10)).await;
    assert_eq!(lease.claim_attempt, 1);
    // A second retry on the now healthy (claimed) run changes nothing.
    assert_no_change(
        &store,
        store.retry_poisoned_run(&Scope::System, &run.id, t(11)),
    )
    .await;
}
