//! What a claim is and when a run can be claimed.

use docket_core::store::ClaimPolicy;

use crate::cases::prelude::*;

/// Releases `lease` at `now`, asserting success.
pub(super) async fn release(env: &Env<'_>, lease: &ClaimLease, now: Timestamp) {
    ok(
        env.store()
            .release_claim(&lease.run_id, &lease.claim_token, now)
            .await,
        "release_claim",
    );
}

/// Asserts nothing is claimable under `policy` and the attempt changed nothing.
pub(super) async fn assert_nothing_due(env: &Env<'_>, policy: &ClaimRequest) {
    let batch = env.unchanged(env.store().claim_due(policy)).await;
    assert_eq!(
        batch.outcome_count(),
        0,
        "nothing should be claimable: {batch:?}"
    );
}

/// An empty store claims nothing and changes nothing.
pub async fn an_empty_store_claims_nothing_and_changes_nothing(env: &Env<'_>) {
    assert_nothing_due(env, &claim_policy(t(0), 10)).await;
}

/// A due run is leased with a fresh UUID token and exactly the lease fields of
/// `docs/claim-order.md`, “The claim policy”.
pub async fn a_ready_run_is_leased_with_a_uuid_token_and_exact_fields(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(7)).await;
    assert!(
        lease.claim_token.is_uuid(),
        "tokens are UUIDs on every backend"
    );
    assert_eq!(lease.run_id, run.id);
    assert_eq!(lease.owner, tenant("a"));
    assert_eq!(lease.graph_id, graph.graph_ref.graph_id);
    assert_eq!(lease.graph_hash, graph.graph_ref.graph_hash);
    assert_eq!(lease.checkpoint_seq, run.checkpoint_seq);
    assert_eq!(lease.claimed_at, t(7));
    assert_eq!(lease.claim_attempt, 1);
    assert_eq!(lease.orphan_ttl_ms, 60_000);
}

/// A claim stamps `claimed_at`, clears the wake and counts one attempt.
pub async fn claiming_stamps_claimed_at_clears_the_wake_and_counts_an_attempt(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let info = env.inspect(&c.run.id).await;
    assert_eq!(info.claimed_at, Some(t(10)));
    assert_eq!(info.wake_at, None);
    assert_eq!((info.claim_attempts, info.claim_abandons), (1, 0));
    assert_eq!(info.poison, None);
}

/// Claims are operational: the document, its `updated_at` and its events stay as committed.
pub async fn claiming_touches_neither_the_document_nor_its_events(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let events = env.all_events(&run.id).await;
    env.claim(t(10)).await;
    env.claim(t(10 + 60_001)).await;
    assert_eq!(env.fetch(&run.id).await, run);
    assert_eq!(env.all_events(&run.id).await, events);
}

/// A live claim is not claimed again before its TTL runs out.
pub async fn a_held_claim_is_not_claimed_again_before_its_ttl(env: &Env<'_>) {
    env.claimed("r1").await;
    assert_nothing_due(env, &claim_policy(t(10 + 59_999), 5)).await;
}

/// At exactly `claimed_at + ttl` a claim is not yet stealable (the comparison is strict).
pub async fn a_claim_is_not_stealable_at_exactly_its_ttl(env: &Env<'_>) {
    env.claimed("r1").await;
    assert_nothing_due(env, &claim_policy(t(10 + 60_000), 5)).await;
}

/// One microsecond past the TTL, the claim is stolen with a new token as attempt 2.
pub async fn an_expired_claim_is_stolen_with_a_new_token(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let steal_at = t(10 + 60_000).add_micros(1);
    let thief = env.claim(steal_at).await;
    assert_eq!(thief.run_id, c.run.id);
    assert_ne!(thief.claim_token, c.lease.claim_token);
    assert_eq!(thief.claim_attempt, 2);
    assert_eq!(thief.claimed_at, steal_at);
    let info = env.inspect(&c.run.id).await;
    assert_eq!((info.claimed_at, info.claim_attempts), (Some(steal_at), 2));
}

