//! The tenant-fair order: breadth-first across owners from the stored cursor, each owner's
//! runs oldest first, and how steals of expired claims merge in.

use super::{backlog, fair, fair_preferring, leased};
use crate::cases::prelude::*;

/// Tenants `a` (one run), `big` (three) and `c` (two), all due by `t(10)`.
async fn three_tenants(env: &Env<'_>) {
    backlog(
        env,
        &[
            ("big", "b1", 1),
            ("big", "b2", 2),
            ("big", "b3", 3),
            ("a", "a1", 9),
            ("c", "c1", 8),
            ("c", "c2", 9),
        ],
    )
    .await;
}

/// One fair claim serves every owner's oldest run before any owner's second, owners in byte
/// order of their key (tenantless `""` first), whatever the wake times across owners.
pub async fn tenant_fair_serves_owners_breadth_first_in_key_order(env: &Env<'_>) {
    three_tenants(env).await;
    backlog(env, &[("", "t1", 5)]).await;
    let batch = env.claim_all(&fair(t(10), 10)).await;
    assert_eq!(leased(&batch), ["t1", "a1", "b1", "c1", "b2", "c2", "b3"]);
}

/// Within one owner, runs are served in `(wake_at, run id)` order.
pub async fn tenant_fair_serves_each_owners_runs_oldest_wake_first(env: &Env<'_>) {
    backlog(
        env,
        &[
            ("a", "x3", 1),
            ("a", "x1", 5),
            ("a", "x2", 5),
            ("a", "x0", 7),
        ],
    )
    .await;
    let batch = env.claim_all(&fair(t(10), 10)).await;
    assert_eq!(leased(&batch), ["x3", "x1", "x2", "x0"]);
}

/// The stored cursor carries the round robin from one claim to the next, at demand one and
/// at demand two alike.
pub async fn the_cursor_carries_the_round_robin_across_claims(env: &Env<'_>) {
    three_tenants(env).await;
    let mut one_by_one = Vec::new();
    for _ in 0..3 {
        one_by_one.extend(leased(&env.claim_all(&fair(t(10), 1)).await));
    }
    assert_eq!(one_by_one, ["a1", "b1", "c1"]);
    let pair = leased(&env.claim_all(&fair(t(10), 2)).await);
    assert_eq!(pair, ["b2", "c2"]);
    assert_eq!(leased(&env.claim_all(&fair(t(10), 2)).await), ["b3"]);
}

/// Work that arrives for an owner the round has already served waits for the next round:
/// the owners after the cursor come first.
pub async fn new_work_behind_the_cursor_waits_for_the_next_round(env: &Env<'_>) {
    backlog(env, &[("a", "a1", 1), ("b", "b1", 1), ("c", "c1", 1)]).await;
    assert_eq!(leased(&env.claim_all(&fair(t(10), 1)).await), ["a1"]);
    backlog(env, &[("a", "a2", 0)]).await;
    let rest = leased(&env.claim_all(&fair(t(10), 3)).await);
    assert_eq!(rest, ["b1", "c1", "a2"]);
}

/// An owner whose runs all wake later takes no turn: the round passes over it, after the
/// cursor and on wrapping round past the last key alike, and serves it in its place once a
/// run of it is due.
pub async fn an_owner_with_nothing_due_is_passed_over_until_its_runs_are(env: &Env<'_>) {
    backlog(
        env,
        &[
            ("", "t1", 500),
            ("a", "a1", 1),
            ("a", "a2", 1),
            ("b", "b1", 500),
            ("c", "c1", 1),
            ("c", "c2", 1),
            ("d", "d1", 1),
        ],
    )
    .await;
    assert_eq!(leased(&env.claim_all(&fair(t(10), 2)).await), ["a1", "c1"]);
    assert_eq!(leased(&env.claim_all(&fair(t(10), 2)).await), ["d1", "a2"]);
    assert_eq!(leased(&env.claim_all(&fair(t(10), 5)).await), ["c2"]);
    assert_eq!(leased(&env.claim_all(&fair(t(600), 5)).await), ["t1", "b1"]);
}

/// A fair claim that selects no ready run (only a steal) leaves the cursor where it was.
pub async fn a_claim_without_ready_work_keeps_the_cursor(env: &Env<'_>) {
    backlog(env, &[("c", "x", 1)]).await;
    assert_eq!(leased(&env.claim_all(&fair(t(1), 1)).await), ["x"]);
    backlog(env, &[("a", "a1", 100), ("a", "a2", 100), ("b", "b1", 100)]).await;
    let now = t(70_000);
    let first = env
        .claim_all(&fair_preferring(now, ClaimClass::Ready))
        .await;
    assert_eq!(leased(&first), ["a1"]);
    let steal = env
        .claim_all(&fair_preferring(now, ClaimClass::Expired))
        .await;
    assert_eq!(leased(&steal), ["x"]);
    let next = env
        .claim_all(&fair_preferring(now, ClaimClass::Ready))
        .await;
    assert_eq!(leased(&next), ["b1"], "the steal must not reset the cursor");
}

/// Expired claims are stolen owner-blind: the oldest comes before the fair round, the others
/// after it.
pub async fn the_oldest_steal_comes_before_the_round_and_the_rest_after(env: &Env<'_>) {
    backlog(env, &[("z", "x1", 1), ("z", "x2", 2)]).await;
    assert_eq!(leased(&env.claim_all(&fair(t(2), 2)).await), ["x1", "x2"]);
    backlog(env, &[("a", "a1", 10), ("b", "b1", 10)]).await;
    let batch = env.claim_all(&fair(t(70_000), 10)).await;
    assert_eq!(leased(&batch), ["x1", "a1", "b1", "x2"]);
}

/// At demand one, a `Ready` preference takes the head of the fair round; an `Expired`
/// preference or none takes the oldest steal; each falls through when its class is empty.
pub async fn the_demand_one_preference_picks_the_class(env: &Env<'_>) {
    backlog(env, &[("z", "x1", 1)]).await;
    env.claim_all(&fair(t(1), 1)).await;
    backlog(env, &[("b", "b1", 10), ("c", "c1", 10)]).await;
    let now = t(70_000);
    let ready = env
        .claim_all(&fair_preferring(now, ClaimClass::Ready))
        .await;
    assert_eq!(leased(&ready), ["b1"]);
    assert_eq!(leased(&env.claim_all(&fair(now, 1)).await), ["x1"]);
    let fallthrough = env
        .claim_all(&fair_preferring(now, ClaimClass::Expired))
        .await;
    assert_eq!(leased(&fallthrough), ["c1"]);
}

/// `Oldest` is the order it always was: shares are not consulted and nothing is admitted.
pub async fn oldest_ignores_shares_and_never_admits(env: &Env<'_>) {
    super::share(env, "big", 1, Some(1)).await;
    three_tenants(env).await;
    let batch = env.claim_all(&claim_policy(t(10), 10)).await;
    assert_eq!(leased(&batch), ["b1", "b2", "b3", "c1", "a1", "c2"]);
    for lease in &batch.leases {
        assert_eq!(env.inspect(&lease.run_id).await.admitted_at, None);
    }
}
