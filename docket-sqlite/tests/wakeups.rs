//! In-process wake hints: sent after writes whose wake is due at the caller's `now`, silent
//! otherwise. A hint is sent before the write's future resolves, so "no hint" is checked
//! without waiting: the stream is simply not ready.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{RunStatus, Scope};
use docket_core::store::{
    AbandonMode, AbandonPolicy, ClaimedSchedule, ReleaseWake, RunStore, Wakeups,
};
use futures::{FutureExt, StreamExt};

fn hinted(stream: &mut Wakeups) -> bool {
    let mut seen = false;
    while let Some(Some(())) = stream.next().now_or_never() {
        seen = true;
    }
    seen
}

#[tokio::test]
async fn initializing_a_due_run_hints_and_a_future_one_does_not() {
    let fx = fx().await;
    let mut hints = fx.store.wakeups().expect("in-process wakeups");
    fx.start("later", t(10)).await;
    assert!(!hinted(&mut hints));
    fx.start("now", t(0)).await;
    assert!(hinted(&mut hints));
}

#[tokio::test]
async fn commits_hint_only_for_due_wakes() {
    let fx = fx().await;
    let mut hints = fx.store.wakeups().unwrap();
    fx.start("r1", t(0)).await;
    assert!(hinted(&mut hints));
    let lease = fx.claim_one(t(1)).await;
    assert!(!hinted(&mut hints), "claims are silent");
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(2),
    )
    .await
    .unwrap();
    assert!(!hinted(&mut hints), "retaining the claim is silent");
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(100))),
        t(3),
    )
    .await
    .unwrap();
    assert!(!hinted(&mut hints), "a future wake is silent");
    let lease = fx.claim_one(t(100)).await;
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(90))),
        t(101),
    )
    .await
    .unwrap();
    assert!(hinted(&mut hints), "an already due wake hints");
    let lease = fx.claim_one(t(101)).await;
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
        t(102),
    )
    .await
    .unwrap();
    assert!(hinted(&mut hints), "an immediate release hints");
}

#[tokio::test]
async fn releases_and_abandons_are_silent_but_poison_recovery_hints() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let mut hints = fx.store.wakeups().unwrap();
    let lease = fx.claim_one(t(1)).await;
    fx.store
        .release_claim(&lease.run_id, &lease.claim_token, t(2))
        .await
        .unwrap();
    assert!(!hinted(&mut hints));
    let lease = fx.claim_one(t(2)).await;
    let outcome = fx
        .store
        .abandon_claim(
            &lease.run_id,
            &lease.claim_token,
            &AbandonPolicy {
                expected_seq: 1,
                now: t(3),
                retry_at: t(3),
                max_claim_abandons: NonZeroU32::new(1).unwrap(),
                mode: AbandonMode::Poisoning,
            },
        )
        .await
        .unwrap();
    assert_eq!(outcome, docket_core::store::AbandonOutcome::Rescheduled);
    assert!(!hinted(&mut hints));
    let lease = fx.claim_one(t(3)).await;
    fx.store
        .abandon_claim(
            &lease.run_id,
            &lease.claim_token,
            &AbandonPolicy {
                expected_seq: 1,
                now: t(4),
                retry_at: t(4),
                max_claim_abandons: NonZeroU32::new(1).unwrap(),
                mode: AbandonMode::Poisoning,
            },
        )
        .await
        .unwrap();
    assert!(!hinted(&mut hints));
    fx.store
        .retry_poisoned_run(&Scope::System, &lease.run_id, t(5))
        .await
        .unwrap();
    assert!(hinted(&mut hints));
    // A healthy run is not "recovered": no hint.
    fx.store
        .retry_poisoned_run(&Scope::System, &lease.run_id, t(6))
        .await
        .unwrap();
    assert!(!hinted(&mut hints));
}

#[tokio::test]
async fn a_rejected_write_sends_no_hint() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let mut hints = fx.store.wakeups().unwrap();
    let (next, events) = advance(&run, RunStatus::Running, t(1));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            0,
            unclaimed(next, ReleaseWake::Immediate, t(1)),
            events,
        )
        .await
        .unwrap_err();
    assert!(!hinted(&mut hints));
}

#[tokio::test]
async fn every_subscriber_gets_the_hint_and_the_stream_ends_with_the_store() {
    let fx = fx().await;
    let mut first = fx.store.wakeups().unwrap();
    let mut second = fx.store.wakeups().unwrap();
    fx.start("r1", t(0)).await;
    assert!(hinted(&mut first) && hinted(&mut second));
    let Fx { store, .. } = fx;
    drop(store);
    assert_eq!(first.next().await, None);
}
