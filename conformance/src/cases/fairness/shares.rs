//! Stored tenant shares: weights over many rounds, caps (also under racing claimers), and how
//! shares are stored and listed.

use std::collections::BTreeSet;
use std::sync::Arc;

use docket_core::model::TenantId;
use docket_core::store::TenantShare;

use super::{backlog, fair, leased, share};
use crate::cases::prelude::*;

/// A tenant of weight 3 gets three claims per round to another's one, over four rounds of
/// demand-one claims, and the cursor remembers a round cut short between claims.
pub async fn a_weight_gives_that_many_claims_per_round(env: &Env<'_>) {
    share(env, "big", 3, None).await;
    let mut runs = Vec::new();
    let big: Vec<String> = (1..=12).map(|i| format!("b{i:02}")).collect();
    let small: Vec<String> = (1..=4).map(|i| format!("a{i}")).collect();
    for id in &big {
        runs.push(("big", id.as_str(), 1));
    }
    for id in &small {
        runs.push(("a", id.as_str(), 1));
    }
    backlog(env, &runs).await;
    let mut order = Vec::new();
    for _ in 0..8 {
        order.extend(leased(&env.claim_all(&fair(t(10), 2)).await));
    }
    let owners: String = order
        .iter()
        .map(|id| if id.starts_with('a') { 'a' } else { 'B' })
        .collect();
    assert_eq!(owners, "aBBBaBBBaBBBaBBB");
    let mut expected_big = order.clone();
    expected_big.retain(|id| id.starts_with('b'));
    assert_eq!(
        expected_big, big,
        "each tenant's runs in wake, then id, order"
    );
}

/// A cap bounds how many of a tenant's runs are claimed at once: the tenant offers only what
/// is left of its cap, a claim that finds nothing else changes nothing, and a finished run
/// frees its place.
pub async fn a_cap_bounds_the_runs_claimed_at_once(env: &Env<'_>) {
    share(env, "big", 1, Some(2)).await;
    backlog(
        env,
        &[
            ("big", "b1", 1),
            ("big", "b2", 2),
            ("big", "b3", 3),
            ("big", "b4", 4),
            ("a", "a1", 5),
            ("a", "a2", 6),
        ],
    )
    .await;
    let first = env.claim_all(&fair(t(10), 10)).await;
    assert_eq!(leased(&first), ["a1", "b1", "a2", "b2"]);
    let none = env.unchanged(env.store().claim_due(&fair(t(10), 10))).await;
    assert_eq!(leased(&none), Vec::<String>::new());
    let b1 = first
        .leases
        .iter()
        .find(|l| l.run_id == rid("b1"))
        .expect("b1 leased");
    let run = env.fetch(&b1.run_id).await;
    env.commit_to(b1, &run, RunStatus::Done, t(11)).await;
    assert_eq!(leased(&env.claim_all(&fair(t(12), 10)).await), ["b3"]);
}

/// Expired claims still count against the cap, and stealing one is not capped: a steal moves
/// a claim, it does not add one.
pub async fn a_cap_counts_expired_claims_and_steals_ignore_it(env: &Env<'_>) {
    share(env, "big", 1, Some(1)).await;
    backlog(env, &[("big", "b1", 1), ("big", "b2", 1)]).await;
    assert_eq!(leased(&env.claim_all(&fair(t(1), 5)).await), ["b1"]);
    let later = env.claim_all(&fair(t(70_000), 5)).await;
    assert_eq!(leased(&later), ["b1"], "the steal, and not b2");
    let info = env.inspect(&rid("b2")).await;
    assert!(!info.is_claimed());
}

/// Eight claimers racing with tenant-fair claims of demand 1 to 3 never hold more of a
/// capped tenant's runs than its cap, and never lease one run twice.
pub async fn caps_hold_under_eight_racing_claimers(env: &Env<'_>) {
    share(env, "big", 1, Some(2)).await;
    let mut runs = Vec::new();
    let ids: Vec<(String, String)> = (0..16)
        .flat_map(|i| [(format!("b{i:02}"), "big"), (format!("a{i:02}"), "a")])
        .map(|(id, who)| (who.to_owned(), id))
        .collect();
    for (who, id) in &ids {
        runs.push((who.as_str(), id.as_str(), 1));
    }
    backlog(env, &runs).await;
    let mut tasks = tokio::task::JoinSet::new();
    for claimer in 0..8u32 {
        let store = Arc::clone(env.store());
        tasks.spawn(async move {
            let mut mine = Vec::new();
            for round in 0..3u32 {
                let limit = 1 + (claimer + round) % 3;
                let batch = store.claim_due(&fair(t(10), limit)).await;
                mine.extend(ok(batch, "racing claim_due").leases);
            }
            mine
        });
    }
    let mut leases = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        leases.extend(joined.expect("claimer task"));
    }
    let distinct: BTreeSet<&RunId> = leases.iter().map(|l| &l.run_id).collect();
    assert_eq!(distinct.len(), leases.len(), "a run was leased twice");
    let big = leases.iter().filter(|l| l.owner == tenant("big")).count();
    assert_eq!(big, 2, "the capped tenant must get exactly its cap");
    let mut held = 0;
    for (who, id) in &ids {
        if who == "big" && env.inspect(&rid(id)).await.is_claimed() {
            held += 1;
        }
    }
    assert_eq!(held, 2);
}

/// Shares are stored per tenant, replaced by a later call, and listed in tenant id order; a
/// store without shares lists none.
pub async fn shares_are_stored_replaced_and_listed_by_tenant(env: &Env<'_>) {
    let empty = ok(env.store().tenant_shares().await, "tenant_shares");
    assert!(empty.is_empty());
    share(env, "zeta", 2, None).await;
    share(env, "alpha", 1, Some(3)).await;
    share(env, "zeta", 4, Some(1)).await;
    let listed = ok(env.store().tenant_shares().await, "tenant_shares");
    let expected = vec![
        (
            TenantId::new("alpha").expect("id"),
            TenantShare {
                weight: nz(1),
                cap: Some(nz(3)),
            },
        ),
        (
            TenantId::new("zeta").expect("id"),
            TenantShare {
                weight: nz(4),
                cap: Some(nz(1)),
            },
        ),
    ];
    assert_eq!(listed, expected);
    let reopened = env.reopen().await;
    assert_eq!(ok(reopened.tenant_shares().await, "after reopen"), expected);
}
