//! Job → work item: [`JobWorkGraphLink`], [`JobTerminalEvidenceKind`] and the
//! exactly-once [`JobTerminalEvidenceProjector`].

use std::sync::Arc;
use std::time::Duration;

use crate::compose::error::JobCompositionError;
use crate::ports::authority::JobAuthority;
use crate::ports::error::EvidenceError;
use crate::ports::evidence::{EvidenceGraph, WorkEvidenceRef};
use crate::ports::ids::{JobReference, WorkItemRef};
use crate::ports::job::JobTerminalResult;

/// A job and the work item that receives its terminal evidence; both in one realm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobWorkGraphLink {
    job: JobReference,
    work_item: WorkItemRef,
}

impl JobWorkGraphLink {
    /// Links `job` to `work_item`.
    ///
    /// # Errors
    /// [`JobCompositionError::InvalidInput`] when they are in different realms.
    pub fn new(job: JobReference, work_item: WorkItemRef) -> Result<Self, JobCompositionError> {
        if job.realm_id() != work_item.realm_id {
            return Err(JobCompositionError::InvalidInput(
                "job and WorkGraph item must belong to the same realm".into(),
            ));
        }
        Ok(JobWorkGraphLink { job, work_item })
    }

    /// The job.
    #[must_use]
    pub fn job(&self) -> &JobReference {
        &self.job
    }

    /// The work item.
    #[must_use]
    pub fn work_item(&self) -> &WorkItemRef {
        &self.work_item
    }
}

/// The terminal class of a job, as evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobTerminalEvidenceKind {
    /// The job succeeded.
    Succeeded,
    /// The job failed.
    Failed,
    /// The job was cancelled.
    Cancelled,
    /// The worker was lost.
    WorkerLost,
    /// The job needs attention.
    NeedsAttention,
}

impl JobTerminalEvidenceKind {
    /// The class of `result`.
    #[must_use]
    pub fn from_terminal(result: &JobTerminalResult) -> Self {
        match result {
            JobTerminalResult::Succeeded { .. } => Self::Succeeded,
            JobTerminalResult::Failed { .. } => Self::Failed,
            JobTerminalResult::Cancelled => Self::Cancelled,
            JobTerminalResult::WorkerLost => Self::WorkerLost,
            JobTerminalResult::NeedsAttention { .. } => Self::NeedsAttention,
        }
    }

    /// The evidence `kind` string (stable; part of the stored evidence).
    #[must_use]
    pub fn evidence_kind(self) -> &'static str {
        match self {
            Self::Succeeded => "meerkat.detached_job.terminal.succeeded",
            Self::Failed => "meerkat.detached_job.terminal.failed",
            Self::Cancelled => "meerkat.detached_job.terminal.cancelled",
            Self::WorkerLost => "meerkat.detached_job.terminal.worker_lost",
            Self::NeedsAttention => "meerkat.detached_job.terminal.needs_attention",
        }
    }
}

/// What a projection did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobTerminalEvidenceProjection {
    /// No evidence graph is configured (the job truth was still checked).
    WorkGraphDisabled,
    /// This call added the evidence.
    Added(JobTerminalEvidenceKind),
    /// Identical evidence was already there.
    AlreadyPresent(JobTerminalEvidenceKind),
}

/// How often and how patiently a projector retries a lost revision race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvidenceRetry {
    /// Attempts in all (at least 1).
    pub max_attempts: u32,
    /// The pause after the first lost race; doubled after each further one.
    pub initial_backoff: Duration,
    /// The longest pause.
    pub max_backoff: Duration,
}

impl Default for EvidenceRetry {
    fn default() -> Self {
        EvidenceRetry {
            max_attempts: 16,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(100),
        }
    }
}

/// The evidence written for `job` ending with `terminal`: kind from the terminal class, id
/// `detached_job:{job_id}:terminal`, label `Detached job {job_id}`, summary the canonical
/// JSON of the result, no confirmation.
///
/// # Errors
/// [`JobCompositionError::Encode`] if the result cannot be encoded.
pub fn terminal_evidence(
    job: &JobReference,
    terminal: &JobTerminalResult,
) -> Result<WorkEvidenceRef, JobCompositionError> {
    let kind = JobTerminalEvidenceKind::from_terminal(terminal);
    Ok(WorkEvidenceRef {
        kind: kind.evidence_kind().into(),
        id: format!("detached_job:{}:terminal", job.job_id()),
        label: Some(format!("Detached job {}", job.job_id())),
        summary: Some(
            terminal
                .canonical_json()
                .map_err(JobCompositionError::Encode)?,
        ),
        confirmation_kind: None,
        confirming_owner_key: None,
    })
}

