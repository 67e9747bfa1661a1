//! The registry's deliberate bugs, for the conformance suite's mutant checks.

use crate::model::Timestamp;
use crate::ops::rules::{self, Applied};
use crate::ops::{CompletionSeq, OperationLifecycleSnapshot, OperationTransition, OpsError};

/// The `ops_skip_from_set_guard` fault: applies the action as if the record were in the
/// first status of its from-set, whatever its real status.
pub(super) fn apply_unguarded(
    current: &OperationLifecycleSnapshot,
    transition: &OperationTransition,
    now: Timestamp,
    next_seq: CompletionSeq,
) -> Result<Applied, OpsError> {
    let rule = rules::rule(transition.action);
    let mut pretend = current.clone();
    if !rule.allows(current.status) {
        if let Some(first) = rule.from.first() {
            pretend.status = *first;
            pretend.terminal_outcome = None;
            pretend.completion_seq = None;
            pretend.completed_at = None;
            pretend.started_at = pretend.started_at.or(Some(now));
        }
    }
    rules::apply(&pretend, transition, now, next_seq)
}
