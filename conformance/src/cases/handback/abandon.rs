//! `abandon_claim`: the pre-execution hand-back, fenced on token and seq (`docs/state-machines.md`,
//! “Operational transitions”; `docs/storage-contract.md`, “Handing claims back”).

use crate::cases::prelude::*;

/// Abandons `lease` of a run still at `seq` at `now`, asking to wake at `retry_at`.
async fn abandon(env: &Env<'_>, lease: &ClaimLease, policy: &AbandonPolicy) -> AbandonOutcome {
    ok(
        env.store()
            .abandon_claim(&lease.run_id, &lease.claim_token, policy)
            .await,
        "abandon_claim",
    )
}

/// Abandons `lease` with a stale fence and proves the outcome is `Stale` and nothing changed.
async fn assert_stale(env: &Env<'_>, run_id: &RunId, token: &ClaimToken, policy: &AbandonPolicy) {
    let outcome = env
        .unchanged(env.store().abandon_claim(run_id, token, policy))
        .await;
    assert_eq!(outcome, AbandonOutcome::Stale);
}

/// An abandon reschedules at `retry_at`, releases the claim and hands the attempt back.
pub async fn abandon_reschedules_and_hands_the_attempt_back(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(5_000), 3);
    assert_eq!(
        abandon(env, &c.lease, &policy).await,
        AbandonOutcome::Rescheduled
    );
    let info = env.inspect(&c.run.id).await;
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));
    assert_eq!(
        (info.wake_at, info.claimed_at, info.poison),
        (Some(t(5_000)), None, None)
    );
}

/// An abandon touches neither the document, nor the seq, nor `updated_at`, nor the events.
pub async fn abandon_never_touches_the_document_or_events(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let events = env.all_events(&c.run.id).await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(5_000), 3);
    abandon(env, &c.lease, &policy).await;
    assert_eq!(env.fetch(&c.run.id).await, c.run);
    assert_eq!(env.all_events(&c.run.id).await, events);
}

/// An abandoned run is not claimable before `retry_at`; then it is claimed as attempt 1 with
/// a new token.
pub async fn an_abandoned_run_waits_for_retry_at_then_is_attempt_one(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(5_000), 3);
    abandon(env, &c.lease, &policy).await;
    let early = env
        .unchanged(
            env.store()
                .claim_due(&claim_policy(t(5_000).add_micros(-1), 5)),
        )
        .await;
    assert_eq!(early.outcome_count(), 0);
    let again = env.claim(t(5_000)).await;
    assert_eq!(again.claim_attempt, 1);
    assert_ne!(again.claim_token, c.lease.claim_token);
}

/// `retry_at == now` is allowed: the run is due again at once.
pub async fn abandon_with_retry_at_now_is_due_at_once(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(20), 3);
    assert_eq!(
        abandon(env, &c.lease, &policy).await,
        AbandonOutcome::Rescheduled
    );
    assert_eq!(env.claim(t(20)).await.run_id, c.run.id);
}

/// `max_claim_abandons = n` permits `n` reschedules; the next abandon poisons with its own
/// reason, keeping the abandon count at `n`.
async fn n_reschedules_then_poison(env: &Env<'_>, n: u32) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    for round in 1..=n {
        let at = t(i64::from(round) * 100);
        let lease = env.claim(at).await;
        let policy = abandon_policy(lease.checkpoint_seq, at, at.add_millis(50), n);
        assert_eq!(
            abandon(env, &lease, &policy).await,
            AbandonOutcome::Rescheduled,
            "abandon {round} of {n} reschedules"
        );
        assert_eq!(env.inspect(&run.id).await.claim_abandons, round);
    }
    let at = t(i64::from(n + 1) * 100);
    let lease = env.claim(at).await;
    let policy = abandon_policy(lease.checkpoint_seq, at, at.add_millis(50), n);
    assert_eq!(
        abandon(env, &lease, &policy).await,
        AbandonOutcome::Poisoned
    );
    let info = env.inspect(&run.id).await;
    assert_eq!((info.claim_abandons, info.claim_attempts), (n, 0));
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    let poison = info.poison.expect("poisoned");
    assert_eq!(
        (poison.poisoned_at, poison.reason),
        (at, PoisonReason::MaxClaimAbandonsExceeded)
    );
    let later = env
        .unchanged(env.store().claim_due(&claim_policy(t(10_000_000), 5)))
        .await;
    assert_eq!(later.outcome_count(), 0, "a poisoned run is never claimed");
}

