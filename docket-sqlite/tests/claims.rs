//! `claim_due`: ready and expired classes, TTL strictness, selection order, class reservation,
//! preference, limits, and attempts → poison.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{OwnerScope, PoisonReason, RunStatus, Scope};
use docket_core::store::{ClaimClass, ClaimedSchedule, ReleaseWake, RunStore};

fn ids(leases: &[docket_core::store::ClaimLease]) -> Vec<&str> {
    leases.iter().map(|l| l.run_id.as_str()).collect()
}

#[tokio::test]
async fn a_ready_run_is_due_inclusively_at_its_wake() {
    let fx = fx().await;
    fx.start("r1", t(100)).await;
    let early = fx
        .unchanged(fx.store.claim_due(&policy(t(99), 5)))
        .await
        .unwrap();
    assert_eq!(early.outcome_count(), 0);
    assert_eq!(fx.claim_one(t(100)).await.run_id.as_str(), "r1");
}

#[tokio::test]
async fn a_lease_carries_the_row_facts_and_a_fresh_uuid_token() {
    let fx = fx().await;
    fx.publish_for(&tenant("a")).await;
    fx.start_in(&tenant("a"), "r1", t(0)).await;
    let lease = fx.claim_one(t(3)).await;
    assert_eq!(lease.owner, tenant("a"));
    assert_eq!(lease.graph_id, fx.graph.graph_id);
    assert_eq!(lease.graph_hash, fx.graph.graph_hash);
    assert_eq!(lease.checkpoint_seq, 1);
    assert_eq!(lease.claimed_at, t(3));
    assert_eq!(lease.claim_attempt, 1);
    assert_eq!(lease.orphan_ttl_ms, 60_000);
    assert!(lease.claim_token.is_uuid());
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .unwrap();
    assert_eq!(
        (info.claimed_at, info.wake_at, info.claim_attempts),
        (Some(t(3)), None, 1)
    );
}

#[tokio::test]
async fn a_live_claim_is_not_stolen_and_the_ttl_boundary_is_strict() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let first = fx.claim_one(t(0)).await;
    // claimed_at == now − ttl is not expired (strict).
    let at_boundary = fx
        .unchanged(fx.store.claim_due(&policy(t(60_000), 5)))
        .await
        .unwrap();
    assert_eq!(at_boundary.outcome_count(), 0);
    let mut just_after = policy(t(60_000), 5);
    just_after.now = just_after.now.add_micros(1);
    let batch = fx.store.claim_due(&just_after).await.unwrap();
    assert_eq!(batch.leases.len(), 1);
    let second = &batch.leases[0];
    assert_ne!(second.claim_token, first.claim_token);
    assert_eq!(
        second.claim_attempt, 2,
        "an expired steal counts as an attempt"
    );
    // The first holder is fenced out.
    let error = fx
        .rejected(fx.commit_next(
            &first,
            RunStatus::Running,
            ClaimedSchedule::RetainClaim,
            t(61),
        ))
        .await;
    assert_eq!(
        error.kind(),
        docket_core::store::StoreErrorKind::StaleCheckpoint
    );
    fx.commit_next(
        second,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(61),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn with_a_zero_ttl_any_claim_older_than_now_is_expired() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    fx.claim_one(t(0)).await;
    let mut p = policy(t(0), 1);
    p.orphan_ttl_ms = 0;
    assert_eq!(fx.store.claim_due(&p).await.unwrap().outcome_count(), 0);
    p.now = t(0).add_micros(1);
    assert_eq!(fx.store.claim_due(&p).await.unwrap().leases.len(), 1);
}

#[tokio::test]
async fn candidates_are_served_oldest_first_with_run_id_breaking_ties() {
    let fx = fx().await;
    fx.start("c", t(5)).await;
    fx.start("b", t(5)).await;
    fx.start("a", t(9)).await;
    fx.start("z", t(1)).await;
    let batch = fx.store.claim_due(&policy(t(10), 10)).await.unwrap();
    assert_eq!(ids(&batch.leases), vec!["z", "b", "c", "a"]);
}

#[tokio::test]
async fn the_limit_caps_the_outcomes() {
    let fx = fx().await;
    for i in 0..5 {
        fx.start(&format!("r{i}"), t(i)).await;
    }
    let batch = fx.store.claim_due(&policy(t(10), 3)).await.unwrap();
    assert_eq!(ids(&batch.leases), vec!["r0", "r1", "r2"]);
    let rest = fx.store.claim_due(&policy(t(10), 3)).await.unwrap();
    assert_eq!(ids(&rest.leases), vec!["r3", "r4"]);
}

/// Three expired claims (claimed at 0, 1, 2) and one ready run due at 50_000.
async fn expired_and_ready() -> Fx {
    let fx = fx().await;
    for (i, id) in ["e1", "e2", "e3"].into_iter().enumerate() {
        fx.start(id, t(i as i64)).await;
        fx.claim_one(t(i as i64)).await;
    }
    fx.start("r1", t(50_000)).await;
    fx
}

