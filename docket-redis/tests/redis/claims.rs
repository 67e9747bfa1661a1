//! Claims: ready and expired candidates, the TTL boundary, class selection order and
//! reservation, preference, attempts and poison.

use docket_core::model::OwnerScope;
use docket_core::store::rules::claim_order::{select, Candidate};
use docket_core::store::{ClaimClass, RunStore};

use crate::common::*;

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
