//! `release_claim`: token-guarded, never disturbing a newer claim.

use crate::cases::prelude::*;

/// After a steal, the old token can neither release nor commit; the thief can.
pub async fn a_steal_invalidates_the_old_token_everywhere(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let thief = env.claim(t(10 + 60_001)).await;
    env.unchanged(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(70_000)),
    )
    .await;
    env.assert_fenced_out(&c.run.id, &c.lease.claim_token, t(70_000))
        .await;
    let committed = env
        .commit_to(&thief, &c.run, RunStatus::Running, t(70_001))
        .await;
    assert_eq!(
        committed.checkpoint_seq,
        c.run.checkpoint_seq + 1,
        "the thief commits"
    );
}

/// Releasing with the current token clears the claim, wakes at the release time and keeps
/// attempts and the committed run.
pub async fn release_wakes_at_the_release_time_and_keeps_attempts(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    ok(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(42))
            .await,
        "release_claim",
    );
    let info = env.inspect(&c.run.id).await;
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(42)), None));
    assert_eq!(info.claim_attempts, 1);
    assert_eq!(info.run, c.run);
}

/// A release with a token that is not current is a harmless no-op.
pub async fn a_stale_release_is_a_harmless_no_op(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.unchanged(
        env.store()
            .release_claim(&c.run.id, &ClaimToken::mint(), t(42)),
    )
    .await;
    assert_eq!(env.inspect(&c.run.id).await.claimed_at, Some(t(10)));
}

/// Releasing an unknown run is a harmless no-op.
pub async fn releasing_an_unknown_run_is_a_no_op(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    env.unchanged(
        env.store()
            .release_claim(&rid("ghost"), &ClaimToken::mint(), t(42)),
    )
    .await;
}

/// Releasing twice is idempotent: the second release changes nothing.
pub async fn releasing_twice_is_idempotent(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    ok(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(42))
            .await,
        "release_claim",
    );
    env.unchanged(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(50)),
    )
    .await;
    assert_eq!(env.inspect(&c.run.id).await.wake_at, Some(t(42)));
}

/// A late release by a superseded holder never disturbs the newer claim.
pub async fn a_late_release_never_disturbs_a_newer_claim(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let thief = env.claim(t(10 + 60_001)).await;
    env.unchanged(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(70_000)),
    )
    .await;
    let info = env.inspect(&c.run.id).await;
    assert_eq!(info.claimed_at, Some(thief.claimed_at));
}

/// Releases and claims never change the committed document or `updated_at`.
pub async fn operational_changes_never_touch_the_document(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    ok(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(30))
            .await,
        "release_claim",
    );
    let again = env.claim(t(40)).await;
    assert_eq!(env.fetch(&c.run.id).await, c.run);
    assert_eq!(env.fetch(&again.run_id).await.updated_at, c.run.updated_at);
}
