//! Claim selection order (`docs/claim-order.md`).
//!
//! * `limit ≥ 2` and both classes non-empty: the oldest candidate of each class is reserved
//!   (a poisoned head still consumes its class's slot), the rest follow in ascending
//!   `(eligible_at, class, key)` order;
//! * `limit == 1`: the preferred class first, falling through to the other when it is empty;
//!   without a preference, pure `(eligible_at, class, key)` order.
//!
//! `key` is the stable tie-break: the run id in byte order on every backend (PostgreSQL sorts
//! `run_id COLLATE "C"`), so all backends pick the same runs from the same candidates.

use crate::model::Timestamp;
use crate::store::claim::ClaimClass;

/// A claimable row as seen by the selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate<K> {
    /// Ready or expired.
    pub class: ClaimClass,
    /// `wake_at` (ready) or `claimed_at` (expired).
    pub eligible_at: Timestamp,
    /// Backend tie-break key.
    pub key: K,
}

/// Orders and truncates `candidates` to at most `limit` selections.
#[must_use]
pub fn select<K: Ord + Clone>(
    mut candidates: Vec<Candidate<K>>,
    limit: usize,
    preference: Option<ClaimClass>,
) -> Vec<Candidate<K>> {
    candidates
        .sort_by(|a, b| (a.eligible_at, a.class, &a.key).cmp(&(b.eligible_at, b.class, &b.key)));
    if limit == 0 || candidates.is_empty() {
        return Vec::new();
    }
    let head = |class: ClaimClass| candidates.iter().position(|c| c.class == class);
    let (ready, expired) = (head(ClaimClass::Ready), head(ClaimClass::Expired));
    if limit == 1 {
        let pick = match preference {
            Some(ClaimClass::Ready) => ready.or(expired),
            Some(ClaimClass::Expired) => expired.or(ready),
            None => Some(0),
        };
        return pick
            .and_then(|i| candidates.get(i).cloned())
            .into_iter()
            .collect();
    }
    let mut chosen: Vec<usize> = match (ready, expired) {
        (Some(r), Some(e)) => vec![r.min(e), r.max(e)],
        _ => Vec::new(),
    };
    for i in 0..candidates.len() {
        if chosen.len() >= limit {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    chosen
        .into_iter()
        .filter_map(|i| candidates.get(i).cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(class: ClaimClass, at: i64, key: &str) -> Candidate<String> {
        Candidate {
            class,
            eligible_at: Timestamp::from_millis(at),
            key: key.to_owned(),
        }
    }

    fn keys(v: &[Candidate<String>]) -> Vec<&str> {
        v.iter().map(|c| c.key.as_str()).collect()
    }

    use ClaimClass::{Expired, Ready};

    #[test]
    fn demand_two_reserves_one_per_class_even_when_one_class_dominates_by_age() {
        let all = vec![
            c(Expired, 1, "e1"),
            c(Expired, 2, "e2"),
            c(Expired, 3, "e3"),
            c(Ready, 9, "r1"),
        ];
        assert_eq!(keys(&select(all.clone(), 2, None)), vec!["e1", "r1"]);
        assert_eq!(keys(&select(all, 3, None)), vec!["e1", "e2", "r1"]);
    }

    #[test]
    fn demand_one_prefers_then_falls_through() {
        let all = vec![c(Expired, 1, "e1"), c(Ready, 2, "r1")];
        assert_eq!(keys(&select(all.clone(), 1, Some(Ready))), vec!["r1"]);
        assert_eq!(keys(&select(all.clone(), 1, Some(Expired))), vec!["e1"]);
        assert_eq!(keys(&select(all.clone(), 1, None)), vec!["e1"]);
        let only_ready = vec![c(Ready, 2, "r1")];
        assert_eq!(keys(&select(only_ready, 1, Some(Expired))), vec!["r1"]);
    }

    #[test]
    fn ties_break_by_class_then_key() {
        let all = vec![c(Ready, 1, "b"), c(Ready, 1, "a"), c(Expired, 1, "z")];
        assert_eq!(keys(&select(all, 5, None)), vec!["a", "b", "z"]);
    }

    #[test]
    fn empty_and_zero_limit() {
        assert!(select::<String>(vec![], 3, None).is_empty());
        assert!(select(vec![c(Ready, 1, "a")], 0, None).is_empty());
    }
}
