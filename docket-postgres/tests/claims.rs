//! Claims: classes, TTL strictness, class reservation and preference (compared with
//! `rules::claim_order::select`), attempt poisoning, shared limits, concurrent claimers.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use docket_core::model::{ClaimToken, OperationalState, OwnerScope, RunId, RunStatus};
use docket_core::store::rules::claim_order::{select, Candidate};
use docket_core::store::rules::effects::{self, ClaimDecision};
use docket_core::store::{ClaimClass, ClaimRequest, ClaimedSchedule, ReleaseWake, RunStore};
use docket_postgres::testing;
use docket_postgres::PostgresStore;

fn claimed_at(at: i64, attempts: u32) -> OperationalState {
    let mut ops = effects::initial_state(t(0));
    effects::apply_lease(&mut ops, ClaimToken::mint(), t(at));
    ops.claim_attempts = attempts;
    ops
}

fn ready_at(at: i64, attempts: u32) -> OperationalState {
    let mut ops = effects::initial_state(t(at));
    ops.claim_attempts = attempts;
    ops
}

/// Ten runs in insertion order (so the internal row id, the tie-break, follows the index).
fn scenario() -> Vec<OperationalState> {
    let mut poisoned = effects::initial_state(t(0));
    effects::apply_claim_poison(&mut poisoned, t(1));
    vec![
        ready_at(100, 0),
        ready_at(50, 2),
        claimed_at(10, 1),  // expired
        ready_at(50, 0),    // ties with index 1: the lower row id first
        claimed_at(900, 1), // fresh claim, not expired
        ready_at(5_000, 0), // future wake
        poisoned,
        claimed_at(20, 3), // expired, at the attempt limit: poisons
        ready_at(70, 3),   // ready, at the attempt limit: poisons
        claimed_at(30, 0), // expired
    ]
}

async fn build(store: &PostgresStore, states: &[OperationalState]) -> Vec<RunId> {
    let owner = OwnerScope::Tenantless;
    let mut ids = Vec::new();
    for (i, ops) in states.iter().enumerate() {
        let run = start(store, &owner, &format!("r{i:02}"), t(0)).await;
        testing::write_operational_state(store, &run.id, ops)
            .await
            .expect("write ops");
        ids.push(run.id);
    }
    ids
}

/// What the rules say one `claim_due` does to `states`.
fn expected(
    states: &[OperationalState],
    policy: &ClaimRequest,
) -> (
    Vec<(usize, ClaimDecision)>,
    BTreeMap<usize, OperationalState>,
) {
    let candidates = states
        .iter()
        .enumerate()
        .filter_map(|(i, ops)| {
            effects::claim_class(RunStatus::Running, ops, policy.now, policy.orphan_ttl_ms).map(
                |(class, eligible_at)| Candidate {
                    class,
                    eligible_at,
                    key: i,
                },
            )
        })
        .collect();
    let chosen = select(candidates, policy.limit.get() as usize, policy.preference);
    let mut after = BTreeMap::new();
    let outcomes = chosen
        .iter()
        .map(|c| {
            let mut ops = states[c.key].clone();
            let decision = effects::claim_decision(&ops, policy.max_claim_attempts.get());
            match decision {
                ClaimDecision::Lease { .. } => {
                    effects::apply_lease(&mut ops, ClaimToken::mint(), policy.now)
                }
                ClaimDecision::Poison => effects::apply_claim_poison(&mut ops, policy.now),
            }
            after.insert(c.key, ops);
            (c.key, decision)
        })
        .collect();
    (outcomes, after)
}

