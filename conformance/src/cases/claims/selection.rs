//! Selection order (`docs/claim-order.md`): ready by wake, expired by claim time, the per-class
//! reservation at demand ≥ 2, and the preference at demand 1.

use super::basics::release;
use crate::cases::prelude::*;

/// Starts run `id` of `graph` waking at `t(wake_ms)` (initialized at `t(0)`).
async fn due_at(env: &Env<'_>, graph: &Published, id: &str, wake_ms: i64) {
    env.start_waking(graph, id, t(0), t(wake_ms)).await;
}

/// Ids of a batch's leases in batch order.
fn leased(batch: &docket_core::store::ClaimBatch) -> Vec<String> {
    batch
        .leases
        .iter()
        .map(|l| l.run_id.as_str().to_owned())
        .collect()
}

/// `e1`, `e2`, `e3` claimed at 1, 2, 3 ms (expired from `t(60_004)`), and ready `r1` due at
/// `r1_wake_ms`. Returns the instant at which all three claims are expired.
async fn mixed(env: &Env<'_>, r1_wake_ms: i64) -> Timestamp {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for (i, id) in ["e1", "e2", "e3"].iter().enumerate() {
        let at = i as i64 + 1;
        due_at(env, &graph, id, at).await;
        assert_eq!(env.claim(t(at)).await.run_id, rid(id));
    }
    due_at(env, &graph, "r1", r1_wake_ms).await;
    t(60_004)
}

/// Ready runs are claimed oldest wake first.
pub async fn ready_runs_are_claimed_oldest_wake_first(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    due_at(env, &graph, "a", 30).await;
    due_at(env, &graph, "b", 10).await;
    due_at(env, &graph, "c", 20).await;
    let batch = env.claim_all(&claim_policy(t(100), 10)).await;
    assert_eq!(leased(&batch), ["b", "c", "a"]);
}

/// Ready runs due at the same instant are claimed in run id order.
pub async fn equal_wakes_break_ties_by_run_id(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for id in ["r3", "r1", "r2"] {
        due_at(env, &graph, id, 5).await;
    }
    let first = env.claim(t(5)).await;
    assert_eq!(first.run_id, rid("r1"));
    let batch = env.claim_all(&claim_policy(t(5), 10)).await;
    assert_eq!(leased(&batch), ["r2", "r3"]);
}

/// The limit bounds the batch; the rest stay due for the next poll.
pub async fn the_limit_bounds_the_batch_and_the_rest_stay_due(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for (i, id) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        due_at(env, &graph, id, i as i64).await;
    }
    let first = env.claim_all(&claim_policy(t(10), 3)).await;
    assert_eq!(leased(&first), ["a", "b", "c"]);
    let second = env.claim_all(&claim_policy(t(10), 3)).await;
    assert_eq!(leased(&second), ["d", "e"]);
}

/// Future wakes are excluded; a wake equal to `now` is due (inclusive).
pub async fn future_wakes_are_excluded_and_due_is_inclusive(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    due_at(env, &graph, "now", 50).await;
    due_at(env, &graph, "later", 51).await;
    let batch = env.claim_all(&claim_policy(t(50), 10)).await;
    assert_eq!(leased(&batch), ["now"]);
}

/// Demand two with both classes present takes the oldest of each class, even when the
/// expired class dominates by age.
pub async fn demand_two_reserves_one_outcome_per_class(env: &Env<'_>) {
    let now = mixed(env, 9).await;
    let mut ids = leased(&env.claim_all(&claim_policy(now, 2)).await);
    ids.sort();
    assert_eq!(ids, ["e1", "r1"]);
}

/// The reservation holds when the ready class is the older one too.
pub async fn the_reservation_holds_when_the_ready_class_dominates(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    due_at(env, &graph, "e1", 100).await;
    env.claim(t(100)).await;
    for id in ["r1", "r2", "r3"] {
        due_at(env, &graph, id, 1).await;
    }
    let mut ids = leased(&env.claim_all(&claim_policy(t(60_101), 2)).await);
    ids.sort();
    assert_eq!(ids, ["e1", "r1"]);
}

/// Beyond the reservation, the batch fills in eligibility order.
pub async fn beyond_the_reservation_the_batch_fills_by_eligibility(env: &Env<'_>) {
    let now = mixed(env, 9).await;
    let mut ids = leased(&env.claim_all(&claim_policy(now, 3)).await);
    ids.sort();
    assert_eq!(ids, ["e1", "e2", "r1"]);
}

