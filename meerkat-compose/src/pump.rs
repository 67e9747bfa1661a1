//! [`DeliveryPump`]: drives every terminal job result to its linked work items and to the
//! delivery sink exactly once per job, across crashes, through the durable
//! [`DeliveryLedger`] cursor.

use std::sync::Arc;

use crate::compose::error::JobCompositionError;
use crate::compose::evidence::{JobTerminalEvidenceProjector, JobWorkGraphLink};
use crate::ports::authority::JobAuthority;
use crate::ports::delivery::{
    JobDeliveryApplication, JobDeliveryContent, JobDeliverySink, JobSubscription,
};
use crate::ports::error::DetachedJobError;
use crate::ports::ids::{JobId, JobReference};
use crate::ports::ledger::DeliveryLedger;

/// The sequence of a job's terminal delivery: a job has exactly one.
pub const TERMINAL_DELIVERY_SEQUENCE: u64 = 1;

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PumpReport {
    /// Jobs whose terminal result was projected, delivered and acknowledged in this pass.
    pub delivered: Vec<JobId>,
    /// Pending jobs that have not ended yet (or whose run does not exist yet).
    pub waiting: usize,
    /// Jobs whose delivery failed in this pass; they stay pending and are retried on the
    /// next pass, without holding back the others.
    pub blocked: Vec<(JobId, String)>,
}

/// Delivers terminal job results for one realm.
///
/// One pass reads the realm's pending jobs from the ledger; for each job whose run has ended
/// it (1) projects the terminal evidence onto every linked work item, (2) hands one terminal
/// application for the job's origin session to the sink (typically a
/// [`crate::JobAwaitDeliverySink`], which closes the session's wait), and only then (3)
/// acknowledges the job in the ledger. A crash anywhere before (3) leaves the job pending,
/// and the next pass — in this process or after a restart — repeats (1) and (2): both are
/// idempotent (evidence is found `AlreadyPresent`, a closed wait accepts the same result),
/// so the evidence and the wait outcome exist exactly once. The sink itself may see a
/// repeated application after a crash, as its contract allows.
#[derive(Clone)]
pub struct DeliveryPump {
    realm: String,
    jobs: Arc<dyn JobAuthority>,
    ledger: Arc<dyn DeliveryLedger>,
    projector: JobTerminalEvidenceProjector,
    sink: Arc<dyn JobDeliverySink>,
}

impl std::fmt::Debug for DeliveryPump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryPump")
            .field("realm", &self.realm)
            .field("projector", &self.projector)
            .finish_non_exhaustive()
    }
}

impl DeliveryPump {
    /// A pump for `realm`.
    #[must_use]
    pub fn new(
        realm: impl Into<String>,
        jobs: Arc<dyn JobAuthority>,
        ledger: Arc<dyn DeliveryLedger>,
        projector: JobTerminalEvidenceProjector,
        sink: Arc<dyn JobDeliverySink>,
    ) -> Self {
        DeliveryPump {
            realm: realm.into(),
            jobs,
            ledger,
            projector,
            sink,
        }
    }

    /// Records `link` durably, so the job's terminal evidence lands on its work item.
    /// Link before the job can end; a link made after delivery is not projected.
    ///
    /// # Errors
    /// `InvalidInput` for a link in another realm than the pump's; ledger faults.
    pub async fn link(&self, link: &JobWorkGraphLink) -> Result<(), JobCompositionError> {
        if link.job().realm_id() != self.realm {
            return Err(JobCompositionError::InvalidInput(
                "the link's realm is not the pump's realm".into(),
            ));
        }
        self.ledger.link(link.job(), link.work_item()).await?;
        Ok(())
    }

    /// One pass over up to `limit` pending jobs.
    ///
    /// # Errors
    /// Only a failure to read the ledger; a failure of one job's delivery is reported in
    /// [`PumpReport::blocked`].
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped pass leaves unacknowledged jobs pending.
    pub async fn pump_once(&self, limit: u32) -> Result<PumpReport, JobCompositionError> {
        let mut report = PumpReport::default();
        for job_id in self.ledger.pending(&self.realm, limit).await? {
            match self.deliver(&job_id).await {
                Ok(true) => report.delivered.push(job_id),
                Ok(false) => report.waiting += 1,
                Err(error) => report.blocked.push((job_id, error.to_string())),
            }
        }
        Ok(report)
    }

    /// Delivers one job if it has ended; `Ok(false)` when it has not (or does not exist yet:
    /// a job is recorded pending before its run is started).
    async fn deliver(&self, job_id: &JobId) -> Result<bool, JobCompositionError> {
        let reference = JobReference::new(self.realm.clone(), job_id.clone())?;
        let job = match self.jobs.get_for_reference(&reference).await {
            Ok(job) => job,
            Err(DetachedJobError::NotFound(_)) => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        let Some(terminal) = job.terminal_result else {
            return Ok(false);
        };
        for item in self.ledger.links(&reference).await? {
            let link = JobWorkGraphLink::new(reference.clone(), item)?;
            self.projector.project_terminal(&link, &terminal).await?;
        }
        let application = JobDeliveryApplication::Notification {
            job_id: job_id.clone(),
            delivery_sequence: TERMINAL_DELIVERY_SEQUENCE,
            subscription: JobSubscription::origin(job.origin_session_id),
            content: JobDeliveryContent::Terminal(terminal),
        };
        self.sink
            .apply(application)
            .await
            .map_err(JobCompositionError::InvalidInput)?;
        self.ledger.mark_delivered(&reference).await?;
        Ok(true)
    }
}