#[tokio::test]
async fn with_room_for_two_each_class_gets_a_slot_even_when_one_dominates_by_age() {
    let fx = expired_and_ready().await;
    let batch = fx.store.claim_due(&policy(t(70_000), 2)).await.unwrap();
    assert_eq!(ids(&batch.leases), vec!["e1", "r1"]);
}

#[tokio::test]
async fn beyond_the_reserved_slots_age_decides() {
    let fx = expired_and_ready().await;
    let batch = fx.store.claim_due(&policy(t(70_000), 3)).await.unwrap();
    assert_eq!(ids(&batch.leases), vec!["e1", "e2", "r1"]);
}

#[tokio::test]
async fn a_single_slot_follows_the_preference_and_falls_through_when_it_is_empty() {
    let fx = expired_and_ready().await;
    let mut p = policy(t(70_000), 1);
    p.preference = Some(ClaimClass::Ready);
    assert_eq!(
        ids(&fx.store.claim_due(&p).await.unwrap().leases),
        vec!["r1"]
    );
    // No ready run left: the preferred class is empty, demand is not wasted.
    assert_eq!(
        ids(&fx.store.claim_due(&p).await.unwrap().leases),
        vec!["e1"]
    );
    p.preference = Some(ClaimClass::Expired);
    assert_eq!(
        ids(&fx.store.claim_due(&p).await.unwrap().leases),
        vec!["e2"]
    );
}

#[tokio::test]
async fn a_single_slot_without_preference_takes_the_oldest() {
    let fx = expired_and_ready().await;
    let p = policy(t(70_000), 1);
    assert_eq!(
        ids(&fx.store.claim_due(&p).await.unwrap().leases),
        vec!["e1"]
    );
}

#[tokio::test]
async fn n_launches_are_allowed_then_the_next_claim_poisons() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let mut p = policy(t(0), 1);
    p.max_claim_attempts = NonZeroU32::new(3).unwrap();
    p.orphan_ttl_ms = 0;
    for attempt in 1..=3 {
        p.now = t(attempt);
        let batch = fx.store.claim_due(&p).await.unwrap();
        assert_eq!(batch.leases.len(), 1);
        assert_eq!(batch.leases[0].claim_attempt, attempt as u32);
    }
    p.now = t(10);
    let batch = fx.store.claim_due(&p).await.unwrap();
    assert!(batch.leases.is_empty());
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(
        batch.poisoned[0].reason,
        PoisonReason::MaxClaimAttemptsExceeded
    );
    assert_eq!(batch.poisoned[0].poisoned_at, t(10));
    let info = fx
        .store
        .inspect_run(&Scope::System, &rid("r1"))
        .await
        .unwrap();
    assert_eq!(info.claim_attempts, 3, "poisoning leaves the attempt count");
    assert_eq!((info.claimed_at, info.wake_at), (None, None));
    // Poisoned runs are never candidates again.
    p.now = t(1_000_000);
    let later = fx.unchanged(fx.store.claim_due(&p)).await.unwrap();
    assert_eq!(later.outcome_count(), 0);
}

#[tokio::test]
async fn a_poisoned_head_consumes_its_class_slot() {
    let fx = fx().await;
    fx.start("old", t(0)).await;
    let mut p = policy(t(0), 1);
    p.max_claim_attempts = NonZeroU32::new(1).unwrap();
    p.orphan_ttl_ms = 0;
    fx.store.claim_due(&p).await.unwrap();
    fx.start("fresh", t(5)).await;
    fx.start("fresher", t(6)).await;
    p.now = t(10);
    p.limit = NonZeroU32::new(2).unwrap();
    let batch = fx.store.claim_due(&p).await.unwrap();
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(batch.poisoned[0].run_id.as_str(), "old");
    assert_eq!(ids(&batch.leases), vec!["fresh"]);
}

#[tokio::test]
async fn waiting_terminal_and_future_runs_are_never_candidates() {
    let fx = fx().await;
    let waiting = fx.start("w", t(0)).await;
    let (next, events) = advance(&waiting, RunStatus::Waiting, t(1));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::External, t(1)),
            events,
        )
        .await
        .unwrap();
    let done = fx.start("d", t(0)).await;
    let (next, events) = advance(&done, RunStatus::Done, t(1));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Terminal, t(1)),
            events,
        )
        .await
        .unwrap();
    fx.start("later", t(1_000)).await;
    let batch = fx
        .unchanged(fx.store.claim_due(&policy(t(999), 10)))
        .await
        .unwrap();
    assert_eq!(batch.outcome_count(), 0);
}

#[tokio::test]
async fn claims_are_system_work_across_owners() {
    let fx = fx().await;
    fx.publish_for(&tenant("a")).await;
    fx.publish_for(&tenant("b")).await;
    fx.start_in(&tenant("b"), "rb", t(1)).await;
    fx.start_in(&tenant("a"), "ra", t(2)).await;
    fx.start("rn", t(3)).await;
    let batch = fx.store.claim_due(&policy(t(5), 10)).await.unwrap();
    let owners: Vec<OwnerScope> = batch.leases.iter().map(|l| l.owner.clone()).collect();
    assert_eq!(
        owners,
        vec![tenant("b"), tenant("a"), OwnerScope::Tenantless]
    );
}
