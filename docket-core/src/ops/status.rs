//! Where an operation is in its life ([`OperationStatus`]), what a caller may ask of it
//! ([`OperationAction`]) and what its status means to an outsider
//! ([`OperationPublicResultClass`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The status of a stored operation. "Absent" is not a status: an absent operation has no
/// record, and every call on it is `NotFound`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationStatus {
    /// Registered; not yet running.
    Provisioning,
    /// Running.
    Running,
    /// Asked to retire; still running.
    Retiring,
    /// Terminal: finished with a result.
    Completed,
    /// Terminal: failed with an error.
    Failed,
    /// Terminal: abandoned before it ever ran.
    Aborted,
    /// Terminal: cancelled.
    Cancelled,
    /// Terminal: retired gracefully.
    Retired,
    /// Terminal: ended because its owner stopped.
    Terminated,
}

impl OperationStatus {
    /// Every status, live ones first.
    pub const ALL: [OperationStatus; 9] = [
        OperationStatus::Provisioning,
        OperationStatus::Running,
        OperationStatus::Retiring,
        OperationStatus::Completed,
        OperationStatus::Failed,
        OperationStatus::Aborted,
        OperationStatus::Cancelled,
        OperationStatus::Retired,
        OperationStatus::Terminated,
    ];

    /// The statuses no transition leaves.
    pub const TERMINAL: [OperationStatus; 6] = [
        OperationStatus::Completed,
        OperationStatus::Failed,
        OperationStatus::Aborted,
        OperationStatus::Cancelled,
        OperationStatus::Retired,
        OperationStatus::Terminated,
    ];

    /// The stable name, also the stored form.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OperationStatus::Provisioning => "provisioning",
            OperationStatus::Running => "running",
            OperationStatus::Retiring => "retiring",
            OperationStatus::Completed => "completed",
            OperationStatus::Failed => "failed",
            OperationStatus::Aborted => "aborted",
            OperationStatus::Cancelled => "cancelled",
            OperationStatus::Retired => "retired",
            OperationStatus::Terminated => "terminated",
        }
    }

    /// The status named `name`, if any.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether no transition leaves this status.
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        !matches!(
            self,
            OperationStatus::Provisioning | OperationStatus::Running | OperationStatus::Retiring
        )
    }

    /// What the status means to someone who only wants the result.
    #[must_use]
    pub const fn public_result_class(self) -> OperationPublicResultClass {
        match self {
            OperationStatus::Provisioning
            | OperationStatus::Running
            | OperationStatus::Retiring => OperationPublicResultClass::Running,
            OperationStatus::Completed => OperationPublicResultClass::Completed,
            OperationStatus::Failed | OperationStatus::Terminated => {
                OperationPublicResultClass::Failed
            }
            OperationStatus::Aborted | OperationStatus::Cancelled | OperationStatus::Retired => {
                OperationPublicResultClass::Cancelled
            }
        }
    }
}

impl fmt::Display for OperationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The coarse, public reading of a status (or of an absent record).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationPublicResultClass {
    /// No record: nobody can answer for the operation.
    MissingAuthority,
    /// Provisioning, running or retiring.
    Running,
    /// Completed.
    Completed,
    /// Failed or terminated.
    Failed,
    /// Aborted, cancelled or retired.
    Cancelled,
}

impl OperationPublicResultClass {
    /// The class of a record that may be absent.
    #[must_use]
    pub fn of(status: Option<OperationStatus>) -> Self {
        status.map_or(
            OperationPublicResultClass::MissingAuthority,
            OperationStatus::public_result_class,
        )
    }
}

/// A change a caller asks of one operation. Registration is not an action: it creates the
/// record instead of moving one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationAction {
    /// Provisioning → Running.
    ProvisioningSucceeded,
    /// Provisioning, Running or Retiring → Failed.
    Fail,
    /// Provisioning → Aborted.
    AbortProvisioning,
    /// Provisioning, Running or Retiring → Cancelled.
    Cancel,
    /// Running → Retiring.
    RequestRetire,
    /// Running or Retiring → Retired.
    MarkRetired,
    /// Running or Retiring → Completed.
    Complete,
    /// Running or Retiring, unchanged, one more progress tick.
    ReportProgress,
    /// Provisioning, Running or Retiring → Terminated (only through the owner-wide calls).
    Terminate,
}

impl OperationAction {
    /// Every action.
    pub const ALL: [OperationAction; 9] = [
        OperationAction::ProvisioningSucceeded,
        OperationAction::Fail,
        OperationAction::AbortProvisioning,
        OperationAction::Cancel,
        OperationAction::RequestRetire,
        OperationAction::MarkRetired,
        OperationAction::Complete,
        OperationAction::ReportProgress,
        OperationAction::Terminate,
    ];

    /// The label an `InvalidTransition` carries: the name of the registry call.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OperationAction::ProvisioningSucceeded => "provisioning_succeeded",
            OperationAction::Fail => "fail_operation",
            OperationAction::AbortProvisioning => "abort_provisioning",
            OperationAction::Cancel => "cancel_operation",
            OperationAction::RequestRetire => "request_retire",
            OperationAction::MarkRetired => "mark_retired",
            OperationAction::Complete => "complete_operation",
            OperationAction::ReportProgress => "report_progress",
            OperationAction::Terminate => "terminate_owner",
        }
    }

    /// The action labelled `label`, if any.
    #[must_use]
    pub fn parse(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == label)
    }
}

impl fmt::Display for OperationAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_terminal_set_is_the_last_six() {
        for status in OperationStatus::ALL {
            assert_eq!(OperationStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).expect("encodes");
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(
                status.is_terminal(),
                OperationStatus::TERMINAL.contains(&status)
            );
        }
        assert_eq!(OperationStatus::parse("absent"), None);
        for action in OperationAction::ALL {
            assert_eq!(OperationAction::parse(action.as_str()), Some(action));
        }
    }

    #[test]
    fn public_classes_follow_the_status() {
        use OperationPublicResultClass as C;
        use OperationStatus as S;
        let expected = [
            (S::Provisioning, C::Running),
            (S::Running, C::Running),
            (S::Retiring, C::Running),
            (S::Completed, C::Completed),
            (S::Failed, C::Failed),
            (S::Terminated, C::Failed),
            (S::Aborted, C::Cancelled),
            (S::Cancelled, C::Cancelled),
            (S::Retired, C::Cancelled),
        ];
        for (status, class) in expected {
            assert_eq!(status.public_result_class(), class, "{status}");
        }
        assert_eq!(C::of(None), C::MissingAuthority);
    }
}
