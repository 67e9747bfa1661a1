//! Session waits: [`JobAwaitCoordinator`].

use std::sync::Arc;

use docket_core::model::{Clock, Timestamp};
use docket_core::ops::{
    OperationId, OperationKind, OperationLifecycleSnapshot, OperationQuery, OperationResult,
    OperationSource, OperationSpec, OperationStatus, OpsError, OpsLifecycleRegistry, SessionId,
};

use crate::compose::accepts::wait_outcome_accepts_job_terminal;
use crate::compose::error::JobCompositionError;
use crate::ports::authority::JobAuthority;
use crate::ports::error::DetachedJobError;
use crate::ports::ids::{JobId, JobReference};
use crate::ports::job::JobTerminalResult;

/// Page size when scanning a session's operations.
const ACTIVITY_PAGE: u32 = 100;

/// The answer to [`JobAwaitCoordinator::await_job`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobAwaitReceipt {
    /// The awaited job.
    pub reference: JobReference,
    /// The wait binding (deterministic for session, realm and job).
    pub operation_id: OperationId,
    /// Whether the job had already ended when the binding was in place (the binding is then
    /// closed with its result).
    pub already_terminal: bool,
}

/// The jobs a session is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobAwaitActivity {
    /// The earliest start (else creation) of the running waits, in Unix milliseconds.
    pub since_ms: u64,
    /// The awaited jobs, sorted, without duplicates.
    pub job_ids: Vec<JobId>,
}

/// Binds a session's wait for a job to an operation in the registry, and closes it with the
/// job's result — for one realm.
///
/// Rules: a foreign realm, an unknown job and a job the session did not submit all look like
/// `Job(NotFound)`; the binding's id is [`OperationId::for_detached_job_wait`], and anything
/// else found at that id (another kind, owner or source) is `Corrupt`; a wait is closed only
/// with the job's committed result.
#[derive(Clone)]
pub struct JobAwaitCoordinator {
    realm_id: Arc<str>,
    jobs: Arc<dyn JobAuthority>,
    operations: Arc<dyn OpsLifecycleRegistry>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for JobAwaitCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobAwaitCoordinator")
            .field("realm_id", &self.realm_id)
            .finish_non_exhaustive()
    }
}

impl JobAwaitCoordinator {
    /// A coordinator for `realm_id`, stamping registry writes with `clock`.
    #[must_use]
    pub fn new(
        realm_id: impl Into<String>,
        jobs: Arc<dyn JobAuthority>,
        operations: Arc<dyn OpsLifecycleRegistry>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        JobAwaitCoordinator {
            realm_id: Arc::from(realm_id.into()),
            jobs,
            operations,
            clock,
        }
    }

    /// The realm.
    #[must_use]
    pub fn realm_id(&self) -> &str {
        &self.realm_id
    }