/// Writes a job's terminal evidence onto its linked work item, exactly once however many
/// projectors race: each re-reads the item, stops at evidence with the same id (identical →
/// `AlreadyPresent`, different → `Corrupt`), and otherwise appends under the revision it read.
/// A lost race is retried with a bounded, doubling backoff ([`EvidenceRetry`]); when the
/// bound is reached the `StaleRevision` is returned (it is transient).
#[derive(Clone)]
pub struct JobTerminalEvidenceProjector {
    jobs: Arc<dyn JobAuthority>,
    workgraph: Option<Arc<dyn EvidenceGraph>>,
    retry: EvidenceRetry,
}

impl std::fmt::Debug for JobTerminalEvidenceProjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobTerminalEvidenceProjector")
            .field("enabled", &self.workgraph.is_some())
            .finish()
    }
}

impl JobTerminalEvidenceProjector {
    /// A projector writing to `workgraph`.
    #[must_use]
    pub fn new(jobs: Arc<dyn JobAuthority>, workgraph: Arc<dyn EvidenceGraph>) -> Self {
        JobTerminalEvidenceProjector {
            jobs,
            workgraph: Some(workgraph),
            retry: EvidenceRetry::default(),
        }
    }

    /// A projector with no evidence graph: it still checks job truth.
    #[must_use]
    pub fn disabled(jobs: Arc<dyn JobAuthority>) -> Self {
        JobTerminalEvidenceProjector {
            jobs,
            workgraph: None,
            retry: EvidenceRetry::default(),
        }
    }

    /// The same projector with another retry bound.
    #[must_use]
    pub fn with_retry(mut self, retry: EvidenceRetry) -> Self {
        self.retry = retry;
        self
    }

    /// Projects `terminal` for `link`.
    ///
    /// # Errors
    /// `Job(NotFound)`; `Corrupt` when `terminal` is not the job's committed result (also for
    /// a job that has not ended, and also when disabled) or when different evidence holds the
    /// id; `WorkGraph(NotFound)` for a missing item; `WorkGraph(StaleRevision)` when the retry
    /// bound is reached; store faults.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped projection either added the evidence or not, and projecting
    /// again finds out.
    pub async fn project_terminal(
        &self,
        link: &JobWorkGraphLink,
        terminal: &JobTerminalResult,
    ) -> Result<JobTerminalEvidenceProjection, JobCompositionError> {
        let job = self.jobs.get_for_reference(&link.job).await?;
        if job.terminal_result.as_ref() != Some(terminal) {
            return Err(JobCompositionError::Corrupt(format!(
                "terminal evidence for {} disagrees with job authority",
                link.job.job_id()
            )));
        }
        let Some(workgraph) = &self.workgraph else {
            return Ok(JobTerminalEvidenceProjection::WorkGraphDisabled);
        };
        let kind = JobTerminalEvidenceKind::from_terminal(terminal);
        let evidence = terminal_evidence(&link.job, terminal)?;
        let mut backoff = self.retry.initial_backoff;
        let mut attempt = 1;
        loop {
            let item = workgraph.get_item(&link.work_item).await?;
            if let Some(existing) = item.evidence.iter().find(|e| e.id == evidence.id) {
                if existing == &evidence {
                    return Ok(JobTerminalEvidenceProjection::AlreadyPresent(kind));
                }
                return Err(JobCompositionError::Corrupt(format!(
                    "WorkGraph evidence {} conflicts with terminal job evidence",
                    evidence.id
                )));
            }
            match workgraph
                .add_evidence(&link.work_item, item.revision, &evidence)
                .await
            {
                Ok(_) => return Ok(JobTerminalEvidenceProjection::Added(kind)),
                Err(EvidenceError::StaleRevision { .. }) if attempt < self.retry.max_attempts => {
                    attempt += 1;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.retry.max_backoff);
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
}
