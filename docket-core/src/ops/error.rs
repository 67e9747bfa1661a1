//! [`OpsError`]: what every registry call can fail with.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use crate::store::{Message, SourceError, StoreError};

use super::ids::{OperationId, SessionId};
use super::status::{OperationAction, OperationStatus};

/// The portable error algebra of [`crate::ops::OpsLifecycleRegistry`]. Backends map their
/// native failures into the infrastructure variants exactly as they do for [`StoreError`]
/// (and `From<StoreError>` does it for them); no driver error type crosses the trait.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OpsError {
    /// The owner already holds an operation with this id (in any status, terminal records
    /// included while they are retained).
    #[error("operation {id} is already registered")]
    AlreadyRegistered {
        /// The id.
        id: OperationId,
    },
    /// The owner holds no operation with this id (never registered, collected, evicted, or
    /// owned by another session: all look the same).
    #[error("operation {id} not found")]
    NotFound {
        /// The id.
        id: OperationId,
    },
    /// The operation exists, but `action` is not allowed from its current `status`.
    #[error("operation {id} is {status}: {action} is not allowed")]
    InvalidTransition {
        /// The id.
        id: OperationId,
        /// The status the operation was in when the call was refused (for the loser of a
        /// race, the winner's status).
        status: OperationStatus,
        /// The refused call.
        action: OperationAction,
    },
    /// The owner already has `active` non-terminal operations and the admission limit is
    /// `limit`.
    #[error("admission refused: {active} active operations, limit {limit}")]
    MaxConcurrentExceeded {
        /// The limit of the call.
        limit: u32,
        /// The owner's non-terminal operations when the call was refused.
        active: u64,
    },
    /// The owner was retired: it accepts no write any more (reads keep working).
    #[error("owner {owner} is retired")]
    OwnerRetired {
        /// The owner.
        owner: SessionId,
    },
    /// A caller-supplied value breaks a rule (a nil id, an empty or oversized name, an
    /// unknown kind, an outcome that does not fit its action, a limit of zero, ...). Nothing
    /// was written.
    #[error("invalid argument: {reason}")]
    InvalidArgument {
        /// What was wrong.
        reason: String,
    },
    /// A stored record cannot be decoded or breaks an invariant (never reported as absent).
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// Which record.
        what: String,
        /// What failed.
        detail: String,
    },
    /// The backend could not be reached or refused the operation; nothing was written.
    #[error("registry unavailable ({}): {source}", if *.retryable { "retryable" } else { "permanent" })]
    Unavailable {
        /// Whether retrying later may succeed.
        retryable: bool,
        /// The underlying failure.
        source: SourceError,
    },
    /// The write was sent but its outcome is unknown: re-read before doing anything else.
    #[error("ambiguous outcome: the write may or may not have been applied: {source}")]
    Ambiguous {
        /// The underlying failure.
        source: SourceError,
    },
}

/// The variant of an [`OpsError`] without its payload, for comparisons across backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum OpsErrorKind {
    AlreadyRegistered,
    NotFound,
    InvalidTransition,
    MaxConcurrentExceeded,
    OwnerRetired,
    InvalidArgument,
    Corrupt,
    Unavailable,
    Ambiguous,
}

impl OpsError {
    /// The payload-free variant.
    #[must_use]
    pub fn kind(&self) -> OpsErrorKind {
        match self {
            OpsError::AlreadyRegistered { .. } => OpsErrorKind::AlreadyRegistered,
            OpsError::NotFound { .. } => OpsErrorKind::NotFound,
            OpsError::InvalidTransition { .. } => OpsErrorKind::InvalidTransition,
            OpsError::MaxConcurrentExceeded { .. } => OpsErrorKind::MaxConcurrentExceeded,
            OpsError::OwnerRetired { .. } => OpsErrorKind::OwnerRetired,
            OpsError::InvalidArgument { .. } => OpsErrorKind::InvalidArgument,
            OpsError::Corrupt { .. } => OpsErrorKind::Corrupt,
            OpsError::Unavailable { .. } => OpsErrorKind::Unavailable,
            OpsError::Ambiguous { .. } => OpsErrorKind::Ambiguous,
        }
    }

    /// Whether retrying the same call later may succeed without changing it. `Ambiguous` is
    /// not: the caller must first find out whether the write landed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            OpsError::Unavailable {
                retryable: true,
                ..
            }
        )
    }

    /// An invalid-argument error.
    pub fn invalid_argument(reason: impl Into<String>) -> Self {
        OpsError::InvalidArgument {
            reason: reason.into(),
        }
    }

    /// A corrupt-record error.
    pub fn corrupt(what: impl Into<String>, detail: impl fmt::Display) -> Self {
        OpsError::Corrupt {
            what: what.into(),
            detail: detail.to_string(),
        }
    }

    /// A permanent unavailability caused by `source`.
    pub fn permanent(source: impl StdError + Send + Sync + 'static) -> Self {
        OpsError::Unavailable {
            retryable: false,
            source: Arc::new(source),
        }
    }

    /// The error of a store that offers no operation registry.
    #[must_use]
    pub fn no_registry() -> Self {
        OpsError::permanent(Message(
            "this store offers no operation registry".to_owned(),
        ))
    }
}

/// Infrastructure failures keep their meaning (`Unavailable`, `Ambiguous`, `Corrupt`,
/// `InvalidArgument`). Every other store error has no registry meaning; it can only come from
/// a backend bug, so it becomes a permanent `Unavailable` that carries it.
impl From<StoreError> for OpsError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable { retryable, source } => {
                OpsError::Unavailable { retryable, source }
            }
            StoreError::Ambiguous { source } => OpsError::Ambiguous { source },
            StoreError::Corrupt { what, detail } => OpsError::Corrupt { what, detail },
            StoreError::InvalidArgument { reason } => OpsError::InvalidArgument { reason },
            other => OpsError::Unavailable {
                retryable: false,
                source: Arc::new(other),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_keep_their_infrastructure_meaning() {
        let retryable = OpsError::from(StoreError::retryable(Message("busy".into())));
        assert_eq!(retryable.kind(), OpsErrorKind::Unavailable);
        assert!(retryable.is_retryable());
        let ambiguous = OpsError::from(StoreError::ambiguous(Message("lost".into())));
        assert_eq!(ambiguous.kind(), OpsErrorKind::Ambiguous);
        assert!(!ambiguous.is_retryable());
        let corrupt = OpsError::from(StoreError::corrupt("row", "bad"));
        assert_eq!(corrupt.kind(), OpsErrorKind::Corrupt);
        let stray = OpsError::from(StoreError::StaleCheckpoint);
        assert_eq!(stray.kind(), OpsErrorKind::Unavailable);
        assert!(!stray.is_retryable());
    }
}
