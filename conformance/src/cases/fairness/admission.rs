//! The admission marker: set by a tenant-fair lease, kept while the run's cooperative work
//! goes on (retained claims, immediate hand-backs, releases, steals), cleared when it ends
//! (timed, external and terminal releases, signals, abandons, poisons, poison recovery).

use super::{backlog, fair, leased};
use crate::cases::prelude::*;

/// Starts tenant `a`'s run `id` due at `t(1)` and claims it tenant-fair at `t(5)`.
async fn admitted(env: &Env<'_>, id: &str) -> (Run, ClaimLease) {
    backlog(env, &[("a", id, 1)]).await;
    let mut batch = env.claim_all(&fair(t(5), 1)).await;
    assert_eq!(leased(&batch), [id]);
    let lease = batch.leases.remove(0);
    let info = env.inspect(&lease.run_id).await;
    assert_eq!(info.admitted_at, Some(t(5)), "a fair lease admits the run");
    (info.run, lease)
}

/// Commits `run → status` under `lease` with `schedule` at `now`.
async fn commit(
    env: &Env<'_>,
    lease: &ClaimLease,
    run: &Run,
    status: RunStatus,
    schedule: ClaimedSchedule,
    now: Timestamp,
) -> RunInfo {
    let moment = moment_to(run, status, now);
    let proposal = with_schedule(claimed_commit(&moment, &lease.claim_token, now), schedule);
    ok(
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone())
            .await,
        "commit_claimed",
    );
    env.inspect(&run.id).await
}

/// Retaining the claim, handing it back for an immediate wake, releasing it, claiming the
/// run again and stealing it all keep the first admission time.
pub async fn cooperative_work_keeps_the_admission(env: &Env<'_>) {
    let (run, lease) = admitted(env, "r1").await;
    let retained = commit(
        env,
        &lease,
        &run,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(6),
    )
    .await;
    assert_eq!(retained.admitted_at, Some(t(5)));
    let handed_back = commit(
        env,
        &lease,
        &retained.run,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
        t(7),
    )
    .await;
    assert_eq!(handed_back.admitted_at, Some(t(5)));
    let again = env.claim_all(&fair(t(8), 1)).await;
    assert_eq!(leased(&again), ["r1"]);
    assert_eq!(env.inspect(&run.id).await.admitted_at, Some(t(5)));
    ok(
        env.store()
            .release_claim(&run.id, &again.leases[0].claim_token, t(9))
            .await,
        "release_claim",
    );
    assert_eq!(env.inspect(&run.id).await.admitted_at, Some(t(5)));
    env.claim_all(&fair(t(10), 1)).await;
    let stolen = env.claim_all(&fair(t(70_000), 1)).await;
    assert_eq!(leased(&stolen), ["r1"]);
    assert_eq!(env.inspect(&run.id).await.admitted_at, Some(t(5)));
}

/// A claimed commit that releases for a timed, an external or a terminal wake ends the
/// admission.
pub async fn timed_external_and_terminal_releases_clear_the_admission(env: &Env<'_>) {
    let cases = [
        ("timed", RunStatus::Running, ReleaseWake::At(t(50))),
        ("external", RunStatus::Waiting, ReleaseWake::External),
        ("terminal", RunStatus::Done, ReleaseWake::Terminal),
    ];
    for (id, status, wake) in cases {
        let (run, lease) = admitted(env, id).await;
        let info = commit(
            env,
            &lease,
            &run,
            status,
            ClaimedSchedule::Release(wake),
            t(6),
        )
        .await;
        assert_eq!(info.admitted_at, None, "{id}");
    }
}

/// A signal (an unclaimed commit) ends the admission, even one that wakes the run at once.
pub async fn a_signal_clears_the_admission(env: &Env<'_>) {
    let (run, _lease) = admitted(env, "r1").await;
    let moment = moment_to(&run, RunStatus::Running, t(6));
    ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq,
                unclaimed_commit(&moment, t(6)),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    let info = env.inspect(&run.id).await;
    assert_eq!(info.wake_at, Some(t(6)));
    assert_eq!(info.admitted_at, None);
}

/// An abandon ends the admission, and so does the poison of the claim after it; recovering
/// the poisoned run does not restore it.
pub async fn abandons_poisons_and_recovery_clear_the_admission(env: &Env<'_>) {
    let (run, lease) = admitted(env, "r1").await;
    let policy = AbandonPolicy {
        mode: AbandonMode::NonPoisoning { backoff: None },
        ..abandon_policy(run.checkpoint_seq, t(6), t(6), 1)
    };
    let outcome = ok(
        env.store()
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await,
        "abandon_claim",
    );
    assert_eq!(outcome, AbandonOutcome::Rescheduled);
    assert_eq!(env.inspect(&run.id).await.admitted_at, None);
    let exhausted = ClaimRequest {
        max_claim_attempts: nz(1),
        ..fair(t(7), 1)
    };
    let first = env.claim_all(&exhausted).await;
    assert_eq!(leased(&first), ["r1"]);
    assert_eq!(env.inspect(&run.id).await.admitted_at, Some(t(7)));
    let poisoning = ClaimRequest {
        now: t(70_000),
        ..exhausted
    };
    let poisoned = env.claim_all(&poisoning).await;
    assert_eq!(poisoned.poisoned.len(), 1);
    let info = env.inspect(&run.id).await;
    assert!(info.is_poisoned());
    assert_eq!(info.admitted_at, None);
    ok(
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(70_001))
            .await,
        "retry_poisoned_run",
    );
    assert_eq!(env.inspect(&run.id).await.admitted_at, None);
}
