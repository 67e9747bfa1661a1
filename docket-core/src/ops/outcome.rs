//! How an operation ended ([`OperationTerminalOutcome`], [`OperationResult`]) and the request
//! that moves one operation ([`OperationTransition`]).

use serde::{Deserialize, Serialize};

use super::status::{OperationAction, OperationStatus};

/// The result of a completed operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OperationResult {
    /// What the operation produced (free text, at most 1 MiB).
    pub content: String,
    /// Whether the content describes an error the operation itself reported (the operation
    /// still completed).
    pub is_error: bool,
    /// How long the work took, as measured by the caller.
    pub duration_ms: u64,
    /// Tokens the work consumed, as counted by the caller.
    pub tokens_used: u64,
}

impl OperationResult {
    /// A successful result with `content` and zero counters.
    #[must_use]
    pub fn new(content: impl Into<String>) -> Self {
        OperationResult {
            content: content.into(),
            ..OperationResult::default()
        }
    }
}

/// How a terminal operation ended. Serialized with an `outcome_type` tag; the variant always
/// matches the terminal status it is stored with.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "outcome_type", rename_all = "snake_case", deny_unknown_fields)]
pub enum OperationTerminalOutcome {
    /// [`OperationStatus::Completed`]; the result's fields sit beside the tag.
    Completed(OperationResult),
    /// [`OperationStatus::Failed`].
    Failed {
        /// Why (free text, at most 64 KiB).
        error: String,
    },
    /// [`OperationStatus::Aborted`].
    Aborted {
        /// Why, if the caller said (free text, at most 64 KiB).
        reason: Option<String>,
    },
    /// [`OperationStatus::Cancelled`].
    Cancelled {
        /// Why, if the caller said (free text, at most 64 KiB).
        reason: Option<String>,
    },
    /// [`OperationStatus::Retired`].
    Retired,
    /// [`OperationStatus::Terminated`].
    Terminated {
        /// Why the owner stopped (free text, at most 64 KiB).
        reason: String,
    },
}

impl OperationTerminalOutcome {
    /// The terminal status this outcome belongs to.
    #[must_use]
    pub const fn status(&self) -> OperationStatus {
        match self {
            OperationTerminalOutcome::Completed(_) => OperationStatus::Completed,
            OperationTerminalOutcome::Failed { .. } => OperationStatus::Failed,
            OperationTerminalOutcome::Aborted { .. } => OperationStatus::Aborted,
            OperationTerminalOutcome::Cancelled { .. } => OperationStatus::Cancelled,
            OperationTerminalOutcome::Retired => OperationStatus::Retired,
            OperationTerminalOutcome::Terminated { .. } => OperationStatus::Terminated,
        }
    }
}

/// One change asked of one operation: an action and, for the actions that end it, the
/// outcome to record. Build it with the named constructors; a hand-built request whose
/// outcome does not fit its action is refused by every registry with `InvalidArgument`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OperationTransition {
    /// What is asked.
    pub action: OperationAction,
    /// The outcome to record: present exactly when the action ends the operation, and of the
    /// variant of its target status.
    pub outcome: Option<OperationTerminalOutcome>,
}

impl OperationTransition {
    /// Provisioning → Running.
    #[must_use]
    pub fn provisioning_succeeded() -> Self {
        Self::bare(OperationAction::ProvisioningSucceeded)
    }

    /// → Completed with `result`.
    #[must_use]
    pub fn complete(result: OperationResult) -> Self {
        Self::ending(
            OperationAction::Complete,
            OperationTerminalOutcome::Completed(result),
        )
    }

    /// → Failed with `error`.
    #[must_use]
    pub fn fail(error: impl Into<String>) -> Self {
        Self::ending(
            OperationAction::Fail,
            OperationTerminalOutcome::Failed {
                error: error.into(),
            },
        )
    }

    /// Provisioning → Aborted.
    #[must_use]
    pub fn abort_provisioning(reason: Option<String>) -> Self {
        Self::ending(
            OperationAction::AbortProvisioning,
            OperationTerminalOutcome::Aborted { reason },
        )
    }

    /// → Cancelled.
    #[must_use]
    pub fn cancel(reason: Option<String>) -> Self {
        Self::ending(
            OperationAction::Cancel,
            OperationTerminalOutcome::Cancelled { reason },
        )
    }

    /// Running → Retiring.
    #[must_use]
    pub fn request_retire() -> Self {
        Self::bare(OperationAction::RequestRetire)
    }

    /// → Retired.
    #[must_use]
    pub fn mark_retired() -> Self {
        Self::ending(
            OperationAction::MarkRetired,
            OperationTerminalOutcome::Retired,
        )
    }

    /// One more progress tick; the status stays.
    #[must_use]
    pub fn report_progress() -> Self {
        Self::bare(OperationAction::ReportProgress)
    }

    fn bare(action: OperationAction) -> Self {
        OperationTransition {
            action,
            outcome: None,
        }
    }

    fn ending(action: OperationAction, outcome: OperationTerminalOutcome) -> Self {
        OperationTransition {
            action,
            outcome: Some(outcome),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_serialize_with_an_outcome_type_tag() {
        let cases = [
            (
                OperationTerminalOutcome::Completed(OperationResult::new("done")),
                serde_json::json!({"outcome_type": "completed",
                    "content": "done", "is_error": false, "duration_ms": 0, "tokens_used": 0}),
            ),
            (
                OperationTerminalOutcome::Failed { error: "e".into() },
                serde_json::json!({"outcome_type": "failed", "error": "e"}),
            ),
            (
                OperationTerminalOutcome::Aborted { reason: None },
                serde_json::json!({"outcome_type": "aborted", "reason": null}),
            ),
            (
                OperationTerminalOutcome::Retired,
                serde_json::json!({"outcome_type": "retired"}),
            ),
        ];
        for (outcome, json) in cases {
            assert_eq!(serde_json::to_value(&outcome).expect("encodes"), json);
            let back: OperationTerminalOutcome = serde_json::from_value(json).expect("decodes");
            assert_eq!(back, outcome);
        }
    }

    #[test]
    fn each_outcome_names_its_status() {
        assert_eq!(
            OperationTerminalOutcome::Terminated { reason: "r".into() }.status(),
            OperationStatus::Terminated
        );
        assert_eq!(
            OperationTerminalOutcome::Cancelled { reason: None }.status(),
            OperationStatus::Cancelled
        );
        assert_eq!(
            OperationTransition::mark_retired()
                .outcome
                .map(|o| o.status()),
            Some(OperationStatus::Retired)
        );
    }
}
