//! Handing claims back: release, refresh, abandon, and poison recovery.

use std::num::NonZeroU32;

use docket_core::model::{ClaimToken, OwnerScope, PoisonReason, RunStatus, Scope, Timestamp};
use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimedSchedule, ReleaseWake,
    RunStore, StoreErrorKind,
};

use crate::common::*;

fn abandon(expected_seq: u64, now: Timestamp, max: u32, mode: AbandonMode) -> AbandonPolicy {
    AbandonPolicy {
        expected_seq,
        now,
        retry_at: now.add_millis(500),
        max_claim_abandons: NonZeroU32::new(max).expect("max"),
        mode,
    }
}

#[tokio::test]
async fn release_is_token_guarded_and_keeps_attempts() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    fx.store
        .release_claim(&lease.run_id, &ClaimToken::mint(), t(2))
        .await
        .expect("foreign release is a no-op");
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .expect("inspect");
    assert_eq!(info.claimed_at, Some(t(1)));
    fx.store
        .release_claim(&lease.run_id, &lease.claim_token, t(3))
        .await
        .expect("release");
    fx.store
        .release_claim(&lease.run_id, &lease.claim_token, t(4))
        .await
        .expect("idempotent");
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .expect("inspect");
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(3))));
    assert_eq!(info.claim_attempts, 1);
    fx.store
        .release_claim(&rid("unknown"), &lease.claim_token, t(4))
        .await
        .expect("unknown run is a no-op");
}

#[tokio::test]
async fn refresh_never_moves_backwards_and_reports_a_lost_claim() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(10)).await;
    fx.store
        .refresh_claim(&lease.run_id, &lease.claim_token, t(5))
        .await
        .expect("refresh");
    let at = |fx: &Fx| {
        let store = fx.store.clone();
        let id = lease.run_id.clone();
        async move {
            store
                .inspect_run(&Scope::System, &id)
                .await
                .expect("inspect")
                .claimed_at
        }
    };
    assert_eq!(at(&fx).await, Some(t(10)));
    // An expired but unstolen claim may still refresh.
    fx.store
        .refresh_claim(&lease.run_id, &lease.claim_token, t(100_000))
        .await
        .expect("refresh");
    assert_eq!(at(&fx).await, Some(t(100_000)));
    let stale = fx
        .store
        .claim_due(&policy(t(100_000), 1, 1_000, 5, None))
        .await
        .expect("claim");
    assert_eq!(stale.outcome_count(), 0, "refreshed claim is live again");
    let err = fx
        .store
        .refresh_claim(&lease.run_id, &ClaimToken::mint(), t(200_000))
        .await
        .expect_err("foreign token");
    assert_eq!(err.kind(), StoreErrorKind::ClaimLost);
    assert_eq!(
        at(&fx).await,
        Some(t(100_000)),
        "a lost claim changes nothing"
    );
    let err = fx
        .store
        .refresh_claim(&rid("unknown"), &lease.claim_token, t(1))
        .await
        .expect_err("unknown run");
    assert_eq!(err.kind(), StoreErrorKind::ClaimLost);
}

#[tokio::test]
async fn abandon_reschedules_then_poisons_and_decrements_attempts() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let id = rid("r1");
    let lease = claim_one(&fx.store, t(1)).await;
    let outcome = fx
        .store
        .abandon_claim(
            &id,
            &lease.claim_token,
            &abandon(1, t(2), 1, AbandonMode::Poisoning),
        )
        .await
        .expect("abandon");
    assert_eq!(outcome, AbandonOutcome::Rescheduled);
    let info = fx
        .store
        .inspect_run(&Scope::System, &id)
        .await
        .expect("inspect");
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(502)), None));
    let lease = claim_one(&fx.store, t(502)).await;
    let outcome = fx
        .store
        .abandon_claim(
            &id,
            &lease.claim_token,
            &abandon(1, t(503), 1, AbandonMode::Poisoning),
        )
        .await
        .expect("abandon");
    assert_eq!(outcome, AbandonOutcome::Poisoned);
    let info = fx
        .store
        .inspect_run(&Scope::System, &id)
        .await
        .expect("inspect");
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));
    let poison = info.poison.expect("poisoned");
    assert_eq!(poison.reason, PoisonReason::MaxClaimAbandonsExceeded);
    assert_eq!(poison.poisoned_at, t(503));
    assert_eq!(info.wake_at, None);
}

