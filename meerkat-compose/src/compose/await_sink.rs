//! [`JobAwaitDeliverySink`]: a delivery sink that first closes the receiver's wait binding.

use std::sync::Arc;

use async_trait::async_trait;

use crate::compose::coordinator::JobAwaitCoordinator;
use crate::ports::delivery::{JobDeliveryApplication, JobDeliverySink};
use crate::ports::ids::JobReference;

/// Wraps a sink: a terminal delivery first closes the receiving session's wait for the job
/// (when it has one), then every delivery — terminal or not, bound or not, duplicate or not —
/// goes on to the wrapped sink. If closing the wait fails, the wrapped sink is not called and
/// the delivery fails (to be retried).
#[derive(Clone)]
pub struct JobAwaitDeliverySink {
    coordinator: JobAwaitCoordinator,
    downstream: Arc<dyn JobDeliverySink>,
}

impl std::fmt::Debug for JobAwaitDeliverySink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobAwaitDeliverySink")
            .field("coordinator", &self.coordinator)
            .finish_non_exhaustive()
    }
}

impl JobAwaitDeliverySink {
    /// Wraps `downstream`.
    #[must_use]
    pub fn new(coordinator: JobAwaitCoordinator, downstream: Arc<dyn JobDeliverySink>) -> Self {
        JobAwaitDeliverySink {
            coordinator,
            downstream,
        }
    }
}

#[async_trait]
impl JobDeliverySink for JobAwaitDeliverySink {
    async fn apply(&self, application: JobDeliveryApplication) -> Result<(), String> {
        let (job_id, session_id, terminal) = application.parts();
        if let Some(terminal) = terminal {
            let reference = JobReference::new(self.coordinator.realm_id(), job_id.clone())
                .map_err(|e| e.to_string())?;
            self.coordinator
                .apply_terminal(session_id, &reference, terminal)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.downstream.apply(application).await
    }
}
