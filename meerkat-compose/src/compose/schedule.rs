//! Schedule → job: [`ScheduledJobTemplate`] and [`ScheduledDurableJobRunnable`].

use std::sync::Arc;

use async_trait::async_trait;

use docket_core::ops::SessionId;

use crate::compose::error::JobCompositionError;
use crate::ports::authority::JobAuthority;
use crate::ports::error::DetachedJobError;
use crate::ports::ids::{
    check_scope_component, CanonicalArgumentsHash, ExecutionIntentId, InteractionLineageId,
    JobSubmissionKey, OriginMemberId, RunnerIdentity, RunnerSpecificationRef, ToolIdentity,
};
use crate::ports::job::{JobSpec, RestartClass, ToolCredentialContextRef};
use crate::ports::schedule::{
    HostRunnable, HostRunnableError, HostRunnableInvocation, HostRunnableOutcome,
};

/// Everything of a job spec except what the occurrence decides.
///
/// For an occurrence `o`, the key `schedule_occurrence:{o}` (the occurrence id hyphenated) is
/// the execution intent, the interaction lineage and the submission key; every other field
/// comes from the template. So every delivery of one occurrence submits the same job.
#[derive(Debug, Clone)]
pub struct ScheduledJobTemplate {
    realm_id: String,
    origin_session_id: SessionId,
    tool: ToolIdentity,
    runner: RunnerIdentity,
    restart_class: RestartClass,
    canonical_arguments_hash: CanonicalArgumentsHash,
    origin_member_id: Option<OriginMemberId>,
    runner_specification_ref: Option<RunnerSpecificationRef>,
    credential_context_refs: Vec<ToolCredentialContextRef>,
}

impl ScheduledJobTemplate {
    /// A template with the optional fields empty.
    ///
    /// # Errors
    /// [`JobCompositionError::InvalidInput`] for a realm that is empty, not trimmed or holds
    /// a control character.
    pub fn new(
        realm_id: impl Into<String>,
        origin_session_id: SessionId,
        tool: ToolIdentity,
        runner: RunnerIdentity,
        restart_class: RestartClass,
        canonical_arguments_hash: CanonicalArgumentsHash,
    ) -> Result<Self, JobCompositionError> {
        let realm_id = realm_id.into();
        check_scope_component("scheduled job realm", &realm_id)
            .map_err(JobCompositionError::InvalidInput)?;
        Ok(ScheduledJobTemplate {
            realm_id,
            origin_session_id,
            tool,
            runner,
            restart_class,
            canonical_arguments_hash,
            origin_member_id: None,
            runner_specification_ref: None,
            credential_context_refs: Vec::new(),
        })
    }

    /// With the submitting member.
    #[must_use]
    pub fn with_origin_member_id(mut self, origin_member_id: OriginMemberId) -> Self {
        self.origin_member_id = Some(origin_member_id);
        self
    }

    /// With a runner specification reference.
    #[must_use]
    pub fn with_runner_specification_ref(mut self, reference: RunnerSpecificationRef) -> Self {
        self.runner_specification_ref = Some(reference);
        self
    }

    /// With credential references.
    #[must_use]
    pub fn with_credential_context_refs(mut self, refs: Vec<ToolCredentialContextRef>) -> Self {
        self.credential_context_refs = refs;
        self
    }

    /// The realm.
    #[must_use]
    pub fn realm_id(&self) -> &str {
        &self.realm_id
    }

    /// The job spec for one occurrence.
    ///
    /// # Errors
    /// `InvalidInput` if a derived id does not validate (it always does for a UUID).
    pub fn spec_for(
        &self,
        invocation: &HostRunnableInvocation,
    ) -> Result<JobSpec, DetachedJobError> {
        let key = format!(
            "schedule_occurrence:{}",
            invocation.occurrence_id.hyphenated()
        );
        let mut spec = JobSpec::new(
            self.realm_id.clone(),
            self.origin_session_id,
            ExecutionIntentId::new(key.clone())?,
            InteractionLineageId::new(key.clone())?,
            self.tool.clone(),
            self.runner.clone(),
            self.restart_class,
            self.canonical_arguments_hash.clone(),
            JobSubmissionKey::new(key)?,
        );
        spec.origin_member_id.clone_from(&self.origin_member_id);
        spec.runner_specification_ref
            .clone_from(&self.runner_specification_ref);
        spec.credential_context_refs
            .clone_from(&self.credential_context_refs);
        Ok(spec)
    }
}

/// A schedule target that durably submits (or re-finds) one job per occurrence and completes
/// the occurrence at once: the occurrence ends when the job is accepted, not when it ends.
///
/// Errors: a transient store fault is [`HostRunnableError::Retryable`] (the occurrence stays
/// deliverable; redelivery is harmless because submission is idempotent); everything else —
/// including `SubmissionConflict` for a template that changed between deliveries — is
/// [`HostRunnableError::Failed`], which fails the occurrence for good.
#[derive(Clone)]
pub struct ScheduledDurableJobRunnable {
    jobs: Arc<dyn JobAuthority>,
    template: ScheduledJobTemplate,
}

impl std::fmt::Debug for ScheduledDurableJobRunnable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduledDurableJobRunnable")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl ScheduledDurableJobRunnable {
    /// A target submitting through `jobs`.
    #[must_use]
    pub fn new(jobs: Arc<dyn JobAuthority>, template: ScheduledJobTemplate) -> Self {
        ScheduledDurableJobRunnable { jobs, template }
    }
}

#[async_trait]
impl HostRunnable for ScheduledDurableJobRunnable {
    async fn run(
        &self,
        invocation: HostRunnableInvocation,
    ) -> Result<HostRunnableOutcome, HostRunnableError> {
        let refuse = |error: DetachedJobError| {
            if error.is_transient() {
                HostRunnableError::Retryable {
                    detail: error.to_string(),
                }
            } else {
                HostRunnableError::Failed {
                    detail: error.to_string(),
                }
            }
        };
        let spec = self.template.spec_for(&invocation).map_err(refuse)?;
        self.jobs.submit(spec).await.map_err(refuse)?;
        Ok(HostRunnableOutcome::completed())
    }
}
