//! refresh / release / abandon / retry-poisoned (`docs/state-machines.md`,
//! “Operational transitions”; `docs/storage-contract.md`, “Handing claims back”).

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{ClaimToken, PoisonReason, RunStatus, Scope};
use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimedSchedule, ReleaseWake,
    RunStore, StoreErrorKind,
};

fn abandon_policy(now_ms: i64, retry_ms: i64, max: u32, mode: AbandonMode) -> AbandonPolicy {
    AbandonPolicy {
        expected_seq: 1,
        now: t(now_ms),
        retry_at: t(retry_ms),
        max_claim_abandons: NonZeroU32::new(max).unwrap(),
        mode,
    }
}

#[tokio::test]
async fn refresh_advances_claimed_at_and_never_moves_it_backwards() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(10)).await;
    fx.store
        .refresh_claim(&lease.run_id, &lease.claim_token, t(30))
        .await
        .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!(info.claimed_at, Some(t(30)));
    fx.unchanged(
        fx.store
            .refresh_claim(&lease.run_id, &lease.claim_token, t(20)),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn refresh_with_a_foreign_token_or_unknown_run_is_claim_lost() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(10)).await;
    let error = fx
        .rejected(
            fx.store
                .refresh_claim(&lease.run_id, &ClaimToken::mint(), t(30)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::ClaimLost);
    let error = fx
        .rejected(
            fx.store
                .refresh_claim(&rid("ghost"), &lease.claim_token, t(30)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::ClaimLost);
}

#[tokio::test]
async fn an_expired_but_unstolen_claim_can_still_refresh() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(0)).await;
    fx.store
        .refresh_claim(&lease.run_id, &lease.claim_token, t(500_000))
        .await
        .unwrap();
    // Refreshed: no longer expired at a time when the original claim would have been.
    assert_eq!(
        fx.store
            .claim_due(&policy(t(500_001), 1))
            .await
            .unwrap()
            .outcome_count(),
        0
    );
}

#[tokio::test]
async fn release_with_the_current_token_wakes_now_and_keeps_attempts() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.store
        .release_claim(&lease.run_id, &lease.claim_token, t(5))
        .await
        .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!(
        (info.claimed_at, info.wake_at, info.claim_attempts),
        (None, Some(t(5)), 1)
    );
    assert_eq!(fx.claim_one(t(5)).await.claim_attempt, 2);
}

#[tokio::test]
async fn release_with_a_stale_token_or_unknown_run_does_nothing() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.unchanged(
        fx.store
            .release_claim(&lease.run_id, &ClaimToken::mint(), t(5)),
    )
    .await
    .unwrap();
    fx.unchanged(
        fx.store
            .release_claim(&rid("ghost"), &lease.claim_token, t(5)),
    )
    .await
    .unwrap();
    // Idempotent: a second release by the former holder does not disturb the new claim.
    fx.store
        .release_claim(&lease.run_id, &lease.claim_token, t(5))
        .await
        .unwrap();
    let newer = fx.claim_one(t(6)).await;
    fx.unchanged(
        fx.store
            .release_claim(&lease.run_id, &lease.claim_token, t(7)),
    )
    .await
    .unwrap();
    fx.commit_next(
        &newer,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(8),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn abandons_reschedule_until_the_limit_then_poison() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    for round in 1..=2i64 {
        let lease = fx.claim_one(t(round * 100)).await;
        let outcome = fx
            .store
            .abandon_claim(
                &lease.run_id,
                &lease.claim_token,
                &abandon_policy(round * 100, round * 100 + 50, 2, AbandonMode::Poisoning),
            )
            .await
            .unwrap();
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = fx
            .store
            .inspect_run(&Scope::System, &lease.run_id)
            .await
            .unwrap();
        assert_eq!(info.wake_at, Some(t(round * 100 + 50)));
        assert_eq!(info.claim_attempts, 0, "abandons hand the attempt back");
        assert_eq!(info.claim_abandons, round as u32);
    }
    let lease = fx.claim_one(t(300)).await;
    let outcome = fx
        .store
        .abandon_claim(
            &lease.run_id,
            &lease.claim_token,
            &abandon_policy(300, 350, 2, AbandonMode::Poisoning),
        )
        .await
        .unwrap();
    assert_eq!(outcome, AbandonOutcome::Poisoned);
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!(info.claim_abandons, 2, "the count stays at the maximum");
    assert_eq!(
        info.poison.map(|p| (p.poisoned_at, p.reason)),
        Some((t(300), PoisonReason::MaxClaimAbandonsExceeded))
    );
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    // Never touches the document.
    assert_eq!(info.run.checkpoint_seq, 1);
    assert_eq!(info.run.updated_at, Some(t(0)));
}

#[tokio::test]
async fn a_stale_abandon_changes_nothing() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let policy = abandon_policy(2, 3, 5, AbandonMode::Poisoning);
    for (run_id, token) in [
        (lease.run_id.clone(), ClaimToken::mint()),
        (rid("ghost"), lease.claim_token.clone()),
    ] {
        let outcome = fx
            .unchanged(fx.store.abandon_claim(&run_id, &token, &policy))
            .await
            .unwrap();
        assert_eq!(outcome, AbandonOutcome::Stale);
    }
    // After the holder's first commit the abandon no longer applies.
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(2),
    )
    .await
    .unwrap();
    let outcome = fx
        .unchanged(fx.store.abandon_claim(&run.id, &lease.claim_token, &policy))
        .await
        .unwrap();
    assert_eq!(outcome, AbandonOutcome::Stale);
}

