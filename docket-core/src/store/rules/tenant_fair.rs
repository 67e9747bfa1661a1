//! The order of [`ClaimPolicy::TenantFair`](crate::store::ClaimPolicy::TenantFair)
//! (`docs/claim-order.md`, “Tenant-fair claiming”).
//!
//! Ready candidates are served breadth-first across owners (the owner key is
//! `OwnerScope::scope_key`: `""` for tenantless runs, else the tenant id). Each owner's own
//! candidates are numbered `i = 1, 2, …` in `(wake_at, run_id)` order; an owner of weight `w`
//! takes `w` of them per round. Rounds visit owners in byte order of their key, rotated so
//! that the owner the stored cursor names comes first (with only the rest of its round left),
//! then the owners after it, then the owners before it. So every candidate has the rank
//!
//! ```text
//! i'   = i + (owner is the cursor's ? min(cursor.taken, w) : 0)
//! rank = ((i' - 1) / w,  rotation(owner),  owner key,  i)
//! rotation = 0 for the cursor's owner, 1 for a key after it, 2 for a key before it
//!            (1 for every owner while there is no cursor)
//! ```
//!
//! and the candidates are served in ascending rank. An owner with a cap `c` and `n` runs
//! claimed right now (expired claims included) offers only its first `c - n` candidates.
//! After a pass, the cursor names the owner of the last ready candidate selected, with
//! `taken = (i' - 1) mod w + 1`.
//!
//! Both classes then merge as `[oldest expired] ++ ready in rank order ++ [other expired]`:
//! a steal never waits behind a whole round of ready work, and never crowds it out either.
//! With `limit == 1` and a `Ready` preference the first ready candidate is served (falling
//! through to the oldest expired one); otherwise the first of that sequence.
//!
//! Everything here is deterministic: the same stored rows, shares and cursor give the same
//! selection on every backend, which the conformance model test checks step by step.

use std::collections::BTreeMap;

use crate::store::claim::{ClaimClass, ClaimCursor, TenantShare};

use super::claim_order::Candidate;

/// What a tenant-fair pass needs besides the candidates, by owner key.
#[derive(Clone, Copy, Debug)]
pub struct FairContext<'a> {
    /// Stored shares (owners without one have [`TenantShare::default`]).
    pub shares: &'a BTreeMap<String, TenantShare>,
    /// Runs claimed right now per owner (rows with a claim token, expired or not).
    pub claimed: &'a BTreeMap<String, u32>,
    /// The stored cursor (`None` before the first fair claim).
    pub cursor: Option<&'a ClaimCursor>,
}

static NO_SHARES: BTreeMap<String, TenantShare> = BTreeMap::new();
static NO_CLAIMS: BTreeMap<String, u32> = BTreeMap::new();

impl FairContext<'static> {
    /// No shares, no claims, no cursor: what an `Oldest` pass passes (it reads none of it).
    #[must_use]
    pub fn empty() -> Self {
        FairContext {
            shares: &NO_SHARES,
            claimed: &NO_CLAIMS,
            cursor: None,
        }
    }
}

/// A ready candidate with its owner key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedCandidate<K> {
    /// `OwnerScope::scope_key` of the run's owner.
    pub scope_key: String,
    /// The candidate (its class is `Ready`).
    pub candidate: Candidate<K>,
}

/// A ready candidate in its fair place: the cursor to store if it is the last one selected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranked<K> {
    /// The candidate.
    pub candidate: Candidate<K>,
    /// The cursor after serving it.
    pub cursor: ClaimCursor,
}

/// Where an owner comes in each round, relative to the cursor.
fn rotation(scope_key: &str, cursor: Option<&ClaimCursor>) -> u8 {
    match cursor.map(|c| c.scope_key.as_str()) {
        None => 1,
        Some(at) if scope_key == at => 0,
        Some(at) if scope_key > at => 1,
        Some(_) => 2,
    }
}

/// How many ready candidates `owner` may be served now: its cap less the runs it holds
/// claimed (every one without a cap).
fn offered(owner: &str, share: TenantShare, ctx: &FairContext<'_>) -> usize {
    share.cap.map_or(usize::MAX, |cap| {
        let held = ctx.claimed.get(owner).copied().unwrap_or(0);
        usize::try_from(cap.get().saturating_sub(held)).unwrap_or(usize::MAX)
    })
}

