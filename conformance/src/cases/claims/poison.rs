//! Attempts and poison (`docs/claim-order.md`, “Lease or poison”; scenarios 106, 111 and 112 of
//! `docs/scenarios.md`).

use super::basics::{assert_nothing_due, release};
use crate::cases::prelude::*;

fn policy_with_max(now: Timestamp, limit: u32, max_attempts: u32) -> ClaimRequest {
    let mut policy = claim_policy(now, limit);
    policy.max_claim_attempts = nz(max_attempts);
    policy
}

/// `max_claim_attempts = n` allows exactly `n` launches; the next claim need poisons the run
/// (attempts stay `n`, no token, no wake) and it is never claimed again.
async fn n_launches_then_poison(env: &Env<'_>, n: u32) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    for attempt in 1..=n {
        let at = t(i64::from(attempt) * 10);
        let batch = env.claim_all(&policy_with_max(at, 1, n)).await;
        assert_eq!(batch.leases.len(), 1, "launch {attempt} of {n}");
        assert_eq!(batch.leases[0].claim_attempt, attempt);
        release(env, &batch.leases[0], at.add_millis(1)).await;
    }
    let poison_at = t(1_000);
    let batch = env.claim_all(&policy_with_max(poison_at, 1, n)).await;
    assert!(
        batch.leases.is_empty(),
        "a poisoned candidate is never a lease"
    );
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(batch.poisoned[0].run_id, run.id);
    assert_eq!(batch.poisoned[0].poisoned_at, poison_at);
    assert_eq!(
        batch.poisoned[0].reason,
        PoisonReason::MaxClaimAttemptsExceeded
    );
    let info = env.inspect(&run.id).await;
    assert_eq!(info.claim_attempts, n);
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    let poison = info.poison.expect("poisoned");
    assert_eq!(
        (poison.poisoned_at, poison.reason),
        (poison_at, PoisonReason::MaxClaimAttemptsExceeded)
    );
    assert_nothing_due(env, &policy_with_max(t(10_000_000), 5, n)).await;
}

/// One allowed attempt: one launch, then poison.
pub async fn max_attempts_one_allows_one_launch_then_poisons(env: &Env<'_>) {
    n_launches_then_poison(env, 1).await;
}

/// Two allowed attempts: two launches, then poison.
pub async fn max_attempts_two_allows_two_launches_then_poisons(env: &Env<'_>) {
    n_launches_then_poison(env, 2).await;
}

/// Three allowed attempts: three launches, then poison.
pub async fn max_attempts_three_allows_three_launches_then_poisons(env: &Env<'_>) {
    n_launches_then_poison(env, 3).await;
}

/// Poisoning touches neither the document, nor the seq, nor the events.
pub async fn poison_leaves_the_document_and_events_untouched(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let events = env.all_events(&c.run.id).await;
    release(env, &c.lease, t(11)).await;
    let batch = env.claim_all(&policy_with_max(t(12), 1, 1)).await;
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(env.fetch(&c.run.id).await, c.run);
    assert_eq!(env.all_events(&c.run.id).await, events);
}

/// Expired-claim steals count as attempts too.
pub async fn steals_count_toward_attempt_poison(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "r1", t(0)).await;
    let first = env.claim_all(&policy_with_max(t(1), 1, 2)).await;
    assert_eq!(first.leases[0].claim_attempt, 1);
    let steal = env.claim_all(&policy_with_max(t(60_002), 1, 2)).await;
    assert_eq!(steal.leases.len(), 1);
    assert_eq!(steal.leases[0].claim_attempt, 2);
    let third = env.claim_all(&policy_with_max(t(120_003), 1, 2)).await;
    assert_eq!((third.leases.len(), third.poisoned.len()), (0, 1));
}

/// Leases and poison outcomes share one limit.
pub async fn leases_and_poisons_share_one_limit(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for (id, wake) in [("p1", 0), ("p2", 1)] {
        env.start_waking(&graph, id, t(0), t(wake)).await;
    }
    for at in [2, 3] {
        let lease = env.claim(t(at)).await;
        release(env, &lease, t(at)).await;
    }
    env.start_waking(&graph, "fresh", t(0), t(4)).await;
    let batch = env.claim_all(&policy_with_max(t(10), 2, 1)).await;
    assert_eq!(batch.outcome_count(), 2);
    assert_eq!(
        batch.poisoned.len(),
        2,
        "the two oldest candidates are poisoned"
    );
    let rest = env.claim_all(&policy_with_max(t(10), 2, 1)).await;
    assert_eq!(rest.leases.len(), 1);
    assert_eq!(rest.leases[0].run_id, rid("fresh"));
}

/// A poisoned head consumes its class's reserved slot as an outcome.
pub async fn a_poisoned_head_consumes_its_class_reservation(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start_waking(&graph, "e1", t(0), t(1)).await;
    env.claim(t(1)).await;
    env.start_waking(&graph, "r1", t(0), t(2)).await;
    env.start_waking(&graph, "r2", t(0), t(3)).await;
    let lease = env.claim(t(2)).await;
    assert_eq!(lease.run_id, rid("r1"));
    release(env, &lease, t(2)).await;
    // r1 (attempts 1, wake 2) heads the ready class; with max 1 it poisons.
    let batch = env.claim_all(&policy_with_max(t(60_002), 2, 1)).await;
    assert_eq!(batch.outcome_count(), 2);
    assert_eq!(
        batch.poisoned.len(),
        2,
        "e1 and r1 both exceeded one attempt"
    );
    let mut poisoned: Vec<&str> = batch.poisoned.iter().map(|p| p.run_id.as_str()).collect();
    poisoned.sort_unstable();
    assert_eq!(poisoned, ["e1", "r1"]);
    let rest = env.claim_all(&policy_with_max(t(60_002), 2, 1)).await;
    assert_eq!(rest.leases.len(), 1);
    assert_eq!(rest.leases[0].run_id, rid("r2"));
}

/// Committed progress between claims keeps a run healthy: only consecutive attempts count.
pub async fn committed_progress_keeps_a_run_from_attempt_poison(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let mut run = env.start(&graph, "r1", t(0)).await;
    for round in 0..4i64 {
        let at = t(round * 100 + 1);
        let batch = env.claim_all(&policy_with_max(at, 1, 1)).await;
        assert_eq!(batch.leases.len(), 1, "round {round} launches");
        let moment = moment_to(&run, RunStatus::Running, at);
        let proposal = with_schedule(
            claimed_commit(&moment, &batch.leases[0].claim_token, at),
            ClaimedSchedule::Release(ReleaseWake::Immediate),
        );
        run = ok(
            env.store()
                .commit_claimed(&Scope::System, proposal, moment.events.clone())
                .await,
            "commit_claimed",
        );
    }
    assert_eq!(env.inspect(&run.id).await.poison, None);
}