#[tokio::test]
async fn an_abandon_retry_before_now_is_an_invalid_argument() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let error = fx
        .rejected(fx.store.abandon_claim(
            &lease.run_id,
            &lease.claim_token,
            &abandon_policy(10, 9, 5, AbandonMode::Poisoning),
        ))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
    let bad_backoff = AbandonMode::NonPoisoning {
        backoff: Some(AbandonBackoff {
            base_ms: 100,
            cap_ms: 50,
        }),
    };
    let error = fx
        .rejected(fx.store.abandon_claim(
            &lease.run_id,
            &lease.claim_token,
            &abandon_policy(10, 10, 5, bad_backoff),
        ))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
}

#[tokio::test]
async fn non_poisoning_abandons_back_off_exponentially_to_the_cap_and_never_poison() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let mode = AbandonMode::NonPoisoning {
        backoff: Some(AbandonBackoff {
            base_ms: 100,
            cap_ms: 300,
        }),
    };
    let mut wakes = Vec::new();
    let mut now = 0;
    for _ in 0..4 {
        let lease = fx.claim_one(t(now)).await;
        let outcome = fx
            .store
            .abandon_claim(
                &lease.run_id,
                &lease.claim_token,
                &abandon_policy(now, now, 1, mode),
            )
            .await
            .unwrap();
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = fx
            .store
            .inspect_run(&Scope::System, &lease.run_id)
            .await
            .unwrap();
        let wake = info.wake_at.unwrap();
        wakes.push(wake.millis_since(t(now)));
        now = wake.millis_since(t(0)) as i64;
    }
    assert_eq!(wakes, vec![100, 200, 300, 300]);
    let info = fx
        .store
        .inspect_run(&Scope::System, &rid("r1"))
        .await
        .unwrap();
    assert_eq!(info.claim_abandons, 4);
    assert!(!info.is_poisoned());
}

#[tokio::test]
async fn non_poisoning_abandons_without_backoff_use_retry_at() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let mode = AbandonMode::NonPoisoning { backoff: None };
    for round in 1..=3i64 {
        let lease = fx.claim_one(t(round * 10)).await;
        let outcome = fx
            .store
            .abandon_claim(
                &lease.run_id,
                &lease.claim_token,
                &abandon_policy(round * 10, round * 10 + 7, 1, mode),
            )
            .await
            .unwrap();
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
    }
    let info = fx
        .store
        .inspect_run(&Scope::System, &rid("r1"))
        .await
        .unwrap();
    assert_eq!((info.wake_at, info.claim_abandons), (Some(t(37)), 3));
}

#[tokio::test]
async fn a_commit_resets_the_abandon_count() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.store
        .abandon_claim(
            &lease.run_id,
            &lease.claim_token,
            &abandon_policy(1, 2, 5, AbandonMode::Poisoning),
        )
        .await
        .unwrap();
    let lease = fx.claim_one(t(2)).await;
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(3),
    )
    .await
    .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
}

async fn poisoned(fx: &Fx, id: &str) {
    fx.start(id, t(0)).await;
    let mut p = policy(t(0), 1);
    p.max_claim_attempts = NonZeroU32::new(1).unwrap();
    p.orphan_ttl_ms = 0;
    fx.store.claim_due(&p).await.unwrap();
    p.now = t(1);
    let batch = fx.store.claim_due(&p).await.unwrap();
    assert_eq!(batch.poisoned.len(), 1);
}

#[tokio::test]
async fn retry_poisoned_recovers_without_touching_the_document() {
    let fx = fx().await;
    poisoned(&fx, "r1").await;
    let before = fx
        .store
        .fetch_run(&Scope::System, &rid("r1"))
        .await
        .unwrap();
    let returned = fx
        .store
        .retry_poisoned_run(&Scope::Tenantless, &rid("r1"), t(50))
        .await
        .unwrap();
    assert_eq!(returned, before);
    let info = fx
        .store
        .inspect_run(&Scope::System, &rid("r1"))
        .await
        .unwrap();
    assert!(!info.is_poisoned());
    assert_eq!(info.run, before, "no sequence consumed");
    assert_eq!(
        (info.wake_at, info.claim_attempts, info.claim_abandons),
        (Some(t(50)), 0, 0)
    );
    assert_eq!(fx.claim_one(t(50)).await.claim_attempt, 1);
}

#[tokio::test]
async fn retry_poisoned_on_a_healthy_run_is_an_unchanged_success() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let returned = fx
        .unchanged(
            fx.store
                .retry_poisoned_run(&Scope::Tenantless, &run.id, t(5)),
        )
        .await
        .unwrap();
    assert_eq!(returned, run);
}

#[tokio::test]
async fn retry_poisoned_checks_terminal_first_and_conceals_other_tenants() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (done, events) = advance(&run, RunStatus::Failed, t(1));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(done, ReleaseWake::Terminal, t(1)),
            events,
        )
        .await
        .unwrap();
    let error = fx
        .rejected(
            fx.store
                .retry_poisoned_run(&Scope::Tenantless, &run.id, t(2)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::InactiveRun);
    poisoned(&fx, "r2").await;
    let error = fx
        .rejected(fx.store.retry_poisoned_run(
            &Scope::Tenant(docket_core::model::TenantId::new("a").unwrap()),
            &rid("r2"),
            t(2),
        ))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    let error = fx
        .rejected(
            fx.store
                .retry_poisoned_run(&Scope::System, &rid("ghost"), t(2)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
}