/// How many of an owner's first `available` ready candidates [`rank_ready`] places in the
/// first round (rank `(0, …)`): what its weight leaves of that round — all of it, or for the
/// cursor's owner what the cursor has not taken yet — within what its cap offers.
///
/// Rounds come first in the rank, and the first round visits the owners in ring order (the
/// cursor's owner, then the keys after it, then the keys before it). So a store that reads
/// the owners' heads in ring order and has met owners whose first-round counts add up to
/// `limit` has read every candidate among the first `limit` in rank: it may stop there, and
/// [`rank_ready`] of what it read begins with the same `limit` candidates as of everything.
#[must_use]
pub fn first_round(owner: &str, available: usize, ctx: &FairContext<'_>) -> usize {
    let share = ctx.shares.get(owner).copied().unwrap_or_default();
    let weight = u64::from(share.weight.get());
    let taken = ctx
        .cursor
        .filter(|c| c.scope_key == owner)
        .map_or(0, |c| u64::from(c.taken).min(weight));
    let left = usize::try_from(weight - taken).unwrap_or(usize::MAX);
    available.min(left).min(offered(owner, share, ctx))
}

/// Orders the ready candidates by fair rank, dropping those beyond an owner's cap.
#[must_use]
pub fn rank_ready<K: Ord + Clone>(
    ready: Vec<OwnedCandidate<K>>,
    ctx: &FairContext<'_>,
) -> Vec<Ranked<K>> {
    let mut by_owner: BTreeMap<String, Vec<Candidate<K>>> = BTreeMap::new();
    for owned in ready {
        by_owner
            .entry(owned.scope_key)
            .or_default()
            .push(owned.candidate);
    }
    let mut ranked = Vec::new();
    for (owner, mut candidates) in by_owner {
        candidates.sort_by(|a, b| (a.eligible_at, &a.key).cmp(&(b.eligible_at, &b.key)));
        let share = ctx.shares.get(&owner).copied().unwrap_or_default();
        let weight = u64::from(share.weight.get());
        let offered = offered(&owner, share, ctx);
        let cursor = ctx.cursor.filter(|c| c.scope_key == owner);
        let offset = cursor.map_or(0, |c| u64::from(c.taken).min(weight));
        let turn = rotation(&owner, ctx.cursor);
        for (i, candidate) in (1u64..).zip(candidates).take(offered) {
            let effective = i + offset;
            let round = (effective - 1) / weight;
            let taken = u32::try_from((effective - 1) % weight + 1).unwrap_or(u32::MAX);
            ranked.push((
                (round, turn, owner.clone(), i),
                Ranked {
                    candidate,
                    cursor: ClaimCursor {
                        scope_key: owner.clone(),
                        taken,
                    },
                },
            ));
        }
    }
    ranked.sort_by(|a, b| a.0.cmp(&b.0));
    ranked.into_iter().map(|(_, r)| r).collect()
}