#[tokio::test]
async fn abandon_is_fenced_on_token_and_seq() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    let p = abandon(1, t(2), 5, AbandonMode::Poisoning);
    let foreign = fx
        .store
        .abandon_claim(&run.id, &ClaimToken::mint(), &p)
        .await
        .expect("abandon");
    assert_eq!(foreign, AbandonOutcome::Stale);
    let wrong_seq = fx
        .store
        .abandon_claim(
            &run.id,
            &lease.claim_token,
            &abandon(2, t(2), 5, AbandonMode::Poisoning),
        )
        .await
        .expect("abandon");
    assert_eq!(wrong_seq, AbandonOutcome::Stale);
    let unknown = fx
        .store
        .abandon_claim(&rid("unknown"), &lease.claim_token, &p)
        .await
        .expect("abandon");
    assert_eq!(unknown, AbandonOutcome::Stale);
    let mut bad = p;
    bad.retry_at = t(1);
    let err = fx
        .store
        .abandon_claim(&run.id, &lease.claim_token, &bad)
        .await
        .expect_err("retry_at before now");
    assert_eq!(err.kind(), StoreErrorKind::InvalidArgument);
    let info = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claimed_at, Some(t(1)), "nothing changed");
}

#[tokio::test]
async fn non_poisoning_abandons_back_off_exponentially_to_the_cap() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let id = rid("r1");
    let mode = AbandonMode::NonPoisoning {
        backoff: Some(AbandonBackoff {
            base_ms: 100,
            cap_ms: 300,
        }),
    };
    let mut now = t(0);
    let mut delays = Vec::new();
    for _ in 0..4 {
        let lease = claim_one(&fx.store, now).await;
        let outcome = fx
            .store
            .abandon_claim(&id, &lease.claim_token, &abandon(1, now, 1, mode))
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = fx
            .store
            .inspect_run(&Scope::System, &id)
            .await
            .expect("inspect");
        let wake = info.wake_at.expect("wake");
        delays.push(wake.millis_since(now));
        now = wake;
    }
    assert_eq!(delays, vec![100, 200, 300, 300]);
    let info = fx
        .store
        .inspect_run(&Scope::System, &id)
        .await
        .expect("inspect");
    assert_eq!(info.claim_abandons, 4);
    assert!(!info.is_poisoned());
}

#[tokio::test]
async fn retry_poisoned_recovers_only_live_poisoned_runs_in_scope() {
    let fx = open().await;
    let owner = tenant("acme");
    let run = start_simple(&fx.store, &owner, "r1").await;
    let scope = scope_of(&owner);
    let healthy = fx
        .store
        .retry_poisoned_run(&scope, &run.id, t(1))
        .await
        .expect("healthy run");
    assert_eq!(healthy, run);
    fx.store
        .claim_due(&policy(t(1), 1, 0, 1, None))
        .await
        .expect("claim");
    let poisoned = fx
        .store
        .claim_due(&policy(t(2), 1, 0, 1, None))
        .await
        .expect("poison");
    assert_eq!(poisoned.poisoned.len(), 1);
    let hidden = fx
        .store
        .retry_poisoned_run(&scope_of(&tenant("other")), &run.id, t(3))
        .await
        .expect_err("other tenant");
    assert_eq!(hidden.kind(), StoreErrorKind::NotFound);
    let recovered = fx
        .store
        .retry_poisoned_run(&scope, &run.id, t(3))
        .await
        .expect("recover");
    assert_eq!(recovered, run, "no document change, no sequence consumed");
    let info = fx
        .store
        .inspect_run(&scope, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.poison, None);
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert_eq!(info.wake_at, Some(t(3)));
    let lease = claim_one(&fx.store, t(3)).await;
    let done = commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(4),
    )
    .await;
    let inactive = fx
        .store
        .retry_poisoned_run(&scope, &done.id, t(5))
        .await
        .expect_err("terminal");
    assert_eq!(inactive.kind(), StoreErrorKind::InactiveRun);
}

#[tokio::test]
async fn a_commit_clears_poison_and_counters() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    fx.store
        .claim_due(&policy(t(1), 1, 0, 1, None))
        .await
        .expect("claim");
    fx.store
        .claim_due(&policy(t(2), 1, 0, 1, None))
        .await
        .expect("poison");
    let cancelled = next(&run, RunStatus::Running, t(3));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed_commit(cancelled, ReleaseWake::At(t(9)), t(3)),
            vec![],
        )
        .await
        .expect("signal");
    let info = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.poison, None);
    assert_eq!(info.claim_attempts, 0);
    assert_eq!(info.wake_at, Some(t(9)));
    assert_eq!(claim_one(&fx.store, t(9)).await.claim_attempt, 1);
}
