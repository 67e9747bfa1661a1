//! Operational effects on the run row (`docs/state-machines.md`, “Row invariants”;
//! `docs/state-machines.md`, “Operational transitions”): what each transition and claim operation
//! does to the wake, the claim, the counters and the poison facts.
//!
//! Stores that can run Rust inside their transaction (memory, SQLite) apply these functions to
//! the loaded row; stores that cannot (PostgreSQL, Redis) encode the same table in one
//! statement or script, and the conformance suite compares them with these functions.

use crate::model::{
    CheckpointType, ClaimToken, OperationalState, Poison, PoisonReason, RunStatus, Timestamp,
};
use crate::store::claim::{AbandonMode, AbandonOutcome, AbandonPolicy, ClaimClass, ClaimPolicy};
use crate::store::error::StoreError;
use crate::store::schedule::{ClaimedSchedule, ReleaseWake};

/// The row of a freshly initialized run.
#[must_use]
pub fn initial_state(wake_at: Timestamp) -> OperationalState {
    OperationalState {
        claim_token: None,
        wake_at: Some(wake_at),
        claimed_at: None,
        claim_attempts: 0,
        claim_abandons: 0,
        poison: None,
        latest_checkpoint_type: CheckpointType::RunInitialized,
        admitted_at: None,
    }
}

/// Whether a commit keeps the admission marker: only a claimed commit that keeps its claim or
/// hands it back for an immediate wake continues the same stretch of cooperative work; a
/// timed, external or terminal release, and every unclaimed commit (a signal), end it.
#[must_use]
pub fn commit_keeps_admission(claimed: bool, schedule: ClaimedSchedule) -> bool {
    claimed
        && matches!(
            schedule,
            ClaimedSchedule::RetainClaim | ClaimedSchedule::Release(ReleaseWake::Immediate)
        )
}

/// Effect of a committed moment: counters and poison reset, then the schedule applies.
/// `claimed` says whether the commit was fenced by a claim token (else it is a signal).
pub fn apply_commit(
    ops: &mut OperationalState,
    checkpoint_type: CheckpointType,
    schedule: ClaimedSchedule,
    claimed: bool,
    now: Timestamp,
) {
    if !commit_keeps_admission(claimed, schedule) {
        ops.admitted_at = None;
    }
    ops.claim_attempts = 0;
    ops.claim_abandons = 0;
    ops.poison = None;
    ops.latest_checkpoint_type = checkpoint_type;
    match schedule {
        ClaimedSchedule::RetainClaim => {
            ops.claimed_at = Some(now);
            ops.wake_at = None;
        }
        ClaimedSchedule::Release(wake) => {
            ops.claim_token = None;
            ops.claimed_at = None;
            ops.wake_at = wake.wake_at(now);
        }
    }
}

/// Whether the row is claimable now, and as which class with which eligibility time.
#[must_use]
pub fn claim_class(
    status: RunStatus,
    ops: &OperationalState,
    now: Timestamp,
    orphan_ttl_ms: u64,
) -> Option<(ClaimClass, Timestamp)> {
    if status != RunStatus::Running || ops.poison.is_some() {
        return None;
    }
    match (ops.claimed_at, ops.wake_at) {
        (Some(claimed_at), _) => {
            let ttl = i64::try_from(orphan_ttl_ms).unwrap_or(i64::MAX);
            let cutoff = now.add_millis(-ttl);
            (claimed_at < cutoff).then_some((ClaimClass::Expired, claimed_at))
        }
        (None, Some(wake_at)) => (wake_at <= now).then_some((ClaimClass::Ready, wake_at)),
        (None, None) => None,
    }
}

/// What a selected candidate becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Leased with this new attempt count.
    Lease {
        /// `claim_attempts + 1`.
        attempt: u32,
    },
    /// Poisoned (`max_claim_attempts_exceeded`); attempts unchanged.
    Poison,
}

/// `N` launches are allowed; the `(N+1)`-th claim need poisons.
#[must_use]
pub fn claim_decision(ops: &OperationalState, max_claim_attempts: u32) -> ClaimDecision {
    if ops.claim_attempts < max_claim_attempts {
        ClaimDecision::Lease {
            attempt: ops.claim_attempts.saturating_add(1),
        }
    } else {
        ClaimDecision::Poison
    }
}

/// Applies a lease: new token, `claimed_at = now`, no wake, attempts + 1.
pub fn apply_lease(ops: &mut OperationalState, token: ClaimToken, now: Timestamp) {
    ops.claim_token = Some(token);
    ops.claimed_at = Some(now);
    ops.wake_at = None;
    ops.claim_attempts = ops.claim_attempts.saturating_add(1);
}

