//! [`JobCompositionError`].

use docket_core::ops::OpsError;

use crate::ports::error::{DetachedJobError, EvidenceError};

/// Errors of the composition layer.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JobCompositionError {
    /// The job authority refused or failed.
    #[error(transparent)]
    Job(#[from] DetachedJobError),
    /// The evidence graph refused or failed.
    #[error(transparent)]
    WorkGraph(#[from] EvidenceError),
    /// The operation registry refused or failed.
    #[error(transparent)]
    Operations(#[from] OpsError),
    /// The caller's input was refused.
    #[error("detached job composition rejected input: {0}")]
    InvalidInput(String),
    /// Two authorities disagree, or an identity is taken by something else (split brain).
    #[error("detached job composition state is corrupt: {0}")]
    Corrupt(String),
    /// A value could not be encoded.
    #[error("failed to encode detached job composition data: {0}")]
    Encode(String),
}

impl JobCompositionError {
    /// Whether the same call may succeed later without any change: a transient store fault
    /// of any port, or an evidence revision race that outlasted the bounded retry.
    /// `InvalidInput`, `Corrupt`, `Encode`, conflicts and `NotFound` are permanent.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        match self {
            JobCompositionError::Job(e) => e.is_transient(),
            JobCompositionError::WorkGraph(e) => e.is_transient(),
            JobCompositionError::Operations(e) => {
                e.is_retryable() || matches!(e, OpsError::Ambiguous { .. })
            }
            JobCompositionError::InvalidInput(_)
            | JobCompositionError::Corrupt(_)
            | JobCompositionError::Encode(_) => false,
        }
    }
}
