//! Input validation: every registry checks its arguments with these functions before it
//! reads or writes anything, so a bad argument is `InvalidArgument` and writes nothing, on
//! every backend alike.

use crate::model::ids::check_id;
use crate::model::MAX_PAGE_LIMIT;
use crate::ops::error::OpsError;
use crate::ops::ids::{OperationId, SessionId};
use crate::ops::kind::OperationSource;
use crate::ops::outcome::{OperationTerminalOutcome, OperationTransition};
use crate::ops::query::OperationQuery;
use crate::ops::spec::OperationSpec;
use crate::ops::status::OperationAction;

use super::table::rule;

/// Longest display name or source label, in bytes.
pub const MAX_LABEL_BYTES: usize = 1024;

/// Longest error or reason text, in bytes.
pub const MAX_REASON_BYTES: usize = 64 * 1024;

/// Longest result content, in bytes.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;

fn invalid(reason: String) -> OpsError {
    OpsError::invalid_argument(reason)
}

/// Checks an owner.
///
/// # Errors
/// `InvalidArgument` for the nil session id.
pub fn validate_owner(owner: &SessionId) -> Result<(), OpsError> {
    if owner.is_nil() {
        return Err(invalid("the owner session id is nil".to_owned()));
    }
    Ok(())
}

/// Checks an owner and an operation id.
///
/// # Errors
/// `InvalidArgument` for a nil owner or a nil id.
pub fn validate_target(owner: &SessionId, id: &OperationId) -> Result<(), OpsError> {
    validate_owner(owner)?;
    if id.is_nil() {
        return Err(invalid("the operation id is nil".to_owned()));
    }
    Ok(())
}

