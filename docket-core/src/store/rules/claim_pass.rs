//! One `claim_due` pass (`docs/state-machines.md`, “Operational transitions”;
//! `docs/claim-order.md`): which loaded rows are claimable now, in which order, and what each
//! becomes (a lease or a poison).
//!
//! Stores that decide in Rust (memory, SQLite, a custom store) load the candidate rows, call
//! [`claim_pass`] and write the changed operational state back in the same atomic step; stores
//! that decide in one statement or script (PostgreSQL, Redis) encode the same conditions and
//! are compared with this function by the conformance suite's model test.

use crate::model::{
    ClaimToken, GraphHash, GraphId, OperationalState, OwnerScope, RunId, RunStatus,
};
use crate::store::claim::{
    ClaimBatch, ClaimClass, ClaimCursor, ClaimLease, ClaimPolicy, ClaimRequest, PoisonedClaim,
};

use super::claim_order::{select, Candidate};
use super::effects::{
    apply_admission, apply_claim_poison, apply_lease, claim_class, claim_decision, ClaimDecision,
};
use super::tenant_fair::{rank_ready, select_fair, FairContext, OwnedCandidate};

/// What the claim rules need to know of one stored run (columns only, never the document).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRow {
    /// Run id (the tie-break of the claim order).
    pub run_id: RunId,
    /// Owner, copied into the lease.
    pub owner: OwnerScope,
    /// Graph id, copied into the lease.
    pub graph_id: GraphId,
    /// Graph hash, copied into the lease.
    pub graph_hash: GraphHash,
    /// Stored status.
    pub status: RunStatus,
    /// Committed seq, copied into the lease.
    pub checkpoint_seq: u64,
    /// Operational state; updated in place for the rows the pass changes.
    pub ops: OperationalState,
}

/// What one pass decided.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ClaimPassOutcome {
    /// The leases and poisons, in selection order.
    pub batch: ClaimBatch,
    /// The rows the pass changed, with their new operational state, in selection order.
    pub changed: Vec<ClaimRow>,
    /// The tenant-fair cursor to store (`None`: leave the stored one as it is).
    pub cursor: Option<ClaimCursor>,
}

