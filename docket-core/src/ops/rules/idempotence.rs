//! Which refused transitions a caller may treat as success.

use crate::ops::status::{OperationAction, OperationStatus};

/// Whether `action`, refused with `InvalidTransition` because the operation is in `status`,
/// already has the effect the caller wanted, so the caller may treat the refusal as success.
///
/// True exactly for: starting what is already running; asking to retire what is already
/// retiring; and progress, retirement (asked or marked) or an abort on an operation that has
/// already ended. Ending an operation that has already ended (complete, fail, cancel,
/// terminate) is *not* idempotent: the stored outcome may differ from the one the caller
/// meant to record, so the caller must read it.
///
/// Registries never apply this themselves; it is for callers.
#[must_use]
pub fn classify_transition_idempotence(action: OperationAction, status: OperationStatus) -> bool {
    match action {
        OperationAction::ProvisioningSucceeded => status == OperationStatus::Running,
        OperationAction::RequestRetire => {
            status == OperationStatus::Retiring || status.is_terminal()
        }
        OperationAction::ReportProgress
        | OperationAction::MarkRetired
        | OperationAction::AbortProvisioning => status.is_terminal(),
        OperationAction::Complete
        | OperationAction::Fail
        | OperationAction::Cancel
        | OperationAction::Terminate => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OperationAction as A;
    use OperationStatus as S;

    /// Every (action, status) pair that is idempotent, written out by hand.
    const IDEMPOTENT: &[(A, S)] = &[
        (A::ProvisioningSucceeded, S::Running),
        (A::RequestRetire, S::Retiring),
        (A::RequestRetire, S::Completed),
        (A::RequestRetire, S::Failed),
        (A::RequestRetire, S::Aborted),
        (A::RequestRetire, S::Cancelled),
        (A::RequestRetire, S::Retired),
        (A::RequestRetire, S::Terminated),
        (A::ReportProgress, S::Completed),
        (A::ReportProgress, S::Failed),
        (A::ReportProgress, S::Aborted),
        (A::ReportProgress, S::Cancelled),
        (A::ReportProgress, S::Retired),
        (A::ReportProgress, S::Terminated),
        (A::MarkRetired, S::Completed),
        (A::MarkRetired, S::Failed),
        (A::MarkRetired, S::Aborted),
        (A::MarkRetired, S::Cancelled),
        (A::MarkRetired, S::Retired),
        (A::MarkRetired, S::Terminated),
        (A::AbortProvisioning, S::Completed),
        (A::AbortProvisioning, S::Failed),
        (A::AbortProvisioning, S::Aborted),
        (A::AbortProvisioning, S::Cancelled),
        (A::AbortProvisioning, S::Retired),
        (A::AbortProvisioning, S::Terminated),
    ];

    #[test]
    fn exactly_the_listed_pairs_are_idempotent() {
        for action in A::ALL {
            for status in S::ALL {
                assert_eq!(
                    classify_transition_idempotence(action, status),
                    IDEMPOTENT.contains(&(action, status)),
                    "{action} on {status}"
                );
            }
        }
    }
}
