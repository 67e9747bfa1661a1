//! The state machine as data: for each [`OperationAction`], the statuses it may start from,
//! the status it leads to, the outcome it must carry, and what else it writes.
//!
//! A backend that decides in Rust calls [`check_from`] / [`super::apply()`]; a backend that
//! decides in one statement or script renders its conditions from [`TABLE`] (or is tested
//! against it), so the legal from-sets exist in exactly one place.

use crate::ops::error::OpsError;
use crate::ops::ids::OperationId;
use crate::ops::status::{OperationAction, OperationStatus};

use OperationStatus::{
    Aborted, Cancelled, Completed, Failed, Provisioning, Retired, Retiring, Running, Terminated,
};

/// What one action does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransitionRule {
    /// The action.
    pub action: OperationAction,
    /// The statuses the action is legal from. From any other status it is
    /// `InvalidTransition` carrying that status; on an absent record it is `NotFound`.
    pub from: &'static [OperationStatus],
    /// The status it leads to; `None` keeps the current one.
    pub to: Option<OperationStatus>,
    /// The terminal status whose outcome variant the request must carry (`None`: the request
    /// carries no outcome). Always equal to `to` when `to` is terminal.
    pub outcome: Option<OperationStatus>,
    /// Whether it mints the owner's next completion sequence (exactly the terminal ones).
    pub mints_completion_seq: bool,
    /// Whether it stamps `started_at` with the caller's `now`.
    pub stamps_started_at: bool,
    /// Whether it adds one to `progress_count`.
    pub counts_progress: bool,
}

const LIVE: &[OperationStatus] = &[Provisioning, Running, Retiring];
const STARTED: &[OperationStatus] = &[Running, Retiring];

const fn ending(
    action: OperationAction,
    from: &'static [OperationStatus],
    to: OperationStatus,
) -> TransitionRule {
    TransitionRule {
        action,
        from,
        to: Some(to),
        outcome: Some(to),
        mints_completion_seq: true,
        stamps_started_at: false,
        counts_progress: false,
    }
}

/// The whole state machine, one rule per action, in [`OperationAction::ALL`] order.
pub const TABLE: [TransitionRule; 9] = [
    TransitionRule {
        action: OperationAction::ProvisioningSucceeded,
        from: &[Provisioning],
        to: Some(Running),
        outcome: None,
        mints_completion_seq: false,
        stamps_started_at: true,
        counts_progress: false,
    },
    ending(OperationAction::Fail, LIVE, Failed),
    ending(OperationAction::AbortProvisioning, &[Provisioning], Aborted),
    ending(OperationAction::Cancel, LIVE, Cancelled),
    TransitionRule {
        action: OperationAction::RequestRetire,
        from: &[Running],
        to: Some(Retiring),
        outcome: None,
        mints_completion_seq: false,
        stamps_started_at: false,
        counts_progress: false,
    },
    ending(OperationAction::MarkRetired, STARTED, Retired),
    ending(OperationAction::Complete, STARTED, Completed),
    TransitionRule {
        action: OperationAction::ReportProgress,
        from: STARTED,
        to: None,
        outcome: None,
        mints_completion_seq: false,
        stamps_started_at: false,
        counts_progress: true,
    },
    ending(OperationAction::Terminate, LIVE, Terminated),
];

/// The rule of `action`.
#[must_use]
pub fn rule(action: OperationAction) -> &'static TransitionRule {
    // `TABLE` lists the actions in `ALL` order; the unit tests pin that.
    let index = OperationAction::ALL
        .iter()
        .position(|a| *a == action)
        .unwrap_or_default();
    &TABLE[index]
}

impl TransitionRule {
    /// Whether the action is legal from `status`.
    #[must_use]
    pub fn allows(&self, status: OperationStatus) -> bool {
        self.from.contains(&status)
    }

    /// The status after the action from `status` (which must be legal).
    #[must_use]
    pub fn target(&self, status: OperationStatus) -> OperationStatus {
        self.to.unwrap_or(status)
    }
}

/// Checks that `action` is legal on operation `id` in `status`.
///
/// # Errors
/// [`OpsError::InvalidTransition`] carrying `status` when it is not.
pub fn check_from(
    id: OperationId,
    action: OperationAction,
    status: OperationStatus,
) -> Result<&'static TransitionRule, OpsError> {
    let rule = rule(action);
    if rule.allows(status) {
        Ok(rule)
    } else {
        Err(OpsError::InvalidTransition { id, status, action })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_action_once_in_order() {
        for (rule, action) in TABLE.iter().zip(OperationAction::ALL) {
            assert_eq!(rule.action, action);
            assert_eq!(super::rule(action).action, action);
        }
    }

    #[test]
    fn outcomes_minting_and_terminality_agree() {
        for rule in TABLE {
            let terminal = rule.to.is_some_and(OperationStatus::is_terminal);
            assert_eq!(rule.mints_completion_seq, terminal, "{:?}", rule.action);
            assert_eq!(rule.outcome, rule.to.filter(|s| s.is_terminal()));
            assert!(
                rule.from.iter().all(|s| !s.is_terminal()),
                "{:?} leaves a terminal status",
                rule.action
            );
        }
    }
}