/// Demand one prefers the ready class when asked.
pub async fn demand_one_serves_the_preferred_ready_class(env: &Env<'_>) {
    let now = mixed(env, 9).await;
    let mut policy = claim_policy(now, 1);
    policy.preference = Some(ClaimClass::Ready);
    assert_eq!(leased(&env.claim_all(&policy).await), ["r1"]);
}

/// Demand one prefers the expired class when asked.
pub async fn demand_one_serves_the_preferred_expired_class(env: &Env<'_>) {
    let now = mixed(env, 1).await;
    let mut policy = claim_policy(now, 1);
    policy.preference = Some(ClaimClass::Expired);
    assert_eq!(leased(&env.claim_all(&policy).await), ["e1"]);
}

/// Demand one falls through to expired runs when none is ready.
pub async fn demand_one_falls_through_to_expired_when_none_is_ready(env: &Env<'_>) {
    let c = env.claimed("e1").await;
    let mut policy = claim_policy(t(10 + 60_001), 1);
    policy.preference = Some(ClaimClass::Ready);
    let batch = env.claim_all(&policy).await;
    assert_eq!(leased(&batch), ["e1"]);
    assert_ne!(batch.leases[0].claim_token, c.lease.claim_token);
}

/// Demand one falls through to ready runs when nothing expired.
pub async fn demand_one_falls_through_to_ready_when_nothing_expired(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    due_at(env, &graph, "r1", 0).await;
    let mut policy = claim_policy(t(1), 1);
    policy.preference = Some(ClaimClass::Expired);
    assert_eq!(leased(&env.claim_all(&policy).await), ["r1"]);
}

/// Demand one without preference takes the oldest eligible of either class.
pub async fn demand_one_without_preference_takes_the_oldest_eligible(env: &Env<'_>) {
    let now = mixed(env, 9).await;
    assert_eq!(leased(&env.claim_all(&claim_policy(now, 1)).await), ["e1"]);
    let graph = tiny_graph(&OwnerScope::Tenantless);
    env.start_waking(&graph, "r0", t(0), t(0)).await;
    assert_eq!(leased(&env.claim_all(&claim_policy(now, 1)).await), ["r0"]);
}

/// Alternating preferences at demand one make progress on both classes despite age skew.
pub async fn alternating_demand_one_preferences_drain_both_classes(env: &Env<'_>) {
    let now = mixed(env, 9).await;
    let graph = tiny_graph(&OwnerScope::Tenantless);
    for id in ["r2", "r3"] {
        env.start_waking(&graph, id, t(0), t(10)).await;
    }
    let mut seen = Vec::new();
    for round in 0..6 {
        let mut policy = claim_policy(now, 1);
        policy.preference = Some(if round % 2 == 0 {
            ClaimClass::Expired
        } else {
            ClaimClass::Ready
        });
        let batch = env.claim_all(&policy).await;
        assert_eq!(batch.leases.len(), 1, "round {round} claims one run");
        seen.extend(leased(&batch));
    }
    seen.sort();
    assert_eq!(seen, ["e1", "e2", "e3", "r1", "r2", "r3"]);
}

/// A claimed and released run is ordered by its new wake, not by its first one.
pub async fn a_released_run_is_ordered_by_its_release_time(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    due_at(env, &graph, "a", 0).await;
    let lease = env.claim(t(0)).await;
    due_at(env, &graph, "b", 5).await;
    release(env, &lease, t(10)).await;
    let batch = env.claim_all(&claim_policy(t(20), 10)).await;
    assert_eq!(leased(&batch), ["b", "a"]);
}

/// Many fresh (unexpired) claims, more than any demand, never hide a due ready run: they are
/// not candidates, so they neither fill the batch nor push the ready run past the limit.
pub async fn many_fresh_claims_never_hide_a_due_ready_run(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for i in 0..20 {
        due_at(env, &graph, &format!("held{i:02}"), i).await;
    }
    for i in 0..20 {
        assert_eq!(env.claim(t(20)).await.run_id, rid(&format!("held{i:02}")));
    }
    for (n, limit) in [1u32, 2, 5].into_iter().enumerate() {
        let id = format!("late{n}");
        due_at(env, &graph, &id, 30 + i64::from(limit)).await;
        let batch = env.claim_all(&claim_policy(t(40), limit)).await;
        assert_eq!(leased(&batch), [id.as_str()], "limit {limit}");
        assert!(batch.poisoned.is_empty());
    }
    for i in 0..20 {
        let info = env.inspect(&rid(&format!("held{i:02}"))).await;
        assert_eq!(
            (info.claimed_at, info.claim_attempts),
            (Some(t(20)), 1),
            "held{i:02} untouched"
        );
    }
}
