//! The error classes of the job and evidence ports.
//!
//! Both separate *transient* store faults (an outage: retrying the same call later may
//! succeed) from everything else, so that callers such as the schedule adapter can leave an
//! occurrence retryable instead of failing it for good.

use super::ids::{JobId, WorkItemId, WorkNamespace};

/// Errors of [`crate::JobAuthority`] and of the delivery ledger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DetachedJobError {
    /// The input was malformed (an id, a realm, a spec field).
    #[error("invalid detached job input: {0}")]
    InvalidInput(String),
    /// No such job in the caller's realm, or the caller may not see it (concealment: both
    /// look the same).
    #[error("detached job {0} not found")]
    NotFound(JobId),
    /// The submission key is taken in this realm by a job with another specification.
    #[error("submission key is already used by a job with a different specification")]
    SubmissionConflict,
    /// A revision-guarded write lost to a concurrent one.
    #[error("detached job {job_id} moved from revision {expected} to {actual}")]
    StaleRevision {
        /// The job.
        job_id: JobId,
        /// The revision the writer read.
        expected: u64,
        /// The revision found.
        actual: u64,
    },
    /// A write carried an attempt authority that is no longer current.
    #[error("stale attempt for detached job {job_id}")]
    StaleAttempt {
        /// The job.
        job_id: JobId,
    },
    /// The job's state does not allow the request.
    #[error("invalid transition for detached job {job_id}: {detail}")]
    InvalidTransition {
        /// The job.
        job_id: JobId,
        /// Why.
        detail: String,
    },
    /// The storage failed. `transient` says whether retrying later may succeed.
    #[error("detached job store failed ({}): {detail}", if *.transient { "transient" } else { "permanent" })]
    Store {
        /// Whether the fault is an outage that retrying may outlast.
        transient: bool,
        /// What failed.
        detail: String,
    },
}

impl DetachedJobError {
    /// Whether retrying the same call later may succeed.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            DetachedJobError::Store {
                transient: true,
                ..
            }
        )
    }

    /// A store fault.
    pub fn store(transient: bool, detail: impl std::fmt::Display) -> Self {
        DetachedJobError::Store {
            transient,
            detail: detail.to_string(),
        }
    }
}

/// Errors of [`crate::EvidenceGraph`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    /// No such work item.
    #[error("work item {realm_id}/{namespace}/{id} not found")]
    NotFound {
        /// The realm.
        realm_id: String,
        /// The namespace.
        namespace: WorkNamespace,
        /// The item.
        id: WorkItemId,
    },
    /// The item's revision moved since the caller read it.
    #[error("work item {id} is at revision {actual}, not {expected}")]
    StaleRevision {
        /// The item.
        id: WorkItemId,
        /// The revision the writer read.
        expected: u64,
        /// The revision found.
        actual: u64,
    },
    /// The item already exists with other content.
    #[error("work item conflict: {0}")]
    Conflict(String),
    /// The item's state does not allow the request.
    #[error("invalid work item transition: {0}")]
    InvalidTransition(String),
    /// The input was malformed, or is reserved evidence sent through the generic path.
    #[error("invalid work item input: {0}")]
    InvalidInput(String),
    /// The storage failed. `transient` says whether retrying later may succeed.
    #[error("work item store failed ({}): {detail}", if *.transient { "transient" } else { "permanent" })]
    Store {
        /// Whether the fault is an outage that retrying may outlast.
        transient: bool,
        /// What failed.
        detail: String,
    },
}

impl EvidenceError {
    /// Whether retrying the same call later may succeed (a transient store fault or a lost
    /// revision race).
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            EvidenceError::Store {
                transient: true,
                ..
            } | EvidenceError::StaleRevision { .. }
        )
    }

    /// A store fault.
    pub fn store(transient: bool, detail: impl std::fmt::Display) -> Self {
        EvidenceError::Store {
            transient,
            detail: detail.to_string(),
        }
    }
}
