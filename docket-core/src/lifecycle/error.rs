//! Errors of the lifecycle composer.

use std::fmt;

use crate::runtime::Moment;
use crate::store::StoreError;

/// Why `start` or `commit_moment` did not commit.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// The store refused or failed; nothing was committed unless the error is `Ambiguous`.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run's first moment parks externally or terminally, so it would never wake; nothing
    /// was sent to the store.
    #[error(
        "a run cannot start with disposition `{disposition}`: its first wake must be due or timed"
    )]
    UnschedulableStart {
        /// The moment's `wake_disposition` (`"external"` or `"terminal"`).
        disposition: &'static str,
    },
    /// The claimed commit was sent but its outcome is unknown (the store answered
    /// `Ambiguous`). The moment is handed back so that a caller who proves by re-reading that
    /// it landed can still announce it ([`super::Lifecycle::announce_committed`]).
    #[error("{source}")]
    Ambiguous {
        /// The store's `Ambiguous` error.
        source: StoreError,
        /// The moment whose commit is in doubt.
        moment: Box<Moment>,
    },
}

impl LifecycleError {
    /// The store error, if that is what this is.
    #[must_use]
    pub fn as_store(&self) -> Option<&StoreError> {
        match self {
            LifecycleError::Store(e) | LifecycleError::Ambiguous { source: e, .. } => Some(e),
            LifecycleError::UnschedulableStart { .. } => None,
        }
    }
}

/// Why a signal did not commit.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SignalError<E> {
    /// The store refused or failed (after the bounded retries, for `StaleCheckpoint`).
    Store(StoreError),
    /// The mutation refused the fetched run; nothing was written.
    Mutation(E),
    /// The mutation proposed something the lifecycle cannot commit for this run (e.g. a
    /// moment of another run); nothing was written.
    InvalidMutation {
        /// What was wrong.
        reason: String,
    },
}

impl<E> SignalError<E> {
    /// The store error, if that is what this is.
    #[must_use]
    pub fn as_store(&self) -> Option<&StoreError> {
        match self {
            SignalError::Store(e) => Some(e),
            SignalError::Mutation(_) | SignalError::InvalidMutation { .. } => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for SignalError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignalError::Store(e) => write!(f, "{e}"),
            SignalError::Mutation(e) => write!(f, "the signal's mutation refused the run: {e}"),
            SignalError::InvalidMutation { reason } => {
                write!(f, "invalid lifecycle mutation: {reason}")
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for SignalError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SignalError::Store(e) => Some(e),
            SignalError::Mutation(e) => Some(e),
            SignalError::InvalidMutation { .. } => None,
        }
    }
}