fn check_label(what: &str, value: &str, required: bool) -> Result<(), OpsError> {
    if required && value.is_empty() {
        return Err(invalid(format!("the {what} is empty")));
    }
    if value.len() > MAX_LABEL_BYTES {
        return Err(invalid(format!(
            "the {what} is {} bytes long; the maximum is {MAX_LABEL_BYTES}",
            value.len()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(format!("the {what} contains a control character")));
    }
    Ok(())
}

fn check_text(what: &str, value: &str, max: usize) -> Result<(), OpsError> {
    if value.len() > max {
        return Err(invalid(format!(
            "the {what} is {} bytes long; the maximum is {max}",
            value.len()
        )));
    }
    Ok(())
}

fn check_source(source: &OperationSource) -> Result<(), OpsError> {
    match source {
        OperationSource::SessionChild { session_id } => {
            if session_id.is_nil() {
                return Err(invalid("the child session id is nil".to_owned()));
            }
        }
        OperationSource::DetachedJob { realm_id, job_id } => {
            check_id("realm id", realm_id).map_err(|e| invalid(e.to_string()))?;
            check_id("job id", job_id).map_err(|e| invalid(e.to_string()))?;
        }
    }
    Ok(())
}

/// Checks a registration: owner, id, kind, labels and source.
///
/// # Errors
/// `InvalidArgument` naming the first broken rule.
pub fn validate_registration(owner: &SessionId, spec: &OperationSpec) -> Result<(), OpsError> {
    validate_target(owner, &spec.id)?;
    spec.kind.validate()?;
    check_label("display name", &spec.display_name, true)?;
    check_label("source label", &spec.source_label, false)?;
    spec.source.as_ref().map_or(Ok(()), check_source)
}

/// Checks an admission limit: `None` admits without limit, `Some(0)` would admit nothing and
/// is refused.
///
/// # Errors
/// `InvalidArgument` for `Some(0)`.
pub fn validate_limit(max_concurrent: Option<u32>) -> Result<(), OpsError> {
    if max_concurrent == Some(0) {
        return Err(invalid(
            "an admission limit of 0 admits nothing; pass None for no limit".to_owned(),
        ));
    }
    Ok(())
}

fn check_outcome(outcome: &OperationTerminalOutcome) -> Result<(), OpsError> {
    match outcome {
        OperationTerminalOutcome::Completed(result) => {
            check_text("result content", &result.content, MAX_CONTENT_BYTES)
        }
        OperationTerminalOutcome::Failed { error } => check_text("error", error, MAX_REASON_BYTES),
        OperationTerminalOutcome::Aborted { reason }
        | OperationTerminalOutcome::Cancelled { reason } => reason
            .as_deref()
            .map_or(Ok(()), |r| check_text("reason", r, MAX_REASON_BYTES)),
        OperationTerminalOutcome::Retired => Ok(()),
        OperationTerminalOutcome::Terminated { reason } => {
            check_text("reason", reason, MAX_REASON_BYTES)
        }
    }
}

/// Checks a one-operation transition: owner and id, an action callers may ask for one
/// operation (termination goes through the owner-wide calls), an outcome present exactly
/// when the action ends the operation and of the variant of its target status, and text
/// sizes.
///
/// # Errors
/// `InvalidArgument` naming the first broken rule.
pub fn validate_transition(
    owner: &SessionId,
    id: &OperationId,
    transition: &OperationTransition,
) -> Result<(), OpsError> {
    validate_target(owner, id)?;
    if transition.action == OperationAction::Terminate {
        return Err(invalid(
            "termination applies to a whole owner: use terminate_owner or retire_owner".to_owned(),
        ));
    }
    let needed = rule(transition.action).outcome;
    match (needed, &transition.outcome) {
        (None, None) => Ok(()),
        (None, Some(outcome)) => Err(invalid(format!(
            "{} records no outcome, got a {} outcome",
            transition.action,
            outcome.status()
        ))),
        (Some(status), None) => Err(invalid(format!(
            "{} must record a {status} outcome",
            transition.action
        ))),
        (Some(status), Some(outcome)) if outcome.status() != status => Err(invalid(format!(
            "{} must record a {status} outcome, got a {} outcome",
            transition.action,
            outcome.status()
        ))),
        (Some(_), Some(outcome)) => check_outcome(outcome),
    }
}

/// Checks the reason of an owner-wide termination or retirement.
///
/// # Errors
/// `InvalidArgument` for a nil owner or an oversized reason.
pub fn validate_owner_reason(owner: &SessionId, reason: &str) -> Result<(), OpsError> {
    validate_owner(owner)?;
    check_text("reason", reason, MAX_REASON_BYTES)
}

/// Checks a listing.
///
/// # Errors
/// `InvalidArgument` for a nil owner or a limit outside `1..=MAX_PAGE_LIMIT`.
pub fn validate_query(owner: &SessionId, query: &OperationQuery) -> Result<(), OpsError> {
    validate_owner(owner)?;
    if query.limit == 0 || query.limit > MAX_PAGE_LIMIT {
        return Err(invalid(format!(
            "limit must be within 1..={MAX_PAGE_LIMIT}, got {}",
            query.limit
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::ops::kind::OperationKind;
    use crate::ops::outcome::OperationResult;

    fn owner() -> SessionId {
        SessionId::from_uuid(Uuid::from_u128(1))
    }

    fn id() -> OperationId {
        OperationId::from_uuid(Uuid::from_u128(2))
    }

    fn spec() -> OperationSpec {
        OperationSpec::new(id(), OperationKind::DetachedJobWait, "wait")
    }

    fn refused(result: Result<(), OpsError>) -> bool {
        matches!(result, Err(OpsError::InvalidArgument { .. }))
    }

    #[test]
    fn registrations_refuse_empty_oversized_and_unknown_parts() {
        assert!(validate_registration(&owner(), &spec()).is_ok());
        let nil_owner = SessionId::from_uuid(Uuid::nil());
        assert!(refused(validate_registration(&nil_owner, &spec())));
        let mut nil_id = spec();
        nil_id.id = OperationId::from_uuid(Uuid::nil());
        assert!(refused(validate_registration(&owner(), &nil_id)));
        for name in [
            String::new(),
            "n".repeat(MAX_LABEL_BYTES + 1),
            "a\nb".into(),
        ] {
            let mut bad = spec();
            bad.display_name = name;
            assert!(refused(validate_registration(&owner(), &bad)));
        }
        let mut long_label = spec();
        long_label.source_label = "l".repeat(MAX_LABEL_BYTES + 1);
        assert!(refused(validate_registration(&owner(), &long_label)));
        let mut bad_kind = spec();
        bad_kind.kind = OperationKind::Custom("Not Valid".into());
        assert!(refused(validate_registration(&owner(), &bad_kind)));
        for source in [
            OperationSource::detached_job("", "job"),
            OperationSource::detached_job("realm", "j".repeat(256)),
            OperationSource::session_child(SessionId::from_uuid(Uuid::nil())),
        ] {
            let bad = spec().with_source(source);
            assert!(refused(validate_registration(&owner(), &bad)));
        }
        let good = spec()
            .with_source(OperationSource::detached_job("r", "j".repeat(255)))
            .with_source_label("l".repeat(MAX_LABEL_BYTES));
        assert!(validate_registration(&owner(), &good).is_ok());
    }

    #[test]
    fn transitions_need_the_outcome_of_their_target() {
        let ok = |t: OperationTransition| validate_transition(&owner(), &id(), &t).is_ok();
        assert!(ok(OperationTransition::complete(OperationResult::new("x"))));
        assert!(ok(OperationTransition::provisioning_succeeded()));
        assert!(ok(OperationTransition::cancel(None)));
        let mismatched = OperationTransition {
            action: OperationAction::Complete,
            outcome: Some(OperationTerminalOutcome::Failed { error: "e".into() }),
        };
        assert!(!ok(mismatched));
        let missing = OperationTransition {
            action: OperationAction::Fail,
            outcome: None,
        };
        assert!(!ok(missing));
        let extra = OperationTransition {
            action: OperationAction::ReportProgress,
            outcome: Some(OperationTerminalOutcome::Retired),
        };
        assert!(!ok(extra));
        let terminate = OperationTransition {
            action: OperationAction::Terminate,
            outcome: Some(OperationTerminalOutcome::Terminated { reason: "r".into() }),
        };
        assert!(!ok(terminate));
        assert!(!ok(OperationTransition::fail(
            "e".repeat(MAX_REASON_BYTES + 1)
        )));
        assert!(ok(OperationTransition::fail("e".repeat(MAX_REASON_BYTES))));
        assert!(!ok(OperationTransition::complete(OperationResult::new(
            "c".repeat(MAX_CONTENT_BYTES + 1)
        ))));
    }

    #[test]
    fn limits_and_queries_are_checked() {
        assert!(refused(validate_limit(Some(0))));
        assert!(validate_limit(Some(1)).is_ok());
        assert!(validate_limit(None).is_ok());
        assert!(refused(validate_query(&owner(), &OperationQuery::first(0))));
        assert!(refused(validate_query(
            &owner(),
            &OperationQuery::first(MAX_PAGE_LIMIT + 1)
        )));
        assert!(validate_query(&owner(), &OperationQuery::first(MAX_PAGE_LIMIT)).is_ok());
    }
}