/// With one abandon allowed: one reschedule, then poison.
pub async fn abandon_max_one_reschedules_once_then_poisons(env: &Env<'_>) {
    n_reschedules_then_poison(env, 1).await;
}

/// With two abandons allowed: two reschedules, then poison.
pub async fn abandon_max_two_reschedules_twice_then_poisons(env: &Env<'_>) {
    n_reschedules_then_poison(env, 2).await;
}

/// An abandon with a token that is not current is stale and changes nothing.
pub async fn abandon_with_a_wrong_token_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(5_000), 3);
    assert_stale(env, &c.run.id, &ClaimToken::mint(), &policy).await;
}

/// An abandon after the holder's first commit is stale (abandon only precedes execution).
pub async fn abandon_after_the_holders_first_commit_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.commit_to(&c.lease, &c.run, RunStatus::Running, t(20))
        .await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(30), t(5_000), 3);
    assert_stale(env, &c.run.id, &c.lease.claim_token, &policy).await;
}

/// An abandon of an unknown run is stale.
pub async fn abandon_of_an_unknown_run_is_stale(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    let policy = abandon_policy(1, t(20), t(5_000), 3);
    assert_stale(env, &rid("ghost"), &ClaimToken::mint(), &policy).await;
}

/// An abandon by a holder whose claim was stolen is stale and cannot disturb the thief.
pub async fn abandon_after_a_steal_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let thief = env.claim(t(10 + 60_001)).await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(70_000), t(80_000), 3);
    assert_stale(env, &c.run.id, &c.lease.claim_token, &policy).await;
    assert_eq!(
        env.inspect(&c.run.id).await.claimed_at,
        Some(thief.claimed_at)
    );
}

/// An abandon of a released run is stale.
pub async fn abandon_of_a_released_run_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    ok(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(15))
            .await,
        "release_claim",
    );
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(5_000), 3);
    assert_stale(env, &c.run.id, &c.lease.claim_token, &policy).await;
}

/// `retry_at` before `now` is an invalid argument and changes nothing.
pub async fn abandon_with_retry_before_now_is_an_invalid_argument(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(19), 3);
    env.rejected(
        K::InvalidArgument,
        env.store()
            .abandon_claim(&c.run.id, &c.lease.claim_token, &policy),
    )
    .await;
}

/// A backoff with `base_ms` 0 or a cap below its base is an invalid argument.
pub async fn abandon_with_a_malformed_backoff_is_an_invalid_argument(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    for (base_ms, cap_ms) in [(0, 10), (100, 50)] {
        let mut policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(20), 3);
        policy.mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff { base_ms, cap_ms }),
        };
        env.rejected(
            K::InvalidArgument,
            env.store()
                .abandon_claim(&c.run.id, &c.lease.claim_token, &policy),
        )
        .await;
    }
}

/// A non-poisoning abandon without backoff wakes at `retry_at` and never poisons.
pub async fn non_poisoning_abandons_wake_at_retry_at_and_never_poison(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    for round in 1..=4u32 {
        let at = t(i64::from(round) * 100);
        let lease = env.claim(at).await;
        let mut policy = abandon_policy(lease.checkpoint_seq, at, at.add_millis(7), 1);
        policy.mode = AbandonMode::NonPoisoning { backoff: None };
        assert_eq!(
            abandon(env, &lease, &policy).await,
            AbandonOutcome::Rescheduled
        );
        let info = env.inspect(&run.id).await;
        assert_eq!(info.wake_at, Some(at.add_millis(7)));
        assert_eq!((info.claim_abandons, info.poison), (round, None));
    }
}

