//! `retry_poisoned_run`: terminal first, scoped, idempotent, consuming no sequence.

use crate::cases::prelude::*;

/// Poisons run `id` (tenant `owner`) by attempts: one launch allowed, released, claimed again.
async fn poisoned(env: &Env<'_>, owner: &OwnerScope, id: &str) -> Run {
    let graph = env.publish_tiny(owner).await;
    let run = env.start(&graph, id, t(0)).await;
    let mut policy = claim_policy(t(1), 1);
    policy.max_claim_attempts = nz(1);
    let lease = env.claim_all(&policy).await.leases.remove(0);
    ok(
        env.store()
            .release_claim(&run.id, &lease.claim_token, t(2))
            .await,
        "release_claim",
    );
    policy.now = t(3);
    assert_eq!(env.claim_all(&policy).await.poisoned.len(), 1);
    run
}

/// Recovering a run poisoned by attempts wakes it at `now` with every counter zeroed, and
/// returns the unchanged document.
pub async fn retry_poisoned_recovers_an_attempts_poison(env: &Env<'_>) {
    let run = poisoned(env, &OwnerScope::Tenantless, "r1").await;
    let returned = ok(
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(50))
            .await,
        "retry_poisoned_run",
    );
    assert_eq!(returned, run);
    let info = env.inspect(&run.id).await;
    assert_eq!(info.poison, None);
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(50)), None));
    assert_eq!(info.run, run, "recovery consumes no sequence");
    assert_eq!(env.claim(t(50)).await.claim_attempt, 1);
}

/// Recovering a run poisoned by abandons zeroes the abandon count too.
pub async fn retry_poisoned_recovers_an_abandons_poison(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let policy = abandon_policy(c.lease.checkpoint_seq, t(20), t(20), 1);
    ok(
        env.store()
            .abandon_claim(&c.run.id, &c.lease.claim_token, &policy)
            .await,
        "abandon_claim",
    );
    let lease = env.claim(t(30)).await;
    let policy = abandon_policy(lease.checkpoint_seq, t(30), t(30), 1);
    let outcome = ok(
        env.store()
            .abandon_claim(&c.run.id, &lease.claim_token, &policy)
            .await,
        "abandon_claim",
    );
    assert_eq!(outcome, AbandonOutcome::Poisoned);
    ok(
        env.store()
            .retry_poisoned_run(&Scope::System, &c.run.id, t(40))
            .await,
        "retry_poisoned_run",
    );
    let info = env.inspect(&c.run.id).await;
    assert_eq!(
        (info.poison, info.claim_abandons, info.wake_at),
        (None, 0, Some(t(40)))
    );
}

/// Recovering a healthy run returns it unchanged and changes nothing.
pub async fn retry_poisoned_on_a_healthy_run_changes_nothing(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let returned = env
        .unchanged(
            env.store()
                .retry_poisoned_run(&Scope::System, &c.run.id, t(50)),
        )
        .await;
    assert_eq!(returned, c.run);
}

/// A second recovery is a no-op.
pub async fn retry_poisoned_twice_changes_nothing_the_second_time(env: &Env<'_>) {
    let run = poisoned(env, &OwnerScope::Tenantless, "r1").await;
    ok(
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(50))
            .await,
        "retry_poisoned_run",
    );
    env.unchanged(
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(60)),
    )
    .await;
    assert_eq!(env.inspect(&run.id).await.wake_at, Some(t(50)));
}

/// Recovering a terminal run is `InactiveRun` and changes nothing.
pub async fn retry_poisoned_on_a_terminal_run_is_inactive(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.commit_to(&c.lease, &c.run, RunStatus::Cancelled, t(20))
        .await;
    env.rejected(
        K::InactiveRun,
        env.store()
            .retry_poisoned_run(&Scope::System, &c.run.id, t(50)),
    )
    .await;
}

/// Recovery is scoped: another tenant gets not found; the owner recovers.
pub async fn retry_poisoned_is_scoped_to_the_owner(env: &Env<'_>) {
    let run = poisoned(env, &tenant("a"), "r1").await;
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        env.rejected(
            K::NotFound,
            env.store().retry_poisoned_run(&scope, &run.id, t(50)),
        )
        .await;
    }
    ok(
        env.store()
            .retry_poisoned_run(&tenant_scope("a"), &run.id, t(50))
            .await,
        "retry_poisoned_run in the owner's scope",
    );
    assert_eq!(env.inspect(&run.id).await.poison, None);
}

/// Recovering an unknown run is not found.
pub async fn retry_poisoned_of_an_unknown_run_is_not_found(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    env.rejected(
        K::NotFound,
        env.store()
            .retry_poisoned_run(&Scope::System, &rid("ghost"), t(50)),
    )
    .await;
}