/// Sets the admission marker of a run a tenant-fair claim leased, unless it already has one
/// (a steal or a cooperative re-claim continues the same admission). `Oldest` never sets it.
pub fn apply_admission(ops: &mut OperationalState, policy: ClaimPolicy, now: Timestamp) {
    if policy == ClaimPolicy::TenantFair && ops.admitted_at.is_none() {
        ops.admitted_at = Some(now);
    }
}

/// Applies a poisoning claim: no token, no wake, no admission, poisoned now; attempts
/// unchanged.
pub fn apply_claim_poison(ops: &mut OperationalState, now: Timestamp) {
    ops.admitted_at = None;
    ops.claim_token = None;
    ops.claimed_at = None;
    ops.wake_at = None;
    ops.poison = Some(Poison {
        poisoned_at: now,
        reason: PoisonReason::MaxClaimAttemptsExceeded,
    });
}

/// Whether `token` is the row's current claim.
#[must_use]
pub fn holds_claim(ops: &OperationalState, token: &ClaimToken) -> bool {
    ops.claim_token.as_ref() == Some(token)
}

/// Release: when `token` is current, clear the claim and wake at `now`; attempts unchanged.
/// Returns whether anything changed.
pub fn apply_release(ops: &mut OperationalState, token: &ClaimToken, now: Timestamp) -> bool {
    if !holds_claim(ops, token) {
        return false;
    }
    ops.claim_token = None;
    ops.claimed_at = None;
    ops.wake_at = Some(now);
    true
}

/// Checks an abandon policy.
///
/// # Errors
/// `InvalidArgument` when `retry_at < now` or a backoff has `cap < base` or `base == 0`.
pub fn validate_abandon_policy(policy: &AbandonPolicy) -> Result<(), StoreError> {
    if policy.retry_at < policy.now {
        return Err(StoreError::invalid_argument(
            "abandon retry_at must not be before now",
        ));
    }
    if let AbandonMode::NonPoisoning {
        backoff: Some(backoff),
    } = policy.mode
    {
        if backoff.base_ms == 0 || backoff.cap_ms < backoff.base_ms {
            return Err(StoreError::invalid_argument(
                "abandon backoff needs base_ms >= 1 and cap_ms >= base_ms",
            ));
        }
    }
    Ok(())
}

/// The exponential wake of a non-poisoning abandon:
/// `now + min(base × 2^min(abandons_before, 30), cap)`.
#[must_use]
pub fn backoff_wake(now: Timestamp, abandons_before: u32, base_ms: u64, cap_ms: u64) -> Timestamp {
    let factor = 1u64 << abandons_before.min(30);
    let delay = base_ms.saturating_mul(factor).min(cap_ms);
    now.add_millis(i64::try_from(delay).unwrap_or(i64::MAX))
}

/// Abandon (`docs/state-machines.md`, “Operational transitions”): fenced on token and seq. Returns
/// the outcome; on `Stale` nothing changed. Call [`validate_abandon_policy`] first.
pub fn apply_abandon(
    ops: &mut OperationalState,
    checkpoint_seq: u64,
    token: &ClaimToken,
    policy: &AbandonPolicy,
) -> AbandonOutcome {
    if !holds_claim(ops, token) || checkpoint_seq != policy.expected_seq {
        return AbandonOutcome::Stale;
    }
    let abandons_before = ops.claim_abandons;
    ops.admitted_at = None;
    ops.claim_token = None;
    ops.claimed_at = None;
    ops.claim_attempts = ops.claim_attempts.saturating_sub(1);
    match policy.mode {
        AbandonMode::NonPoisoning { backoff } => {
            ops.claim_abandons = abandons_before.saturating_add(1);
            ops.wake_at = Some(match backoff {
                Some(b) => backoff_wake(policy.now, abandons_before, b.base_ms, b.cap_ms),
                None => policy.retry_at,
            });
            AbandonOutcome::Rescheduled
        }
        AbandonMode::Poisoning if abandons_before < policy.max_claim_abandons.get() => {
            ops.claim_abandons = abandons_before.saturating_add(1);
            ops.wake_at = Some(policy.retry_at);
            AbandonOutcome::Rescheduled
        }
        AbandonMode::Poisoning => {
            ops.wake_at = None;
            ops.poison = Some(Poison {
                poisoned_at: policy.now,
                reason: PoisonReason::MaxClaimAbandonsExceeded,
            });
            AbandonOutcome::Poisoned
        }
    }
}

/// Poison recovery (`docs/state-machines.md`, “Operational transitions”). Returns whether the row
/// changed.
///
/// # Errors
/// `InactiveRun` for a terminal run (checked before anything else).
pub fn apply_retry_poisoned(
    status: RunStatus,
    ops: &mut OperationalState,
    now: Timestamp,
) -> Result<bool, StoreError> {
    if status.is_terminal() {
        return Err(StoreError::InactiveRun);
    }
    if ops.poison.is_none() {
        return Ok(false);
    }
    ops.claim_token = None;
    ops.claimed_at = None;
    ops.wake_at = Some(now);
    ops.claim_attempts = 0;
    ops.claim_abandons = 0;
    ops.poison = None;
    ops.admitted_at = None;
    Ok(true)
}