/// A commit that keeps the claim restarts its TTL: a claim expires a TTL after its last
/// commit, not after it was taken, and expired claims are stolen oldest last commit first —
/// under either claim order.
pub async fn a_commit_that_keeps_the_claim_restarts_its_ttl(env: &Env<'_>) {
    let first = env.claimed("r1").await;
    env.start(&first.graph, "r2", t(0)).await;
    let second = env.claim(t(20)).await;
    let r2 = env.fetch(&second.run_id).await;
    // r1, taken first, commits last; r2, taken later, commits earlier.
    env.commit_to(&first.lease, &first.run, RunStatus::Running, t(40_000))
        .await;
    env.commit_to(&second, &r2, RunStatus::Running, t(30_000))
        .await;
    let ttl_after = |at: i64| t(at + 60_000).add_micros(1);
    for order in [ClaimPolicy::Oldest, ClaimPolicy::TenantFair] {
        let request = ClaimRequest {
            policy: order,
            ..claim_policy(ttl_after(20), 5)
        };
        assert_nothing_due(env, &request).await;
    }
    let leased = |batch: &docket_core::store::ClaimBatch| -> Vec<RunId> {
        batch.leases.iter().map(|l| l.run_id.clone()).collect()
    };
    let oldest = env.claim_all(&claim_policy(ttl_after(40_000), 1)).await;
    assert_eq!(
        leased(&oldest),
        vec![second.run_id.clone()],
        "the claim whose last commit is oldest goes first"
    );
    let fair = ClaimRequest {
        policy: ClaimPolicy::TenantFair,
        ..claim_policy(ttl_after(40_000), 1)
    };
    let next = env.claim_all(&fair).await;
    assert_eq!(leased(&next), vec![first.run.id.clone()]);
    assert_ne!(next.leases[0].claim_token, first.lease.claim_token);
}

/// With TTL 0, any claim older than `now` is stealable.
pub async fn ttl_zero_steals_any_claim_older_than_now(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let mut policy = claim_policy(t(10).add_micros(1), 1);
    policy.orphan_ttl_ms = 0;
    let batch = env.claim_all(&policy).await;
    assert_eq!(batch.leases.len(), 1);
    assert_ne!(batch.leases[0].claim_token, c.lease.claim_token);
}

/// With TTL 0, a claim taken at `now` itself is not stealable.
pub async fn ttl_zero_does_not_steal_a_claim_taken_at_now(env: &Env<'_>) {
    env.claimed("r1").await;
    let mut policy = claim_policy(t(10), 1);
    policy.orphan_ttl_ms = 0;
    assert_nothing_due(env, &policy).await;
}

/// Waiting runs (externally parked) are never claimed, however late.
pub async fn waiting_runs_are_never_claimed(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.commit_to(&c.lease, &c.run, RunStatus::Waiting, t(20))
        .await;
    assert_nothing_due(env, &claim_policy(t(100_000_000), 5)).await;
}

/// Terminal runs are never claimed, however late.
pub async fn terminal_runs_are_never_claimed(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    env.commit_to(&c.lease, &c.run, RunStatus::Done, t(20))
        .await;
    assert_nothing_due(env, &claim_policy(t(100_000_000), 5)).await;
}

/// Every claim of a run mints a token never seen before for it.
pub async fn every_claim_of_a_run_mints_a_distinct_token(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "r1", t(0)).await;
    let mut tokens = Vec::new();
    for i in 0..3 {
        let lease = env.claim(t(10 * i + 1)).await;
        release(env, &lease, t(10 * i + 2)).await;
        tokens.push(lease.claim_token);
    }
    let stolen = env.claim(t(100)).await;
    tokens.push(stolen.claim_token.clone());
    tokens.push(env.claim(t(100 + 60_001)).await.claim_token);
    for (i, a) in tokens.iter().enumerate() {
        for b in &tokens[i + 1..] {
            assert_ne!(a, b, "a token was minted twice");
        }
    }
}

/// A released run is claimable again at once, as attempt 2 (release keeps attempts).
pub async fn a_released_run_is_claimed_again_as_the_next_attempt(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    release(env, &c.lease, t(20)).await;
    let again = env.claim(t(20)).await;
    assert_eq!(again.run_id, c.run.id);
    assert_eq!(again.claim_attempt, 2);
}

/// A lease reports the committed seq at claim time.
pub async fn a_lease_reports_the_committed_seq(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let proposal = with_schedule(
        claimed_commit(&moment, &c.lease.claim_token, t(20)),
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    );
    ok(
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone())
            .await,
        "commit_claimed",
    );
    let lease = env.claim(t(21)).await;
    assert_eq!(lease.checkpoint_seq, c.run.checkpoint_seq + 1);
    assert_eq!(lease.claim_attempt, 1, "the commit reset the attempts");
}

/// The lease's owner comes from the stored row, never from run content that looks like a
/// tenant.
pub async fn the_lease_owner_comes_from_the_stored_row_not_the_content(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let mut moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    moment.run.metadata.insert("tenant_id".into(), json!("b"));
    moment
        .run
        .metadata
        .insert("owner".into(), json!({"tenant": "b"}));
    ok(
        env.store()
            .initialize(
                &tenant("a"),
                init_proposal(&moment, t(0)),
                moment.events.clone(),
            )
            .await,
        "initialize",
    );
    assert_eq!(env.claim(t(1)).await.owner, tenant("a"));
}