/// A non-poisoning abandon with backoff ignores `retry_at` and wakes at
/// `now + min(base × 2^abandons_before, cap)`: +100, +200, +300, +300 for base 100, cap 300.
pub async fn non_poisoning_abandons_back_off_exponentially_to_the_cap(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let mut delays = Vec::new();
    for round in 1..=4i64 {
        let at = t(round * 1_000);
        let lease = env.claim(at).await;
        let mut policy = abandon_policy(lease.checkpoint_seq, at, at.add_millis(900), 1);
        policy.mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: 100,
                cap_ms: 300,
            }),
        };
        assert_eq!(
            abandon(env, &lease, &policy).await,
            AbandonOutcome::Rescheduled
        );
        let wake = env.inspect(&run.id).await.wake_at.expect("rescheduled");
        delays.push(wake.millis_since(at));
    }
    assert_eq!(delays, [100, 200, 300, 300]);
    assert_eq!(env.inspect(&run.id).await.claim_abandons, 4);
}

/// Abandons hand attempts back, so many abandons never reach attempt poison.
pub async fn abandons_never_advance_attempt_poison(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    for round in 1..=5i64 {
        let at = t(round * 100);
        let mut claim = claim_policy(at, 1);
        claim.max_claim_attempts = nz(3);
        let batch = env.claim_all(&claim).await;
        assert_eq!(batch.leases.len(), 1, "round {round} launches");
        assert_eq!(batch.leases[0].claim_attempt, 1);
        let mut policy = abandon_policy(batch.leases[0].checkpoint_seq, at, at, 1);
        policy.mode = AbandonMode::NonPoisoning { backoff: None };
        abandon(env, &batch.leases[0], &policy).await;
    }
    let info = env.inspect(&run.id).await;
    assert_eq!((info.claim_attempts, info.poison), (0, None));
}

/// Committed progress resets the abandon count.
pub async fn a_commit_resets_the_abandon_count(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(20), 3);
    abandon(env, &c.lease, &policy).await;
    let lease = env.claim(t(30)).await;
    assert_eq!(env.inspect(&c.run.id).await.claim_abandons, 1);
    env.commit_to(&lease, &c.run, RunStatus::Running, t(40))
        .await;
    let info = env.inspect(&c.run.id).await;
    assert_eq!((info.claim_abandons, info.claim_attempts), (0, 0));
}

/// The backoff cap holds whatever the doubling would give: base 40 and cap 100 wake at +40,
/// +80, then +100 for every further abandon; a cap equal to the base never grows at all.
pub async fn non_poisoning_backoff_never_exceeds_its_cap(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for (id, base_ms, cap_ms, expected) in [
        ("capped", 40, 100, [40, 80, 100, 100, 100, 100]),
        ("flat", 70, 70, [70; 6]),
    ] {
        let run = env.start(&graph, id, t(0)).await;
        let mut delays = Vec::new();
        for round in 1..=6i64 {
            let at = t(round * 10_000);
            let lease = env.claim(at).await;
            assert_eq!(lease.run_id, run.id, "the only due run is claimed");
            let mut policy = abandon_policy(lease.checkpoint_seq, at, at, 1);
            policy.mode = AbandonMode::NonPoisoning {
                backoff: Some(AbandonBackoff { base_ms, cap_ms }),
            };
            assert_eq!(
                abandon(env, &lease, &policy).await,
                AbandonOutcome::Rescheduled
            );
            let wake = env.inspect(&run.id).await.wake_at.expect("rescheduled");
            delays.push(wake.millis_since(at));
        }
        assert_eq!(delays, expected, "{id}: base {base_ms}, cap {cap_ms}");
        let moment = moment_to(&run, RunStatus::Cancelled, t(100_000));
        ok(
            env.store()
                .commit_unclaimed(
                    &Scope::System,
                    run.checkpoint_seq,
                    unclaimed_commit(&moment, t(100_000)),
                    moment.events.clone(),
                )
                .await,
            "cancel the run so the next one is the only due run",
        );
    }
}
