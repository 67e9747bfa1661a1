//! Release, refresh, abandon and poison recovery: each compared with the shared rules, and
//! stale tokens proven to change nothing.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{ClaimToken, OwnerScope, PoisonReason, RunStatus, Scope};
use docket_core::store::rules::effects;
use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimedSchedule, ReleaseWake,
    RunStore, StoreError, StoreErrorKind,
};
use docket_postgres::testing;

fn abandon(now: i64, retry_at: i64, max: u32, mode: AbandonMode) -> AbandonPolicy {
    AbandonPolicy {
        expected_seq: 1,
        now: t(now),
        retry_at: t(retry_at),
        max_claim_abandons: NonZeroU32::new(max).expect("max"),
        mode,
    }
}

#[tokio::test]
async fn refresh_never_moves_backwards_and_release_only_obeys_the_current_token() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(100)).await;
    store
        .refresh_claim(&run.id, &lease.claim_token, t(50))
        .await
        .expect("refresh");
    assert_eq!(
        store
            .inspect_run(&SYSTEM, &run.id)
            .await
            .expect("info")
            .claimed_at,
        Some(t(100))
    );
    store
        .refresh_claim(&run.id, &lease.claim_token, t(150))
        .await
        .expect("refresh");
    assert_eq!(
        store
            .inspect_run(&SYSTEM, &run.id)
            .await
            .expect("info")
            .claimed_at,
        Some(t(150))
    );
    let before = snapshot(&store).await;
    for token in [
        ClaimToken::mint(),
        ClaimToken::new("not-a-uuid").expect("token"),
    ] {
        assert!(matches!(
            store.refresh_claim(&run.id, &token, t(200)).await,
            Err(StoreError::ClaimLost)
        ));
        store
            .release_claim(&run.id, &token, t(200))
            .await
            .expect("stale release is ok");
    }
    assert!(matches!(
        store
            .refresh_claim(&rid("nope"), &lease.claim_token, t(200))
            .await,
        Err(StoreError::ClaimLost)
    ));
    assert_eq!(snapshot(&store).await, before);
    let mut expected = testing::operational_state(&store, &run.id)
        .await
        .expect("ops");
    store
        .release_claim(&run.id, &lease.claim_token, t(300))
        .await
        .expect("release");
    assert!(effects::apply_release(
        &mut expected,
        &lease.claim_token,
        t(300)
    ));
    assert_eq!(
        testing::operational_state(&store, &run.id)
            .await
            .expect("ops"),
        expected
    );
    let after = snapshot(&store).await;
    store
        .release_claim(&run.id, &lease.claim_token, t(400))
        .await
        .expect("idempotent");
    assert_eq!(snapshot(&store).await, after);
}

#[tokio::test]
async fn abandon_reschedules_then_poisons_exactly_as_the_rules_say() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let mut now = 10;
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let lease = claim_one(&store, t(now)).await;
        let before = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        let policy = abandon(now, now + 5, 2, AbandonMode::Poisoning);
        let outcome = store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        let mut expected = before.clone();
        assert_eq!(
            effects::apply_abandon(&mut expected, 1, &lease.claim_token, &policy),
            outcome
        );
        assert_eq!(
            testing::operational_state(&store, &run.id)
                .await
                .expect("ops"),
            expected
        );
        outcomes.push(outcome);
        now += 5;
    }
    assert_eq!(
        outcomes,
        vec![
            AbandonOutcome::Rescheduled,
            AbandonOutcome::Rescheduled,
            AbandonOutcome::Poisoned
        ]
    );
    let info = store.inspect_run(&SYSTEM, &run.id).await.expect("info");
    assert_eq!(
        (info.claim_abandons, info.claim_attempts, info.wake_at),
        (2, 0, None)
    );
    assert_eq!(
        info.poison.map(|p| p.reason),
        Some(PoisonReason::MaxClaimAbandonsExceeded)
    );
    // Recovery: wake now, counters zeroed, the document untouched; a second call changes nothing.
    let recovered = store
        .retry_poisoned_run(&SYSTEM, &run.id, t(100))
        .await
        .expect("retry");
    assert_eq!(recovered, run);
    let info = store.inspect_run(&SYSTEM, &run.id).await.expect("info");
    assert_eq!(
        (
            info.wake_at,
            info.claim_attempts,
            info.claim_abandons,
            info.poison
        ),
        (Some(t(100)), 0, 0, None)
    );
    let before = snapshot(&store).await;
    store
        .retry_poisoned_run(&SYSTEM, &run.id, t(200))
        .await
        .expect("healthy no-op");
    assert_eq!(snapshot(&store).await, before);
}

#[tokio::test]
async fn non_poisoning_abandon_backs_off_exponentially_to_the_cap() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let mut wakes = Vec::new();
    let mut now = 1_000;
    for _ in 0..5 {
        let lease = claim_one(&store, t(now)).await;
        let mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: 100,
                cap_ms: 300,
            }),
        };
        let policy = abandon(now, now, 1, mode);
        let mut expected = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        let outcome = store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        assert_eq!(
            effects::apply_abandon(&mut expected, 1, &lease.claim_token, &policy),
            outcome
        );
        assert_eq!(
            testing::operational_state(&store, &run.id)
                .await
                .expect("ops"),
            expected
        );
        let wake = expected.wake_at.expect("wake");
        wakes.push(wake.millis_since(t(now)));
        now = (wake.as_micros() / 1_000) - 1_700_000_000_000;
    }
    assert_eq!(wakes, vec![100, 200, 300, 300, 300]);
}

