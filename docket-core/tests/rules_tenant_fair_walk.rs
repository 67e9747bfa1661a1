//! `rules::tenant_fair::first_round`: a store that reads the owners' heads in ring order and
//! stops once the first round holds `limit` candidates ranks the same first `limit` as one
//! that read every owner — for any shares, caps, claims, cursor and limit.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use docket_core::model::Timestamp;
use docket_core::store::rules::claim_order::Candidate;
use docket_core::store::rules::tenant_fair::{
    first_round, rank_ready, FairContext, OwnedCandidate,
};
use docket_core::store::{ClaimClass, ClaimCursor, TenantShare};
use proptest::prelude::*;

/// Owner keys, the tenantless one included, in byte order.
const OWNERS: [&str; 5] = ["", "a", "b", "c", "d"];

#[derive(Clone, Debug)]
struct World {
    /// Due runs per owner (at most the limit: a store reads `limit` heads per owner).
    runs: Vec<usize>,
    shares: Vec<Option<(u32, Option<u32>)>>,
    claimed: Vec<u32>,
    cursor: Option<(usize, u32)>,
    limit: usize,
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(0usize..5, OWNERS.len()),
        prop::collection::vec(
            prop::option::of((1u32..4, prop::option::of(1u32..4))),
            OWNERS.len(),
        ),
        prop::collection::vec(0u32..4, OWNERS.len()),
        prop::option::of((0..OWNERS.len(), 1u32..4)),
        1usize..8,
    )
        .prop_map(|(runs, shares, claimed, cursor, limit)| World {
            runs: runs.into_iter().map(|n| n.min(limit)).collect(),
            shares,
            claimed,
            cursor,
            limit,
        })
}

fn heads(world: &World, owner: usize) -> Vec<OwnedCandidate<String>> {
    (0..world.runs[owner])
        .map(|i| OwnedCandidate {
            scope_key: OWNERS[owner].to_owned(),
            candidate: Candidate {
                class: ClaimClass::Ready,
                eligible_at: Timestamp::from_millis(i64::try_from(i).unwrap_or(0) * 10),
                key: format!("{}-{i}", OWNERS[owner]),
            },
        })
        .collect()
}

/// The owners in ring order: the cursor's, then the keys after it, then those before it.
fn ring(cursor: Option<usize>) -> Vec<usize> {
    let start = cursor.unwrap_or(0);
    (start..OWNERS.len()).chain(0..start).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_walk_that_stops_after_a_full_first_round_ranks_the_same_first_limit(w in world()) {
        let shares: BTreeMap<String, TenantShare> = w.shares.iter().enumerate()
            .filter_map(|(i, s)| s.map(|(weight, cap)| (OWNERS[i].to_owned(), TenantShare {
                weight: NonZeroU32::new(weight).expect("weight"),
                cap: cap.and_then(NonZeroU32::new),
            })))
            .collect();
        let claimed: BTreeMap<String, u32> = w.claimed.iter().enumerate()
            .map(|(i, n)| (OWNERS[i].to_owned(), *n))
            .collect();
        let cursor = w.cursor.map(|(owner, taken)| ClaimCursor {
            scope_key: OWNERS[owner].to_owned(),
            taken,
        });
        let ctx = FairContext { shares: &shares, claimed: &claimed, cursor: cursor.as_ref() };
        let everything: Vec<_> = (0..OWNERS.len()).flat_map(|o| heads(&w, o)).collect();
        let mut read = Vec::new();
        let mut first = 0;
        for owner in ring(w.cursor.map(|(o, _)| o)) {
            if first >= w.limit {
                break;
            }
            first += first_round(OWNERS[owner], w.runs[owner], &ctx);
            read.extend(heads(&w, owner));
        }
        let all: Vec<_> = rank_ready(everything, &ctx).into_iter().take(w.limit).collect();
        let walked: Vec<_> = rank_ready(read, &ctx).into_iter().take(w.limit).collect();
        prop_assert_eq!(walked, all);
    }
}
