//! Registration: the order of its checks and the admission limit.

use crate::ops::error::OpsError;
use crate::ops::ids::{OperationId, SessionId};

/// What a registry found before registering `id` for `owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistrationFacts {
    /// Whether the owner is retired.
    pub owner_retired: bool,
    /// Whether the owner already holds a record with this id (terminal ones included).
    pub id_taken: bool,
    /// The owner's non-terminal records.
    pub active: u64,
}

/// Decides a (validated) registration: `OwnerRetired` first, then `AlreadyRegistered`, then
/// the admission limit.
///
/// # Errors
/// `OwnerRetired`, `AlreadyRegistered` or `MaxConcurrentExceeded`, in that order.
pub fn check_registration(
    owner: SessionId,
    id: OperationId,
    facts: RegistrationFacts,
    max_concurrent: Option<u32>,
) -> Result<(), OpsError> {
    if facts.owner_retired {
        return Err(OpsError::OwnerRetired { owner });
    }
    if facts.id_taken {
        return Err(OpsError::AlreadyRegistered { id });
    }
    check_admission(max_concurrent, facts.active)
}

/// Whether one more operation fits under `max_concurrent` when `active` are live.
///
/// # Errors
/// `MaxConcurrentExceeded { limit, active }` when `active >= limit`.
pub fn check_admission(max_concurrent: Option<u32>, active: u64) -> Result<(), OpsError> {
    match max_concurrent {
        Some(limit) if active >= u64::from(limit) => {
            Err(OpsError::MaxConcurrentExceeded { limit, active })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::ops::error::OpsErrorKind;

    fn decide(retired: bool, taken: bool, active: u64, limit: Option<u32>) -> Option<OpsErrorKind> {
        let facts = RegistrationFacts {
            owner_retired: retired,
            id_taken: taken,
            active,
        };
        check_registration(
            SessionId::from_uuid(Uuid::from_u128(1)),
            OperationId::from_uuid(Uuid::from_u128(2)),
            facts,
            limit,
        )
        .err()
        .map(|e| e.kind())
    }

    #[test]
    fn retired_beats_taken_beats_the_limit() {
        assert_eq!(
            decide(true, true, 9, Some(1)),
            Some(OpsErrorKind::OwnerRetired)
        );
        assert_eq!(
            decide(false, true, 9, Some(1)),
            Some(OpsErrorKind::AlreadyRegistered)
        );
        assert_eq!(
            decide(false, false, 2, Some(2)),
            Some(OpsErrorKind::MaxConcurrentExceeded)
        );
        assert_eq!(decide(false, false, 1, Some(2)), None);
        assert_eq!(decide(false, false, 1_000, None), None);
    }

    #[test]
    fn the_refusal_reports_limit_and_active() {
        assert!(matches!(
            check_admission(Some(2), 2),
            Err(OpsError::MaxConcurrentExceeded {
                limit: 2,
                active: 2
            })
        ));
    }
}