/// The SQL backoff saturates like `rules::effects::backoff_wake` at the extremes.
#[tokio::test]
async fn backoff_arithmetic_saturates_like_the_rules() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    for (abandons, base, cap) in [
        (0, 1, 1),
        (30, u64::MAX / 2, u64::MAX),
        (45, 7, 1 << 40),
        (3, u64::MAX, u64::MAX),
    ] {
        let lease = claim_one(&store, t(0)).await;
        let mut state = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        state.claim_abandons = abandons;
        testing::write_operational_state(&store, &run.id, &state)
            .await
            .expect("write");
        let mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: base,
                cap_ms: cap,
            }),
        };
        let policy = abandon(0, 0, 1, mode);
        store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        let wake = testing::operational_state(&store, &run.id)
            .await
            .expect("ops")
            .wake_at;
        assert_eq!(
            wake,
            Some(effects::backoff_wake(t(0), abandons, base, cap)),
            "{abandons} {base} {cap}"
        );
        // Make the run claimable again for the next case.
        let mut state = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        state.wake_at = Some(t(0));
        testing::write_operational_state(&store, &run.id, &state)
            .await
            .expect("write");
    }
}

#[tokio::test]
async fn stale_abandons_change_nothing_and_invalid_policies_are_refused() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let good = abandon(1, 5, 3, AbandonMode::Poisoning);
    let before = snapshot(&store).await;
    let mut advanced = good;
    advanced.expected_seq = 7;
    for (token, policy) in [
        (ClaimToken::mint(), good),
        (ClaimToken::new("not-a-uuid").expect("token"), good),
        (lease.claim_token.clone(), advanced),
    ] {
        assert_eq!(
            store
                .abandon_claim(&run.id, &token, &policy)
                .await
                .expect("stale"),
            AbandonOutcome::Stale
        );
    }
    assert_eq!(
        store
            .abandon_claim(&rid("nope"), &lease.claim_token, &good)
            .await
            .expect("stale"),
        AbandonOutcome::Stale
    );
    let mut backwards = good;
    backwards.retry_at = t(0);
    assert_eq!(
        store
            .abandon_claim(&run.id, &lease.claim_token, &backwards)
            .await
            .expect_err("invalid")
            .kind(),
        StoreErrorKind::InvalidArgument
    );
    assert_eq!(snapshot(&store).await, before);
    // After a commit with the same token, the seq moved: the abandon is stale.
    let second = next(&run, t(2));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                second,
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            vec![],
        )
        .await
        .expect("commit");
    let before = snapshot(&store).await;
    assert_eq!(
        store
            .abandon_claim(&run.id, &lease.claim_token, &good)
            .await
            .expect("stale"),
        AbandonOutcome::Stale
    );
    assert_eq!(snapshot(&store).await, before);
}

#[tokio::test]
async fn poison_recovery_is_scoped_and_terminal_first() {
    let (store, _guard) = open().await;
    let owner = tenant("a");
    let run = start(&store, &owner, "r1", t(0)).await;
    claim_one(&store, t(1)).await;
    let mut poisoned = testing::operational_state(&store, &run.id)
        .await
        .expect("ops");
    poisoned.claim_token = None;
    poisoned.claimed_at = None;
    effects::apply_claim_poison(&mut poisoned, t(2));
    testing::write_operational_state(&store, &run.id, &poisoned)
        .await
        .expect("poison");
    let before = snapshot(&store).await;
    assert_eq!(
        store
            .retry_poisoned_run(&tenant("b").into(), &run.id, t(3))
            .await
            .expect_err("hidden")
            .kind(),
        StoreErrorKind::NotFound
    );
    assert_eq!(
        store
            .retry_poisoned_run(&Scope::Tenantless, &run.id, t(3))
            .await
            .expect_err("hidden")
            .kind(),
        StoreErrorKind::NotFound
    );
    assert_eq!(snapshot(&store).await, before);
    store
        .retry_poisoned_run(&(&owner).into(), &run.id, t(3))
        .await
        .expect("recover");
    // A terminal run is inactive, checked before anything else.
    let lease = claim_one(&store, t(4)).await;
    let finished = done(&run, t(5));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                finished,
                1,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Terminal),
                t(5),
            ),
            vec![],
        )
        .await
        .expect("finish");
    let before = snapshot(&store).await;
    assert_eq!(
        store
            .retry_poisoned_run(&SYSTEM, &run.id, t(6))
            .await
            .expect_err("inactive")
            .kind(),
        StoreErrorKind::InactiveRun
    );
    assert_eq!(snapshot(&store).await, before);
    let info = store.inspect_run(&SYSTEM, &run.id).await.expect("info");
    assert_eq!(info.run.status, RunStatus::Done);
}
