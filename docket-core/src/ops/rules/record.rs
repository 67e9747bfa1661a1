//! The invariants of a stored record, checked by every decoder so a damaged record is
//! `Corrupt` instead of being trusted.

use crate::ops::snapshot::OperationLifecycleSnapshot;
use crate::ops::status::OperationStatus;

/// Checks that a decoded record is one the state machine can produce: terminal exactly when
/// it has an outcome, a completion sequence and a completion time; the outcome of its
/// status's variant; a start time exactly when it has been running (Running, Retiring,
/// Completed and Retired always; Aborted never; Failed, Cancelled and Terminated either way);
/// no progress before it started.
///
/// # Errors
/// A description of the first broken invariant.
pub fn check_record(record: &OperationLifecycleSnapshot) -> Result<(), String> {
    let terminal = record.status.is_terminal();
    if record.terminal_outcome.is_some() != terminal
        || record.completion_seq.is_some() != terminal
        || record.completed_at.is_some() != terminal
    {
        return Err(format!(
            "a {} record must {}have an outcome, a completion sequence and a completion time",
            record.status,
            if terminal { "" } else { "not " }
        ));
    }
    if let Some(outcome) = &record.terminal_outcome {
        if outcome.status() != record.status {
            return Err(format!(
                "a {} record carries a {} outcome",
                record.status,
                outcome.status()
            ));
        }
    }
    if record.completion_seq.is_some_and(|seq| seq.get() == 0) {
        return Err("completion sequences start at 1".to_owned());
    }
    let started = match record.status {
        OperationStatus::Provisioning | OperationStatus::Aborted => Some(false),
        OperationStatus::Running
        | OperationStatus::Retiring
        | OperationStatus::Completed
        | OperationStatus::Retired => Some(true),
        OperationStatus::Failed | OperationStatus::Cancelled | OperationStatus::Terminated => None,
    };
    if started.is_some_and(|s| s != record.started_at.is_some()) {
        return Err(format!(
            "a {} record must {}have a start time",
            record.status,
            if started == Some(true) { "" } else { "not " }
        ));
    }
    if record.started_at.is_none() && record.progress_count > 0 {
        return Err("a record that never started reports progress".to_owned());
    }
    Ok(())
}
