//! Claims: ready and expired candidates, the TTL boundary, class selection order and
//! reservation, preference, attempts and poison.

use docket_core::model::{OwnerScope, PoisonReason, Scope};
use docket_core::store::rules::claim_order::{select, Candidate};
use docket_core::store::{ClaimClass, RunStore};

use crate::common::*;

#[tokio::test]
async fn ready_is_inclusive_and_future_wakes_wait() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &owner, "g").await;
    start(&fx.store, &owner, "r1", &graph, t(100)).await;
    let early = fx
        .store
        .claim_due(&policy(t(99), 5, 60_000, 5, None))
        .await
        .expect("claim");
    assert_eq!(early.outcome_count(), 0);
    let lease = claim_one(&fx.store, t(100)).await;
    assert_eq!(lease.run_id, rid("r1"));
    assert_eq!((lease.checkpoint_seq, lease.claim_attempt), (1, 1));
    assert_eq!(lease.claimed_at, t(100));
    assert_eq!(lease.orphan_ttl_ms, 60_000);
    assert!(lease.claim_token.is_uuid());
    let info = fx
        .store
        .inspect_run(&Scope::System, &lease.run_id)
        .await
        .expect("inspect");
    assert_eq!((info.claimed_at, info.wake_at), (Some(t(100)), None));
}

#[tokio::test]
async fn expiry_is_strictly_older_than_the_ttl() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let first = claim_one(&fx.store, t(0)).await;
    let at_boundary = fx
        .store
        .claim_due(&policy(t(1_000), 5, 1_000, 5, None))
        .await
        .expect("claim");
    assert_eq!(
        at_boundary.outcome_count(),
        0,
        "claimed_at == now - ttl is live"
    );
    let past = t(1_000).add_micros(1);
    let stolen = fx
        .store
        .claim_due(&policy(past, 5, 1_000, 5, None))
        .await
        .expect("claim");
    assert_eq!(stolen.leases.len(), 1);
    assert_eq!(stolen.leases[0].claim_attempt, 2);
    assert_ne!(stolen.leases[0].claim_token, first.claim_token);
    // TTL 0: any claim older than now expires.
    let zero = fx
        .store
        .claim_due(&policy(past.add_micros(1), 5, 0, 5, None))
        .await
        .expect("claim");
    assert_eq!(zero.leases.len(), 1);
}

#[tokio::test]
async fn n_launches_are_allowed_then_the_next_claim_poisons() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let mut now = t(0);
    for attempt in 1..=3 {
        let batch = fx
            .store
            .claim_due(&policy(now, 1, 0, 3, None))
            .await
            .expect("claim");
        assert_eq!(batch.leases.len(), 1);
        assert_eq!(batch.leases[0].claim_attempt, attempt);
        now = now.add_millis(1);
    }
    let batch = fx
        .store
        .claim_due(&policy(now, 1, 0, 3, None))
        .await
        .expect("claim");
    assert_eq!(batch.leases, vec![]);
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(
        batch.poisoned[0].reason,
        PoisonReason::MaxClaimAttemptsExceeded
    );
    assert_eq!(batch.poisoned[0].poisoned_at, now);
    let info = fx
        .store
        .inspect_run(&Scope::System, &rid("r1"))
        .await
        .expect("inspect");
    assert!(info.is_poisoned());
    assert_eq!(
        (info.claim_attempts, info.wake_at, info.claimed_at),
        (3, None, None)
    );
    let later = fx
        .store
        .claim_due(&policy(now.add_millis(10_000), 5, 0, 3, None))
        .await
        .expect("claim");
    assert_eq!(later.outcome_count(), 0, "poisoned runs are never claimed");
}

/// Sets up runs whose claim classes and eligibility times are given, then compares the
/// script's selection with core's `claim_order::select` for several limits and preferences.
#[tokio::test]
async fn selection_follows_core_claim_order_for_every_limit_and_preference() {
    // (run, class, eligible_at ms). Expired runs are claimed at their time, ready runs wake then.
    let layout: &[(&str, ClaimClass, i64)] = &[
        ("e1", ClaimClass::Expired, 1),
        ("e2", ClaimClass::Expired, 2),
        ("e3", ClaimClass::Expired, 4),
        ("r1", ClaimClass::Ready, 4),
        ("r2", ClaimClass::Ready, 9),
        ("r3", ClaimClass::Ready, 9),
        ("r0", ClaimClass::Ready, 9),
    ];
    let now = t(10_000);
    let ttl = 1_000;
    for limit in [1u32, 2, 3, 5, 10] {
        for preference in [None, Some(ClaimClass::Ready), Some(ClaimClass::Expired)] {
            let fx = open().await;
            let owner = OwnerScope::Tenantless;
            let graph = publish(&fx.store, &owner, "g").await;
            for (id, class, at) in layout {
                match class {
                    ClaimClass::Ready => {
                        start(&fx.store, &owner, id, &graph, t(*at)).await;
                    }
                    ClaimClass::Expired => {
                        start(&fx.store, &owner, id, &graph, t(*at)).await;
                        let lease = claim_one(&fx.store, t(*at)).await;
                        assert_eq!(lease.run_id, rid(id));
                    }
                }
            }
            let batch = fx
                .store
                .claim_due(&policy(now, limit, ttl, 5, preference))
                .await
                .expect("claim");
            let got: Vec<String> = batch
                .leases
                .iter()
                .map(|l| l.run_id.as_str().to_owned())
                .collect();
            let candidates = layout
                .iter()
                .map(|(id, class, at)| Candidate {
                    class: *class,
                    eligible_at: t(*at),
                    key: (*id).to_owned(),
                })
                .collect();
            let expected: Vec<String> = select(candidates, limit as usize, preference)
                .into_iter()
                .map(|c| c.key)
                .collect();
            assert_eq!(got, expected, "limit {limit}, preference {preference:?}");
        }
    }
}

#[tokio::test]
async fn a_poisoned_head_consumes_its_class_reservation() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &owner, "g").await;
    // e1 is expired with its attempts used up; r1 and r2 are ready but younger than e2.
    start(&fx.store, &owner, "e1", &graph, t(0)).await;
    claim_one(&fx.store, t(0)).await;
    start(&fx.store, &owner, "e2", &graph, t(1)).await;
    let batch = fx
        .store
        .claim_due(&policy(t(1), 1, 60_000, 5, Some(ClaimClass::Ready)))
        .await
        .expect("claim e2");
    assert_eq!(batch.leases[0].run_id, rid("e2"));
    start(&fx.store, &owner, "r1", &graph, t(5)).await;
    start(&fx.store, &owner, "r2", &graph, t(6)).await;
    let batch = fx
        .store
        .claim_due(&policy(t(10_000), 2, 1_000, 1, None))
        .await
        .expect("claim");
    let poisoned: Vec<_> = batch.poisoned.iter().map(|p| p.run_id.clone()).collect();
    let leased: Vec<_> = batch.leases.iter().map(|l| l.run_id.clone()).collect();
    assert_eq!(poisoned, vec![rid("e1")]);
    assert_eq!(leased, vec![rid("r1")]);
}
