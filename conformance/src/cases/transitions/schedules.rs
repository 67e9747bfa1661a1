//! Claimed-commit schedules (`docs/state-machines.md`, “Operational transitions”; scenario 14 of
//! `docs/scenarios.md`): what each does to the claim and the wake, and which statuses each fits.

use crate::cases::prelude::*;

/// Commits `c.run → status` with `schedule` at `t(20)` and returns the projection after.
async fn commit_with(
    env: &Env<'_>,
    c: &Claimed,
    status: RunStatus,
    schedule: ClaimedSchedule,
) -> RunInfo {
    let moment = moment_to(&c.run, status, t(20));
    let proposal = with_schedule(
        claimed_commit(&moment, &c.lease.claim_token, t(20)),
        schedule,
    );
    let stored = ok(
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone())
            .await,
        "commit_claimed",
    );
    assert_eq!(stored.status, status);
    assert_eq!(stored.checkpoint_seq, c.run.checkpoint_seq + 1);
    env.inspect(&c.run.id).await
}

/// Asserts the old holder's claim is gone: its next commit loses the fence.
async fn assert_claim_released(env: &Env<'_>, c: &Claimed) {
    env.assert_fenced_out(&c.run.id, &c.lease.claim_token, t(30))
        .await;
}

/// Retaining the claim keeps the token, re-stamps `claimed_at` to the commit's `now`, and
/// leaves no wake; the holder may commit again.
pub async fn retain_claim_keeps_the_claim_restamped_without_a_wake(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let info = commit_with(env, &c, RunStatus::Running, ClaimedSchedule::RetainClaim).await;
    assert_eq!(info.claimed_at, Some(t(20)));
    assert_eq!(info.wake_at, None);
    let again = env
        .commit_to(&c.lease, &info.run, RunStatus::Running, t(30))
        .await;
    assert_eq!(again.checkpoint_seq, info.run.checkpoint_seq + 1);
}

/// An immediate release clears the claim and wakes at the commit's `now`.
pub async fn an_immediate_release_wakes_at_now_and_clears_the_claim(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let info = commit_with(
        env,
        &c,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    )
    .await;
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(20)), None));
    assert_claim_released(env, &c).await;
    assert_eq!(env.claim(t(20)).await.run_id, c.run.id);
}

/// A timed release wakes exactly at its instant and not a microsecond before.
pub async fn a_timed_release_wakes_exactly_at_its_instant(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let info = commit_with(
        env,
        &c,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(5_000))),
    )
    .await;
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(5_000)), None));
    assert_claim_released(env, &c).await;
    let early = env
        .unchanged(
            env.store()
                .claim_due(&claim_policy(t(5_000).add_micros(-1), 3)),
        )
        .await;
    assert_eq!(early.outcome_count(), 0);
    assert_eq!(env.claim(t(5_000)).await.run_id, c.run.id);
}

/// An external release of a waiting run leaves neither wake nor claim: only a signal helps.
pub async fn an_external_release_of_a_waiting_run_leaves_neither_wake_nor_claim(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let info = commit_with(
        env,
        &c,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::External),
    )
    .await;
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    assert_claim_released(env, &c).await;
    let later = env
        .unchanged(env.store().claim_due(&claim_policy(t(1_000_000), 3)))
        .await;
    assert_eq!(later.outcome_count(), 0);
}

async fn terminal_release(env: &Env<'_>, status: RunStatus) {
    let c = env.claimed("r1").await;
    let info = commit_with(
        env,
        &c,
        status,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
    )
    .await;
    assert_eq!(
        (info.wake_at, info.claimed_at, info.poison),
        (None, None, None)
    );
    assert_eq!(info.run.finished_at, Some(t(20)));
    assert_claim_released(env, &c).await;
    let later = env
        .unchanged(env.store().claim_due(&claim_policy(t(1_000_000), 3)))
        .await;
    assert_eq!(later.outcome_count(), 0);
}

/// A terminal release of a done run leaves neither wake nor claim, for good.
pub async fn a_terminal_release_of_a_done_run_never_wakes(env: &Env<'_>) {
    terminal_release(env, RunStatus::Done).await;
}

/// A terminal release of a failed run leaves neither wake nor claim, for good.
pub async fn a_terminal_release_of_a_failed_run_never_wakes(env: &Env<'_>) {
    terminal_release(env, RunStatus::Failed).await;
}

/// A terminal release of a cancelled run leaves neither wake nor claim, for good.
pub async fn a_terminal_release_of_a_cancelled_run_never_wakes(env: &Env<'_>) {
    terminal_release(env, RunStatus::Cancelled).await;
}

async fn misfit(env: &Env<'_>, status: RunStatus, schedule: ClaimedSchedule) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, status, t(20));
    let proposal = with_schedule(
        claimed_commit(&moment, &c.lease.claim_token, t(20)),
        schedule,
    );
    env.rejected(
        K::InvalidTransition,
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone()),
    )
    .await;
}

/// Retaining the claim requires a running run (a waiting one cannot be held).
pub async fn retain_claim_with_a_waiting_run_is_invalid(env: &Env<'_>) {
    misfit(env, RunStatus::Waiting, ClaimedSchedule::RetainClaim).await;
}

/// Retaining the claim of a terminal run is invalid.
pub async fn retain_claim_with_a_done_run_is_invalid(env: &Env<'_>) {
    misfit(env, RunStatus::Done, ClaimedSchedule::RetainClaim).await;
}

/// An immediate wake requires a running run.
pub async fn an_immediate_wake_for_a_waiting_run_is_invalid(env: &Env<'_>) {
    misfit(
        env,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    )
    .await;
}

/// A timed wake requires a running run.
pub async fn a_timed_wake_for_a_cancelled_run_is_invalid(env: &Env<'_>) {
    misfit(
        env,
        RunStatus::Cancelled,
        ClaimedSchedule::Release(ReleaseWake::At(t(100))),
    )
    .await;
}

/// An external park requires a waiting run.
pub async fn an_external_park_for_a_running_run_is_invalid(env: &Env<'_>) {
    misfit(
        env,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::External),
    )
    .await;
}

/// A terminal park requires a terminal run.
pub async fn a_terminal_park_for_a_running_run_is_invalid(env: &Env<'_>) {
    misfit(
        env,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
    )
    .await;
}

/// A terminal run cannot be given a wake.
pub async fn an_immediate_wake_for_a_done_run_is_invalid(env: &Env<'_>) {
    misfit(
        env,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    )
    .await;
}
