//! What each schedule of a committed moment does to the claim and the wake
//! (`docs/state-machines.md`, “Operational transitions”).

mod common;

use common::*;
use docket_core::model::{CheckpointType, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore};

#[tokio::test]
async fn retain_claim_keeps_the_token_and_restamps_claimed_at() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(7),
    )
    .await
    .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!((info.claimed_at, info.wake_at), (Some(t(7)), None));
    // The same token keeps committing.
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(8),
    )
    .await
    .unwrap();
    // A retained claim is not claimable by others while it is live.
    assert!(fx
        .store
        .claim_due(&policy(t(9), 5))
        .await
        .unwrap()
        .leases
        .is_empty());
}

#[tokio::test]
async fn immediate_release_wakes_at_the_commit_time() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
        t(4),
    )
    .await
    .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(4))));
    let again = fx.claim_one(t(4)).await;
    assert_ne!(again.claim_token, lease.claim_token);
    assert_eq!(again.checkpoint_seq, 2);
}

#[tokio::test]
async fn a_release_at_a_future_time_is_due_exactly_then() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.commit_next(
        &lease,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(500))),
        t(2),
    )
    .await
    .unwrap();
    assert_eq!(
        fx.store
            .claim_due(&policy(t(499), 5))
            .await
            .unwrap()
            .outcome_count(),
        0
    );
    assert_eq!(fx.claim_one(t(500)).await.run_id, lease.run_id);
}

#[tokio::test]
async fn an_external_park_has_no_wake_and_is_never_claimed() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    fx.commit_next(
        &lease,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::External),
        t(2),
    )
    .await
    .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!(info.run.status, RunStatus::Waiting);
    assert_eq!((info.claimed_at, info.wake_at), (None, None));
    assert_eq!(
        fx.store
            .claim_due(&policy(t(10_000_000), 5))
            .await
            .unwrap()
            .outcome_count(),
        0
    );
}

#[tokio::test]
async fn a_terminal_commit_finishes_the_run_for_good() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let done = fx
        .commit_next(
            &lease,
            RunStatus::Done,
            ClaimedSchedule::Release(ReleaseWake::Terminal),
            t(2),
        )
        .await
        .unwrap();
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!(info.run, done);
    assert_eq!(info.run.finished_at, Some(t(2)));
    assert_eq!((info.claimed_at, info.wake_at), (None, None));
    assert_eq!(
        fx.store
            .claim_due(&policy(t(10_000_000), 5))
            .await
            .unwrap()
            .outcome_count(),
        0
    );
}

#[tokio::test]
async fn unclaimed_wakes_map_to_the_same_effects() {
    let fx = fx().await;
    let cases = [
        (
            "imm",
            RunStatus::Running,
            ReleaseWake::Immediate,
            Some(t(3)),
        ),
        (
            "at",
            RunStatus::Running,
            ReleaseWake::At(t(90)),
            Some(t(90)),
        ),
        ("ext", RunStatus::Waiting, ReleaseWake::External, None),
        ("end", RunStatus::Cancelled, ReleaseWake::Terminal, None),
    ];
    for (id, status, wake, expected_wake) in cases {
        let run = fx.start(id, t(0)).await;
        let (next, events) = advance(&run, status, t(3));
        fx.store
            .commit_unclaimed(&Scope::System, 1, unclaimed(next, wake, t(3)), events)
            .await
            .unwrap();
        let info = fx.store.inspect_run(&Scope::System, &run.id).await.unwrap();
        assert_eq!(info.wake_at, expected_wake, "{id}");
        assert_eq!(info.claimed_at, None, "{id}");
        assert_eq!(info.run.status, status, "{id}");
    }
}

#[tokio::test]
async fn the_latest_checkpoint_type_is_recorded_with_each_commit() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    assert!(fx
        .snapshot()
        .contains("latest_checkpoint_type=\"run_initialized\""));
    let (next, events) = advance(&run, RunStatus::Running, t(1));
    let mut proposal = unclaimed(next, ReleaseWake::Immediate, t(1));
    proposal.checkpoint_type = CheckpointType::RetryScheduled;
    fx.store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .unwrap();
    assert!(fx
        .snapshot()
        .contains("latest_checkpoint_type=\"retry_scheduled\""));
}