/// Runs one pass over `rows` (every row the store loaded as a possible candidate; rows that are
/// not claimable at `policy.now` are ignored). Under `ClaimPolicy::TenantFair`, `fair` holds
/// the stored shares and cursor and the runs each owner has claimed now; `Oldest` ignores it.
#[must_use]
pub fn claim_pass(
    rows: impl IntoIterator<Item = ClaimRow>,
    policy: &ClaimRequest,
    fair: &FairContext<'_>,
) -> ClaimPassOutcome {
    let mut pool = std::collections::BTreeMap::new();
    let mut candidates = Vec::new();
    for row in rows {
        if let Some((class, eligible_at)) =
            claim_class(row.status, &row.ops, policy.now, policy.orphan_ttl_ms)
        {
            candidates.push((
                row.owner.scope_key().to_owned(),
                Candidate {
                    class,
                    eligible_at,
                    key: row.run_id.clone(),
                },
            ));
            pool.insert(row.run_id.clone(), row);
        }
    }
    let limit = usize::try_from(policy.limit.get()).unwrap_or(usize::MAX);
    let (selection, cursor) = match policy.policy {
        ClaimPolicy::Oldest => {
            let all = candidates.into_iter().map(|(_, c)| c).collect();
            (select(all, limit, policy.preference), None)
        }
        ClaimPolicy::TenantFair => {
            let (ready, expired): (Vec<_>, Vec<_>) = candidates
                .into_iter()
                .partition(|(_, c)| c.class == ClaimClass::Ready);
            let ready = ready
                .into_iter()
                .map(|(scope_key, candidate)| OwnedCandidate {
                    scope_key,
                    candidate,
                })
                .collect();
            let expired = expired.into_iter().map(|(_, c)| c).collect();
            select_fair(expired, rank_ready(ready, fair), limit, policy.preference)
        }
    };
    let mut batch = ClaimBatch::default();
    let mut changed = Vec::new();
    for chosen in selection {
        let Some(mut row) = pool.remove(&chosen.key) else {
            continue;
        };
        match claim_decision(&row.ops, policy.max_claim_attempts.get()) {
            ClaimDecision::Lease { attempt } => {
                let token = ClaimToken::mint();
                apply_lease(&mut row.ops, token.clone(), policy.now);
                apply_admission(&mut row.ops, policy.policy, policy.now);
                batch.leases.push(ClaimLease {
                    run_id: row.run_id.clone(),
                    owner: row.owner.clone(),
                    graph_id: row.graph_id.clone(),
                    graph_hash: row.graph_hash.clone(),
                    checkpoint_seq: row.checkpoint_seq,
                    claim_token: token,
                    claimed_at: policy.now,
                    claim_attempt: attempt,
                    orphan_ttl_ms: policy.orphan_ttl_ms,
                    run: None,
                });
            }
            ClaimDecision::Poison => {
                apply_claim_poison(&mut row.ops, policy.now);
                if let Some(poison) = row.ops.poison {
                    tracing::warn!(
                        run_id = %row.run_id,
                        reason = poison.reason.as_str(),
                        "docket.claim.poisoned"
                    );
                    batch.poisoned.push(PoisonedClaim {
                        run_id: row.run_id.clone(),
                        poisoned_at: poison.poisoned_at,
                        reason: poison.reason,
                    });
                }
            }
        }
        changed.push(row);
    }
    ClaimPassOutcome {
        batch,
        changed,
        cursor,
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::model::{PoisonReason, Timestamp};
    use crate::store::rules::effects::initial_state;

    fn row(id: &str, wake_ms: i64, attempts: u32) -> ClaimRow {
        let mut ops = initial_state(Timestamp::from_millis(wake_ms));
        ops.claim_attempts = attempts;
        ClaimRow {
            run_id: RunId::new(id).expect("id"),
            owner: OwnerScope::Tenantless,
            graph_id: GraphId::new("g").expect("id"),
            graph_hash: GraphHash::new("h").expect("id"),
            status: RunStatus::Running,
            checkpoint_seq: 3,
            ops,
        }
    }

    fn policy(limit: u32, max_attempts: u32) -> ClaimRequest {
        ClaimRequest {
            policy: ClaimPolicy::Oldest,
            now: Timestamp::from_millis(100),
            limit: NonZeroU32::new(limit).expect("limit"),
            orphan_ttl_ms: 10,
            max_claim_attempts: NonZeroU32::new(max_attempts).expect("max"),
            preference: Some(ClaimClass::Ready),
        }
    }

    #[test]
    fn leases_the_oldest_due_rows_and_ignores_future_wakes() {
        let rows = vec![row("b", 50, 0), row("a", 50, 0), row("late", 200, 0)];
        let ClaimPassOutcome { batch, changed, .. } =
            claim_pass(rows, &policy(5, 3), &FairContext::empty());
        let leased: Vec<&str> = batch.leases.iter().map(|l| l.run_id.as_str()).collect();
        assert_eq!(leased, vec!["a", "b"]);
        assert!(batch
            .leases
            .iter()
            .all(|l| l.checkpoint_seq == 3 && l.claim_attempt == 1));
        assert_eq!(changed.len(), 2);
        assert!(changed
            .iter()
            .all(|r| r.ops.claim_token.is_some() && r.ops.wake_at.is_none()));
    }

    #[test]
    fn a_row_at_its_attempt_limit_is_poisoned_instead_of_leased() {
        let ClaimPassOutcome { batch, changed, .. } = claim_pass(
            vec![row("tired", 50, 3)],
            &policy(5, 3),
            &FairContext::empty(),
        );
        assert!(batch.leases.is_empty());
        assert_eq!(
            batch.poisoned.first().map(|p| p.reason),
            Some(PoisonReason::MaxClaimAttemptsExceeded)
        );
        assert_eq!(changed.first().map(|r| r.ops.claim_attempts), Some(3));
    }

    #[test]
    fn the_limit_bounds_leases_and_poisons_together() {
        let rows = vec![row("a", 10, 3), row("b", 20, 0), row("c", 30, 0)];
        let ClaimPassOutcome { batch, changed, .. } =
            claim_pass(rows, &policy(2, 3), &FairContext::empty());
        assert_eq!(batch.outcome_count(), 2);
        assert_eq!(changed.len(), 2);
    }
}
