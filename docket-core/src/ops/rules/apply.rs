//! Applying a legal transition to a record, for the backends that decide in Rust.

use crate::model::Timestamp;
use crate::ops::error::OpsError;
use crate::ops::outcome::OperationTransition;
use crate::ops::snapshot::{CompletionSeq, OperationLifecycleSnapshot};

use super::table::check_from;

/// The record after a transition, and the completion sequence it consumed (if it ended the
/// operation, the owner's next sequence moves past it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The new record.
    pub record: OperationLifecycleSnapshot,
    /// The completion sequence minted, when the transition ended the operation.
    pub minted: Option<CompletionSeq>,
}

/// Applies `transition` (already validated) to `current` at `now`; `next_seq` is the owner's
/// next completion sequence, consumed only when the transition ends the operation.
///
/// The stored outcome is the request's; a terminal transition stamps `completed_at`, a start
/// stamps `started_at`, progress counts one more tick.
///
/// # Errors
/// `InvalidTransition` carrying the current status when the action is not legal from it.
pub fn apply(
    current: &OperationLifecycleSnapshot,
    transition: &OperationTransition,
    now: Timestamp,
    next_seq: CompletionSeq,
) -> Result<Applied, OpsError> {
    let rule = check_from(current.id, transition.action, current.status)?;
    let mut record = current.clone();
    record.status = rule.target(current.status);
    if rule.stamps_started_at {
        record.started_at = Some(now);
    }
    if rule.counts_progress {
        record.progress_count = record.progress_count.saturating_add(1);
    }
    let minted = rule.mints_completion_seq.then_some(next_seq);
    if let Some(seq) = minted {
        record.terminal_outcome.clone_from(&transition.outcome);
        record.completion_seq = Some(seq);
        record.completed_at = Some(now);
    }
    Ok(Applied { record, minted })
}

/// The request an owner-wide termination applies to each of the owner's live operations,
/// in ascending id order (so every backend mints their completion sequences alike).
#[must_use]
pub fn termination(reason: &str) -> OperationTransition {
    OperationTransition {
        action: crate::ops::status::OperationAction::Terminate,
        outcome: Some(crate::ops::outcome::OperationTerminalOutcome::Terminated {
            reason: reason.to_owned(),
        }),
    }
}

/// A new record for a registration at `now`: Provisioning, no progress, no outcome.
#[must_use]
pub fn registered(
    owner: crate::ops::ids::SessionId,
    spec: &crate::ops::spec::OperationSpec,
    now: Timestamp,
) -> OperationLifecycleSnapshot {
    OperationLifecycleSnapshot {
        id: spec.id,
        owner,
        kind: spec.kind.clone(),
        display_name: spec.display_name.clone(),
        source_label: spec.source_label.clone(),
        source: spec.source.clone(),
        status: crate::ops::status::OperationStatus::Provisioning,
        progress_count: 0,
        terminal_outcome: None,
        completion_seq: None,
        created_at: now,
        started_at: None,
        completed_at: None,
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::ops::ids::{OperationId, SessionId};
    use crate::ops::kind::OperationKind;
    use crate::ops::outcome::{OperationResult, OperationTerminalOutcome};
    use crate::ops::spec::OperationSpec;
    use crate::ops::status::{OperationAction, OperationStatus};

    fn fresh() -> OperationLifecycleSnapshot {
        let spec = OperationSpec::new(
            OperationId::from_uuid(Uuid::from_u128(2)),
            OperationKind::BackgroundToolOp,
            "tool",
        );
        registered(
            SessionId::from_uuid(Uuid::from_u128(1)),
            &spec,
            Timestamp::from_millis(10),
        )
    }

    #[test]
    fn a_life_stamps_start_counts_progress_and_mints_on_completion() {
        let seq = CompletionSeq(7);
        let started = apply(
            &fresh(),
            &OperationTransition::provisioning_succeeded(),
            Timestamp::from_millis(20),
            seq,
        )
        .expect("legal");
        assert_eq!(started.minted, None);
        assert_eq!(started.record.status, OperationStatus::Running);
        assert_eq!(started.record.started_at, Some(Timestamp::from_millis(20)));
        let ticked = apply(
            &started.record,
            &OperationTransition::report_progress(),
            Timestamp::from_millis(25),
            seq,
        )
        .expect("legal");
        assert_eq!(ticked.record.progress_count, 1);
        assert_eq!(ticked.record.status, OperationStatus::Running);
        let done = apply(
            &ticked.record,
            &OperationTransition::complete(OperationResult::new("ok")),
            Timestamp::from_millis(30),
            seq,
        )
        .expect("legal");
        assert_eq!(done.minted, Some(seq));
        assert_eq!(done.record.completion_seq, Some(seq));
        assert_eq!(done.record.completed_at, Some(Timestamp::from_millis(30)));
        assert_eq!(
            done.record.terminal_outcome,
            Some(OperationTerminalOutcome::Completed(OperationResult::new(
                "ok"
            )))
        );
        assert_eq!(done.record.elapsed_ms(), Some(20));
    }

    #[test]
    fn an_illegal_action_names_the_current_status() {
        let refused = apply(
            &fresh(),
            &OperationTransition::complete(OperationResult::new("early")),
            Timestamp::from_millis(20),
            CompletionSeq::FIRST,
        );
        assert!(matches!(
            refused,
            Err(OpsError::InvalidTransition {
                status: OperationStatus::Provisioning,
                action: OperationAction::Complete,
                ..
            })
        ));
    }
}