/// Checks the row invariants (`docs/state-machines.md`, “Row invariants”); used when planning a
/// transition and when decoding stored rows.
///
/// # Errors
/// A description of the first broken invariant.
pub fn check_row_invariants(status: RunStatus, ops: &OperationalState) -> Result<(), String> {
    if ops.claim_token.is_some() != ops.claimed_at.is_some() {
        return Err("claim token and claimed_at must be present together".into());
    }
    if status != RunStatus::Running
        && (ops.claim_token.is_some() || ops.wake_at.is_some() || ops.poison.is_some())
    {
        return Err(format!("a {status} row has a claim, a wake or poison"));
    }
    if ops.poison.is_some() && (ops.claim_token.is_some() || ops.wake_at.is_some()) {
        return Err("a poisoned row has a claim or a wake".into());
    }
    if status == RunStatus::Running
        && ops.poison.is_none()
        && ops.wake_at.is_some() == ops.claim_token.is_some()
    {
        return Err("a healthy running row needs exactly one of wake and claim".into());
    }
    if ops.admitted_at.is_some() && (status != RunStatus::Running || ops.poison.is_some()) {
        return Err("only a healthy running row can hold an admission marker".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::store::claim::AbandonBackoff;
    use crate::store::schedule::ReleaseWake;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn claimed(at: i64, attempts: u32) -> (OperationalState, ClaimToken) {
        let mut ops = initial_state(t(0));
        let token = ClaimToken::mint();
        ops.claim_attempts = attempts - 1;
        apply_lease(&mut ops, token.clone(), t(at));
        (ops, token)
    }

    fn policy(max: u32, mode: AbandonMode) -> AbandonPolicy {
        AbandonPolicy {
            expected_seq: 1,
            now: t(1_000),
            retry_at: t(2_000),
            max_claim_abandons: NonZeroU32::new(max).expect("nonzero"),
            mode,
        }
    }

    #[test]
    fn ttl_boundary_is_strict_and_ready_is_inclusive() {
        let ready = initial_state(t(100));
        assert_eq!(claim_class(RunStatus::Running, &ready, t(99), 0), None);
        assert_eq!(
            claim_class(RunStatus::Running, &ready, t(100), 0),
            Some((ClaimClass::Ready, t(100)))
        );
        let (ops, _) = claimed(100, 1);
        assert_eq!(claim_class(RunStatus::Running, &ops, t(160), 60), None);
        assert_eq!(
            claim_class(RunStatus::Running, &ops, t(161), 60),
            Some((ClaimClass::Expired, t(100)))
        );
        assert_eq!(claim_class(RunStatus::Waiting, &ready, t(100), 0), None);
    }

    #[test]
    fn n_launches_then_poison() {
        let mut ops = initial_state(t(0));
        for n in 1..=3 {
            assert_eq!(claim_decision(&ops, 3), ClaimDecision::Lease { attempt: n });
            apply_lease(&mut ops, ClaimToken::mint(), t(0));
        }
        assert_eq!(claim_decision(&ops, 3), ClaimDecision::Poison);
        apply_claim_poison(&mut ops, t(5));
        assert_eq!(ops.claim_attempts, 3);
        assert!(check_row_invariants(RunStatus::Running, &ops).is_ok());
    }

    #[test]
    fn abandon_reschedules_then_poisons_with_its_own_reason() {
        let (mut ops, token) = claimed(0, 1);
        let p = policy(1, AbandonMode::Poisoning);
        assert_eq!(
            apply_abandon(&mut ops, 1, &token, &p),
            AbandonOutcome::Rescheduled
        );
        assert_eq!((ops.claim_attempts, ops.claim_abandons), (0, 1));
        assert_eq!(ops.wake_at, Some(t(2_000)));
        let token = ClaimToken::mint();
        apply_lease(&mut ops, token.clone(), t(2_000));
        assert_eq!(
            apply_abandon(&mut ops, 1, &token, &p),
            AbandonOutcome::Poisoned
        );
        assert_eq!((ops.claim_attempts, ops.claim_abandons), (0, 1));
        assert_eq!(
            ops.poison.map(|p| p.reason),
            Some(PoisonReason::MaxClaimAbandonsExceeded)
        );
        assert!(check_row_invariants(RunStatus::Running, &ops).is_ok());
    }

    #[test]
    fn stale_abandon_changes_nothing() {
        let (mut ops, token) = claimed(0, 1);
        let before = ops.clone();
        let p = policy(5, AbandonMode::Poisoning);
        assert_eq!(
            apply_abandon(&mut ops, 1, &ClaimToken::mint(), &p),
            AbandonOutcome::Stale
        );
        assert_eq!(
            apply_abandon(&mut ops, 2, &token, &p),
            AbandonOutcome::Stale
        );
        assert_eq!(ops, before);
    }

    #[test]
    fn non_poisoning_backoff_doubles_to_the_cap() {
        let (mut ops, _) = claimed(0, 1);
        let mut wakes = Vec::new();
        for _ in 0..4 {
            let token = ClaimToken::mint();
            apply_lease(&mut ops, token.clone(), t(0));
            let p = policy(
                1,
                AbandonMode::NonPoisoning {
                    backoff: Some(AbandonBackoff {
                        base_ms: 100,
                        cap_ms: 300,
                    }),
                },
            );
            assert_eq!(
                apply_abandon(&mut ops, 1, &token, &p),
                AbandonOutcome::Rescheduled
            );
            wakes.push(ops.wake_at.map(|w| w.millis_since(t(1_000))));
        }
        assert_eq!(wakes, vec![Some(100), Some(200), Some(300), Some(300)]);
        assert_eq!(ops.claim_abandons, 4);
        assert!(ops.poison.is_none());
    }

    #[test]
    fn commit_resets_and_schedules() {
        let (mut ops, token) = claimed(0, 2);
        ops.claim_abandons = 3;
        apply_commit(
            &mut ops,
            CheckpointType::StepCommitted,
            ClaimedSchedule::RetainClaim,
            true,
            t(50),
        );
        assert_eq!(ops.claim_token.as_ref(), Some(&token));
        assert_eq!((ops.claimed_at, ops.wake_at), (Some(t(50)), None));
        assert_eq!((ops.claim_attempts, ops.claim_abandons), (0, 0));
        apply_commit(
            &mut ops,
            CheckpointType::StepCommitted,
            ClaimedSchedule::Release(ReleaseWake::Immediate),
            true,
            t(60),
        );
        assert_eq!((ops.claim_token.clone(), ops.wake_at), (None, Some(t(60))));
    }

    #[test]
    fn the_admission_marker_lasts_only_as_long_as_cooperative_work() {
        let fair = ClaimPolicy::TenantFair;
        let (mut ops, token) = claimed(0, 1);
        apply_admission(&mut ops, ClaimPolicy::Oldest, t(1));
        assert_eq!(ops.admitted_at, None, "oldest never admits");
        apply_admission(&mut ops, fair, t(1));
        apply_admission(&mut ops, fair, t(2));
        assert_eq!(
            ops.admitted_at,
            Some(t(1)),
            "a later lease keeps the first admission"
        );
        let immediate = ClaimedSchedule::Release(ReleaseWake::Immediate);
        apply_commit(
            &mut ops,
            CheckpointType::StepCommitted,
            immediate,
            true,
            t(3),
        );
        assert_eq!(
            ops.admitted_at,
            Some(t(1)),
            "an immediate hand-back keeps it"
        );
        assert!(!apply_release(&mut ops, &token, t(4)) && ops.admitted_at.is_some());
        for (schedule, claimed) in [
            (immediate, false),
            (ClaimedSchedule::Release(ReleaseWake::At(t(9))), true),
            (ClaimedSchedule::Release(ReleaseWake::External), true),
            (ClaimedSchedule::Release(ReleaseWake::Terminal), true),
        ] {
            let mut again = ops.clone();
            apply_commit(
                &mut again,
                CheckpointType::StepCommitted,
                schedule,
                claimed,
                t(5),
            );
            assert_eq!(again.admitted_at, None, "{schedule:?} claimed={claimed}");
        }
        assert!(commit_keeps_admission(true, ClaimedSchedule::RetainClaim));
    }

    #[test]
    fn release_is_token_guarded() {
        let (mut ops, token) = claimed(100, 1);
        assert!(!apply_release(&mut ops, &ClaimToken::mint(), t(300)));
        assert!(apply_release(&mut ops, &token, t(300)));
        assert_eq!(ops.wake_at, Some(t(300)));
        assert_eq!(ops.claim_attempts, 1);
    }

    #[test]
    fn retry_poisoned_is_terminal_first() {
        let mut ops = initial_state(t(0));
        apply_claim_poison(&mut ops, t(1));
        assert!(matches!(
            apply_retry_poisoned(RunStatus::Done, &mut ops, t(2)),
            Err(StoreError::InactiveRun)
        ));
        assert_eq!(
            apply_retry_poisoned(RunStatus::Running, &mut ops, t(2)).ok(),
            Some(true)
        );
        assert_eq!(ops.wake_at, Some(t(2)));
        assert_eq!(
            apply_retry_poisoned(RunStatus::Running, &mut ops, t(3)).ok(),
            Some(false)
        );
    }
}