/// Merges the expired candidates (any order) with the ranked ready ones and truncates to
/// `limit`. Returns the selection and the cursor to store (`None`: no ready candidate was
/// selected, the stored cursor stays).
#[must_use]
pub fn select_fair<K: Ord + Clone>(
    mut expired: Vec<Candidate<K>>,
    ready: Vec<Ranked<K>>,
    limit: usize,
    preference: Option<ClaimClass>,
) -> (Vec<Candidate<K>>, Option<ClaimCursor>) {
    expired.sort_by(|a, b| (a.eligible_at, &a.key).cmp(&(b.eligible_at, &b.key)));
    let mut expired = expired.into_iter();
    let mut sequence: Vec<(Candidate<K>, Option<ClaimCursor>)> = Vec::new();
    if limit == 1 && preference == Some(ClaimClass::Ready) && !ready.is_empty() {
        sequence.extend(ready.into_iter().map(|r| (r.candidate, Some(r.cursor))));
    } else {
        sequence.extend(expired.next().map(|c| (c, None)));
        sequence.extend(ready.into_iter().map(|r| (r.candidate, Some(r.cursor))));
        sequence.extend(expired.map(|c| (c, None)));
    }
    sequence.truncate(limit);
    let cursor = sequence.iter().rev().find_map(|(_, cursor)| cursor.clone());
    (sequence.into_iter().map(|(c, _)| c).collect(), cursor)
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    fn ready(owner: &str, at: i64, key: &str) -> OwnedCandidate<String> {
        OwnedCandidate {
            scope_key: owner.to_owned(),
            candidate: Candidate {
                class: ClaimClass::Ready,
                eligible_at: crate::model::Timestamp::from_millis(at),
                key: key.to_owned(),
            },
        }
    }

    fn expired(at: i64, key: &str) -> Candidate<String> {
        Candidate {
            class: ClaimClass::Expired,
            eligible_at: crate::model::Timestamp::from_millis(at),
            key: key.to_owned(),
        }
    }

    fn share(weight: u32, cap: Option<u32>) -> TenantShare {
        TenantShare {
            weight: NonZeroU32::new(weight).expect("weight"),
            cap: cap.and_then(NonZeroU32::new),
        }
    }

    fn order(
        all: Vec<OwnedCandidate<String>>,
        shares: &BTreeMap<String, TenantShare>,
        claimed: &BTreeMap<String, u32>,
        cursor: Option<&ClaimCursor>,
    ) -> Vec<String> {
        let ctx = FairContext {
            shares,
            claimed,
            cursor,
        };
        rank_ready(all, &ctx)
            .into_iter()
            .map(|r| r.candidate.key)
            .collect()
    }

    fn backlog() -> Vec<OwnedCandidate<String>> {
        vec![
            ready("big", 1, "b1"),
            ready("big", 2, "b2"),
            ready("big", 3, "b3"),
            ready("a", 9, "a1"),
            ready("c", 8, "c1"),
            ready("c", 9, "c2"),
        ]
    }

    #[test]
    fn owners_are_served_breadth_first_in_key_order_from_the_cursor() {
        let none = BTreeMap::new();
        assert_eq!(
            order(backlog(), &none, &BTreeMap::new(), None),
            ["a1", "b1", "c1", "b2", "c2", "b3"]
        );
        let at_big = ClaimCursor {
            scope_key: "big".into(),
            taken: 1,
        };
        assert_eq!(
            order(backlog(), &none, &BTreeMap::new(), Some(&at_big)),
            ["c1", "a1", "b1", "c2", "b2", "b3"]
        );
    }

    #[test]
    fn weights_give_that_many_claims_per_round_and_the_cursor_remembers_a_partial_round() {
        let shares = BTreeMap::from([("big".to_owned(), share(2, None))]);
        let none = BTreeMap::new();
        assert_eq!(
            order(backlog(), &shares, &none, None),
            ["a1", "b1", "b2", "c1", "b3", "c2"]
        );
        let half = ClaimCursor {
            scope_key: "big".into(),
            taken: 1,
        };
        assert_eq!(
            order(backlog(), &shares, &none, Some(&half)),
            ["b1", "c1", "a1", "b2", "b3", "c2"]
        );
    }

    #[test]
    fn a_cap_offers_only_what_is_left_of_it() {
        let shares = BTreeMap::from([("big".to_owned(), share(1, Some(2)))]);
        let claimed = BTreeMap::from([("big".to_owned(), 1)]);
        assert_eq!(
            order(backlog(), &shares, &claimed, None),
            ["a1", "b1", "c1", "c2"]
        );
        let full = BTreeMap::from([("big".to_owned(), 2)]);
        assert_eq!(order(backlog(), &shares, &full, None), ["a1", "c1", "c2"]);
    }

    #[test]
    fn expired_head_first_then_ready_then_the_other_expired_and_the_cursor_follows() {
        let none = BTreeMap::new();
        let ctx = FairContext {
            shares: &none,
            claimed: &BTreeMap::new(),
            cursor: None,
        };
        let ranked = rank_ready(backlog(), &ctx);
        let steals = vec![expired(5, "e2"), expired(1, "e1")];
        let (picked, cursor) = select_fair(steals.clone(), ranked.clone(), 3, None);
        let keys: Vec<_> = picked.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["e1", "a1", "b1"]);
        assert_eq!(
            cursor,
            Some(ClaimCursor {
                scope_key: "big".into(),
                taken: 1
            })
        );
        let (one, _) = select_fair(steals.clone(), ranked.clone(), 1, Some(ClaimClass::Ready));
        assert_eq!(one[0].key, "a1");
        let (one, cursor) = select_fair(steals, ranked, 1, None);
        assert_eq!((one[0].key.as_str(), cursor), ("e1", None));
    }
}