#[tokio::test]
async fn claim_selection_matches_the_shared_rules_for_every_limit_and_preference() {
    let (store, _guard) = open().await;
    let states = scenario();
    let ids = build(&store, &states).await;
    let index: BTreeMap<&RunId, usize> = ids.iter().enumerate().map(|(i, id)| (id, i)).collect();
    for limit in [1, 2, 3, 4, 6, 20] {
        for preference in [None, Some(ClaimClass::Ready), Some(ClaimClass::Expired)] {
            for (id, ops) in ids.iter().zip(&states) {
                testing::write_operational_state(&store, id, ops)
                    .await
                    .expect("reset");
            }
            let mut policy = with_max(with_ttl(policy(t(1_000), limit), 60), 3);
            policy.preference = preference;
            let (outcomes, after) = expected(&states, &policy);
            let batch = store.claim_due(&policy).await.expect("claim");
            let case = format!("limit {limit} preference {preference:?}");
            let leased: Vec<usize> = batch.leases.iter().map(|l| index[&l.run_id]).collect();
            let poisoned: Vec<usize> = batch.poisoned.iter().map(|p| index[&p.run_id]).collect();
            let want_leased: Vec<usize> = outcomes
                .iter()
                .filter(|(_, d)| matches!(d, ClaimDecision::Lease { .. }))
                .map(|(i, _)| *i)
                .collect();
            let want_poisoned: Vec<usize> = outcomes
                .iter()
                .filter(|(_, d)| *d == ClaimDecision::Poison)
                .map(|(i, _)| *i)
                .collect();
            assert_eq!(leased, want_leased, "{case}");
            assert_eq!(poisoned, want_poisoned, "{case}");
            for lease in &batch.leases {
                let i = index[&lease.run_id];
                let mut want = after[&i].clone();
                want.claim_token = Some(lease.claim_token.clone());
                assert!(lease.claim_token.is_uuid());
                assert_eq!(
                    Some(lease.claim_attempt),
                    outcomes
                        .iter()
                        .find(|(k, _)| *k == i)
                        .and_then(|(_, d)| match d {
                            ClaimDecision::Lease { attempt } => Some(*attempt),
                            ClaimDecision::Poison => None,
                        })
                );
                assert_eq!(
                    (lease.claimed_at, lease.checkpoint_seq, lease.orphan_ttl_ms),
                    (t(1_000), 1, 60)
                );
                assert_eq!(
                    testing::operational_state(&store, &lease.run_id)
                        .await
                        .expect("ops"),
                    want,
                    "{case}"
                );
            }
            for poison in &batch.poisoned {
                let i = index[&poison.run_id];
                assert_eq!(poison.poisoned_at, t(1_000));
                assert_eq!(
                    testing::operational_state(&store, &poison.run_id)
                        .await
                        .expect("ops"),
                    after[&i],
                    "{case}"
                );
            }
            // Rows that were not chosen are untouched.
            for (i, id) in ids.iter().enumerate() {
                if !after.contains_key(&i) {
                    assert_eq!(
                        testing::operational_state(&store, id).await.expect("ops"),
                        states[i],
                        "{case}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn ready_is_inclusive_and_expiry_is_strict_at_the_ttl_boundary() {
    let (store, _guard) = open().await;
    start(&store, &OwnerScope::Tenantless, "r1", t(100)).await;
    assert_eq!(
        store
            .claim_due(&policy(t(99), 5))
            .await
            .expect("claim")
            .outcome_count(),
        0
    );
    let lease = claim_one(&store, t(100)).await;
    assert_eq!(lease.claim_attempt, 1);
    let ttl = |now| with_ttl(policy(now, 5), 1_000);
    // claimed_at + ttl exactly: not yet stealable.
    assert_eq!(
        store
            .claim_due(&ttl(t(1_100)))
            .await
            .expect("claim")
            .outcome_count(),
        0
    );
    let batch = store.claim_due(&ttl(t(1_101))).await.expect("steal");
    assert_eq!(lease_ids(&batch), vec!["r1"]);
    let steal = &batch.leases[0];
    assert_ne!(steal.claim_token, lease.claim_token);
    assert_eq!((steal.claim_attempt, steal.claimed_at), (2, t(1_101)));
    // The stale holder's release is a silent no-op.
    let before = snapshot(&store).await;
    store
        .release_claim(&lease.run_id, &lease.claim_token, t(1_200))
        .await
        .expect("release");
    assert_eq!(snapshot(&store).await, before);
}

#[tokio::test]
async fn leases_and_poisons_share_one_limit_and_a_poisoned_head_uses_its_class_slot() {
    let (store, _guard) = open().await;
    let states = vec![
        ready_at(10, 5), // ready head, poisons at max 5
        ready_at(20, 0),
        ready_at(30, 0),
        claimed_at(40, 5), // expired head, poisons
        claimed_at(50, 0),
    ];
    let ids = build(&store, &states).await;
    let batch = store
        .claim_due(&with_ttl(policy(t(1_000), 3), 100))
        .await
        .expect("claim");
    assert_eq!(batch.outcome_count(), 3);
    let poisoned: BTreeSet<&str> = batch.poisoned.iter().map(|p| p.run_id.as_str()).collect();
    assert_eq!(poisoned, BTreeSet::from([ids[0].as_str(), ids[3].as_str()]));
    assert_eq!(lease_ids(&batch), vec![ids[1].as_str().to_owned()]);
}

#[tokio::test]
async fn a_retained_claim_keeps_authority_and_a_release_makes_the_run_ready_again() {
    let (store, _guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let second = next(&run, t(2));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                second.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            vec![],
        )
        .await
        .expect("retain");
    assert_eq!(
        store
            .claim_due(&policy(t(3), 5))
            .await
            .expect("claim")
            .outcome_count(),
        0
    );
    let third = next(&second, t(4));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                third,
                2,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::At(t(10))),
                t(4),
            ),
            vec![],
        )
        .await
        .expect("release at");
    assert_eq!(
        store
            .claim_due(&policy(t(9), 5))
            .await
            .expect("claim")
            .outcome_count(),
        0
    );
    let again = claim_one(&store, t(10)).await;
    assert_eq!(
        (again.checkpoint_seq, again.claim_attempt),
        (3, 1),
        "commits reset attempts"
    );
}

#[tokio::test]
async fn oldest_first_and_tenant_fair_leases_carry_their_runs() {
    let (store, _guard) = open().await;
    let first = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let second = start(&store, &OwnerScope::Tenantless, "r2", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    assert_eq!(lease.run_id, first.id);
    assert_eq!(
        lease.run.as_ref(),
        Some(&first),
        "the claim statement returns the document"
    );
    let mut fair = policy(t(1), 1);
    fair.policy = docket_core::store::ClaimPolicy::TenantFair;
    let batch = store.claim_due(&fair).await.expect("fair claim");
    assert_eq!(batch.leases.len(), 1);
    assert_eq!(batch.leases[0].run_id, second.id);
    assert_eq!(
        batch.leases[0].run.as_ref(),
        Some(&second),
        "joined to the fair call"
    );
}

#[tokio::test]
async fn both_claim_policies_commit_without_waiting_for_the_wal_flush() {
    let (store, _guard) = open().await;
    start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let mut fair = policy(t(1), 1);
    fair.policy = docket_core::store::ClaimPolicy::TenantFair;
    for request in [policy(t(1), 1), fair] {
        let (claimed, setting) = testing::claim_commit_setting(&store, &request)
            .await
            .expect("claim in a rolled-back transaction");
        assert_eq!(claimed, 1, "{:?}: the due run was selected", request.policy);
        assert_eq!(
            setting, "off",
            "{:?}: the claim's transaction commits asynchronously",
            request.policy
        );
    }
    // Both transactions were rolled back: the run is still there to claim.
    assert_eq!(claim_one(&store, t(2)).await.run_id, rid("r1"));
}