    /// The registry.
    #[must_use]
    pub fn operations(&self) -> &Arc<dyn OpsLifecycleRegistry> {
        &self.operations
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn check_realm(&self, reference: &JobReference) -> Result<(), JobCompositionError> {
        if reference.realm_id() != self.realm_id.as_ref() {
            return Err(DetachedJobError::NotFound(reference.job_id().clone()).into());
        }
        Ok(())
    }

    /// Makes `session` wait for `reference`: ensures a running binding, then re-reads the
    /// job so that a result committed (and even delivered, finding no binding) while the
    /// binding was being made still closes it. Concurrent calls for one (session, job) all
    /// succeed with the same operation id.
    ///
    /// # Errors
    /// `Job(NotFound)` (foreign realm, unknown job, not the origin session); `Corrupt` for a
    /// foreign operation at the binding's id or a closed binding that contradicts the job;
    /// registry and store errors.
    ///
    /// # Cancel safety
    /// Cancel safe: every step is idempotent, so awaiting again completes a dropped call.
    pub async fn await_job(
        &self,
        session_id: &SessionId,
        reference: &JobReference,
    ) -> Result<JobAwaitReceipt, JobCompositionError> {
        self.check_realm(reference)?;
        self.jobs
            .get_authorized_for_session(reference, session_id)
            .await?;
        let operation_id = OperationId::for_detached_job_wait(
            session_id,
            reference.realm_id(),
            reference.job_id().as_str(),
        );
        self.ensure_wait_binding(session_id, reference, &operation_id)
            .await?;
        // The result may have been committed, and even delivered (finding no binding and
        // skipping it), between the first read and the binding becoming visible. Reading
        // again only reads, and closes the binding from the latest committed truth.
        let latest = self
            .jobs
            .get_authorized_for_session(reference, session_id)
            .await?;
        if let Some(terminal) = &latest.terminal_result {
            self.apply_terminal_to_operation(session_id, &operation_id, terminal)
                .await?;
        }
        Ok(JobAwaitReceipt {
            reference: reference.clone(),
            operation_id,
            already_terminal: latest.terminal_result.is_some(),
        })
    }

    /// Closes `session`'s wait for `reference` with `terminal`, if the session has one.
    /// Without a binding this does nothing: delivery never creates a binding and never
    /// requires the receiving session to own the job.
    ///
    /// # Errors
    /// `Job(NotFound)` (foreign realm; or a binding exists but the session may not see the
    /// job); `Corrupt` for a foreign operation at the binding's id, or a `terminal` that is
    /// not the job's committed result (the binding is left untouched); registry errors.
    ///
    /// # Cancel safety
    /// Cancel safe: applying again completes a dropped call.
    pub async fn apply_terminal(
        &self,
        session_id: &SessionId,
        reference: &JobReference,
        terminal: &JobTerminalResult,
    ) -> Result<(), JobCompositionError> {
        self.check_realm(reference)?;
        let operation_id = OperationId::for_detached_job_wait(
            session_id,
            reference.realm_id(),
            reference.job_id().as_str(),
        );
        let Some(operation) = self
            .operations
            .operation_snapshot(session_id, &operation_id)
            .await?
        else {
            return Ok(());
        };
        validate_wait_operation(&operation, session_id, &expected_source(reference))?;
        let job = self
            .jobs
            .get_authorized_for_session(reference, session_id)
            .await?;
        if job.terminal_result.as_ref() != Some(terminal) {
            return Err(JobCompositionError::Corrupt(format!(
                "terminal delivery for {} disagrees with job authority",
                reference.job_id()
            )));
        }
        self.apply_terminal_to_operation(session_id, &operation_id, terminal)
            .await
    }

    /// The jobs `session` is waiting for (running bindings only), or `None`.
    ///
    /// # Errors
    /// `Corrupt` for a running wait without a detached-job source or in another realm;
    /// registry errors.
    pub async fn activity_for_session(
        &self,
        session_id: &SessionId,
    ) -> Result<Option<JobAwaitActivity>, JobCompositionError> {
        let mut since_ms = u64::MAX;
        let mut job_ids = Vec::new();
        let mut query = OperationQuery::first(ACTIVITY_PAGE);
        loop {
            let page = self.operations.list_operations(session_id, &query).await?;
            for operation in &page.operations {
                if operation.kind != OperationKind::DetachedJobWait
                    || operation.status != OperationStatus::Running
                    || &operation.owner != session_id
                {
                    continue;
                }
                let Some(OperationSource::DetachedJob { realm_id, job_id }) = &operation.source
                else {
                    return Err(JobCompositionError::Corrupt(format!(
                        "running detached job wait {} has no typed job source",
                        operation.id
                    )));
                };
                if realm_id.as_str() != self.realm_id.as_ref() {
                    return Err(JobCompositionError::Corrupt(format!(
                        "running detached job wait {} belongs to a different realm",
                        operation.id
                    )));
                }
                job_ids.push(JobId::new(job_id.clone())?);
                let since = operation.started_at.unwrap_or(operation.created_at);
                since_ms = since_ms.min(u64::try_from(since.as_micros() / 1000).unwrap_or(0));
            }
            match page.next_after {
                Some(after) if page.has_more => query.after = Some(after),
                _ => break,
            }
        }
        if job_ids.is_empty() {
            return Ok(None);
        }
        job_ids.sort();
        job_ids.dedup();
        Ok(Some(JobAwaitActivity { since_ms, job_ids }))
    }

    async fn ensure_wait_binding(
        &self,
        session_id: &SessionId,
        reference: &JobReference,
        operation_id: &OperationId,
    ) -> Result<(), JobCompositionError> {
        let source = expected_source(reference);
        if let Some(existing) = self
            .operations
            .operation_snapshot(session_id, operation_id)
            .await?
        {
            validate_wait_operation(&existing, session_id, &source)?;
            return self.start_binding(session_id, &existing).await;
        }
        let spec = OperationSpec::new(
            *operation_id,
            OperationKind::DetachedJobWait,
            format!("await detached job {}", reference.job_id()),
        )
        .with_source_label("await_job")
        .with_source(source.clone());
        match self
            .operations
            .register_operation(session_id, &spec, None, self.now())
            .await
        {
            Ok(registered) => self.start_binding(session_id, &registered).await,
            Err(OpsError::AlreadyRegistered { .. }) => {
                let existing = self
                    .operations
                    .operation_snapshot(session_id, operation_id)
                    .await?
                    .ok_or_else(|| {
                        JobCompositionError::Corrupt(format!(
                            "operation {operation_id} reported duplicate registration but is absent"
                        ))
                    })?;
                validate_wait_operation(&existing, session_id, &source)?;
                self.start_binding(session_id, &existing).await
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Starts a binding still in Provisioning. Losing that start to a concurrent awaiter
    /// (now Running) or to a delivery that already closed it (now terminal) is success: the
    /// binding is in the state this caller wanted, or past it.
    async fn start_binding(
        &self,
        session_id: &SessionId,
        operation: &OperationLifecycleSnapshot,
    ) -> Result<(), JobCompositionError> {
        if operation.status != OperationStatus::Provisioning {
            return Ok(());
        }
        match self
            .operations
            .provisioning_succeeded(session_id, &operation.id, self.now())
            .await
        {
            Ok(_) => Ok(()),
            Err(OpsError::InvalidTransition { status, .. })
                if status == OperationStatus::Running || status.is_terminal() =>
            {
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn apply_terminal_to_operation(
        &self,
        session_id: &SessionId,
        operation_id: &OperationId,
        terminal: &JobTerminalResult,
    ) -> Result<(), JobCompositionError> {
        let disappeared = || {
            JobCompositionError::Corrupt(format!(
                "detached job wait operation {operation_id} disappeared"
            ))
        };
        let current = self
            .operations
            .operation_snapshot(session_id, operation_id)
            .await?
            .ok_or_else(disappeared)?;
        let encoded = terminal
            .canonical_json()
            .map_err(JobCompositionError::Encode)?;
        if current.is_terminal() {
            if wait_outcome_accepts_job_terminal(
                current.terminal_outcome.as_ref(),
                terminal,
                &encoded,
            ) {
                return Ok(());
            }
            return Err(JobCompositionError::Corrupt(format!(
                "wait operation {operation_id} terminal outcome conflicts with job authority"
            )));
        }
        let now = self.now();
        let result = match terminal {
            JobTerminalResult::Succeeded { .. } => {
                self.operations
                    .complete_operation(
                        session_id,
                        operation_id,
                        OperationResult {
                            content: encoded.clone(),
                            is_error: false,
                            duration_ms: 0,
                            tokens_used: 0,
                        },
                        now,
                    )
                    .await
            }
            JobTerminalResult::Cancelled => {
                self.operations
                    .cancel_operation(session_id, operation_id, Some(encoded.clone()), now)
                    .await
            }
            JobTerminalResult::Failed { .. }
            | JobTerminalResult::WorkerLost
            | JobTerminalResult::NeedsAttention { .. } => {
                self.operations
                    .fail_operation(session_id, operation_id, encoded.clone(), now)
                    .await
            }
        };
        if let Err(error) = result {
            // Two deliveries can both see Running; the registry lets one win. The loser
            // accepts the committed outcome when it is the same job truth, or a lifecycle
            // closure of the binding.
            let latest = self
                .operations
                .operation_snapshot(session_id, operation_id)
                .await?
                .ok_or_else(disappeared)?;
            if latest.is_terminal()
                && wait_outcome_accepts_job_terminal(
                    latest.terminal_outcome.as_ref(),
                    terminal,
                    &encoded,
                )
            {
                return Ok(());
            }
            return Err(error.into());
        }
        Ok(())
    }
}

fn expected_source(reference: &JobReference) -> OperationSource {
    OperationSource::detached_job(reference.realm_id(), reference.job_id().as_str())
}

fn validate_wait_operation(
    operation: &OperationLifecycleSnapshot,
    session_id: &SessionId,
    source: &OperationSource,
) -> Result<(), JobCompositionError> {
    if operation.kind != OperationKind::DetachedJobWait
        || &operation.owner != session_id
        || operation.source.as_ref() != Some(source)
    {
        return Err(JobCompositionError::Corrupt(format!(
            "operation {} conflicts with detached job wait identity",
            operation.id
        )));
    }
    Ok(())
}
