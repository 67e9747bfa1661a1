//! The schedule seam: a named target that a schedule occurrence invokes.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One invocation of a [`HostRunnable`] for one schedule occurrence. The scheduler delivers
/// it at least once (again after a crash or a lost lease, with the same identity), so the
/// target must make its effect happen once per `occurrence_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRunnableInvocation {
    /// The occurrence (a UUID, printed hyphenated).
    pub occurrence_id: uuid::Uuid,
    /// The schedule.
    pub schedule_id: String,
    /// `schedule:{schedule_id}:occurrence:{occurrence_id}`, committed before the call.
    pub delivery_idempotency_key: String,
    /// The runnable's registered name.
    pub runnable: String,
    /// The occurrence's due time, in Unix milliseconds.
    pub trigger_time_ms: i64,
    /// Opaque canonical JSON parameters from the binding.
    pub params: Option<serde_json::Value>,
}

impl HostRunnableInvocation {
    /// An invocation with the idempotency key derived as the scheduler derives it.
    #[must_use]
    pub fn new(
        occurrence_id: uuid::Uuid,
        schedule_id: impl Into<String>,
        runnable: impl Into<String>,
        trigger_time_ms: i64,
    ) -> Self {
        let schedule_id = schedule_id.into();
        HostRunnableInvocation {
            delivery_idempotency_key: format!("schedule:{schedule_id}:occurrence:{occurrence_id}"),
            occurrence_id,
            schedule_id,
            runnable: runnable.into(),
            trigger_time_ms,
            params: None,
        }
    }
}

/// A successful invocation (it carries no data).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostRunnableOutcome {}

impl HostRunnableOutcome {
    /// The occurrence is complete.
    #[must_use]
    pub fn completed() -> Self {
        HostRunnableOutcome {}
    }
}

/// Why an invocation did not complete.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostRunnableError {
    /// No runnable under that name.
    #[error("host runnable {name} is not registered")]
    Unregistered {
        /// The name.
        name: String,
    },
    /// The target refused the occurrence for good: the occurrence fails and is not retried.
    #[error("host runnable failed: {detail}")]
    Failed {
        /// Why.
        detail: String,
    },
    /// A transient fault (an outage) stopped the target before it decided: the scheduler
    /// should deliver the same occurrence again later rather than fail it.
    #[error("host runnable hit a transient fault: {detail}")]
    Retryable {
        /// Why.
        detail: String,
    },
}

/// A schedule target.
///
/// # Errors
/// See [`HostRunnableError`].
///
/// # Cancel safety
/// Implementations must tolerate being dropped mid-call: the occurrence is delivered again.
#[async_trait]
pub trait HostRunnable: Send + Sync {
    /// Handles one occurrence.
    ///
    /// # Errors
    /// See [`HostRunnableError`].
    async fn run(
        &self,
        invocation: HostRunnableInvocation,
    ) -> Result<HostRunnableOutcome, HostRunnableError>;
}
