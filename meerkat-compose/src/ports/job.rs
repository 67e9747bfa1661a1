//! The values of the job port: what is submitted ([`JobSpec`]), how a job ends
//! ([`JobTerminalResult`]) and what a read returns ([`JobView`], [`JobReceipt`]).

use serde::{Deserialize, Serialize};

use docket_core::ops::SessionId;

use super::ids::{
    CanonicalArgumentsHash, ExecutionIntentId, InteractionLineageId, JobFailureCode, JobId,
    JobResultRef, JobSubmissionKey, OriginMemberId, RunnerIdentity, RunnerSpecificationRef,
    ToolIdentity,
};

/// What a job may do when the worker running it is lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RestartClass {
    /// Re-attach to a live runner.
    Adoptable,
    /// Resume from the last committed checkpoint.
    CheckpointResumable,
    /// Run again from the start (the runner's effects are idempotent).
    Replayable,
    /// Loss is final: the job ends as worker-lost and is never replayed.
    #[default]
    NonResumable,
}

/// A reference to the credentials a job may use (never a secret itself).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolCredentialContextRef {
    /// The owning profile's credentials, with the scopes needed.
    OwningProfile {
        /// Scopes the job needs.
        required_scopes: Vec<String>,
    },
    /// A named auth binding, with the scopes needed.
    AuthBinding {
        /// The binding.
        auth_binding: String,
        /// Scopes the job needs.
        required_scopes: Vec<String>,
    },
}

/// A job submission. Two submissions with the same `(realm_id, submission_key)` are one job
/// when every other field is equal, and a [`crate::DetachedJobError::SubmissionConflict`]
/// otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The realm (owner scope) of the job.
    pub realm_id: String,
    /// The session that submitted it; the only one that may await it.
    pub origin_session_id: SessionId,
    /// The submitting member of that session, if any.
    pub origin_member_id: Option<OriginMemberId>,
    /// The execution intent.
    pub execution_intent_id: ExecutionIntentId,
    /// The interaction lineage.
    pub interaction_lineage_id: InteractionLineageId,
    /// The tool.
    pub tool: ToolIdentity,
    /// The runner.
    pub runner: RunnerIdentity,
    /// The runner's specification, if any.
    pub runner_specification_ref: Option<RunnerSpecificationRef>,
    /// What a lost worker means for the job.
    pub restart_class: RestartClass,
    /// A hash of the canonical arguments.
    pub canonical_arguments_hash: CanonicalArgumentsHash,
    /// Credential references (no secrets).
    pub credential_context_refs: Vec<ToolCredentialContextRef>,
    /// The idempotency key within the realm.
    pub submission_key: JobSubmissionKey,
}

impl JobSpec {
    /// A spec with the optional fields empty.
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    pub fn new(
        realm_id: String,
        origin_session_id: SessionId,
        execution_intent_id: ExecutionIntentId,
        interaction_lineage_id: InteractionLineageId,
        tool: ToolIdentity,
        runner: RunnerIdentity,
        restart_class: RestartClass,
        canonical_arguments_hash: CanonicalArgumentsHash,
        submission_key: JobSubmissionKey,
    ) -> Self {
        JobSpec {
            realm_id,
            origin_session_id,
            origin_member_id: None,
            execution_intent_id,
            interaction_lineage_id,
            tool,
            runner,
            runner_specification_ref: None,
            restart_class,
            canonical_arguments_hash,
            credential_context_refs: Vec::new(),
            submission_key,
        }
    }
}

/// How a job ended. Its serde form is the canonical encoding that evidence summaries and
/// wait outcomes carry and compare byte for byte (externally tagged, fields in declaration
/// order): `{"Succeeded":{"result_ref":null}}`, `{"Failed":{"code":"c","detail_ref":null}}`,
/// `"Cancelled"`, `"WorkerLost"`, `{"NeedsAttention":{"reason":"r"}}`. Never reorder or
/// rename the fields: a changed encoding would turn a replayed delivery into a conflict.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobTerminalResult {
    /// The job succeeded.
    Succeeded {
        /// Where its result is, if anywhere.
        result_ref: Option<JobResultRef>,
    },
    /// The job failed.
    Failed {
        /// The typed failure code.
        code: JobFailureCode,
        /// Where the failure detail is, if anywhere.
        detail_ref: Option<JobResultRef>,
    },
    /// The job was cancelled.
    Cancelled,
    /// The worker was lost and the job may not be replayed.
    WorkerLost,
    /// The job stopped and needs a human.
    NeedsAttention {
        /// Why.
        reason: JobFailureCode,
    },
}

impl JobTerminalResult {
    /// The canonical JSON text (see the type docs).
    ///
    /// # Errors
    /// The serializer's message; it cannot fail for these plain values, but the error is
    /// surfaced rather than assumed away.
    pub fn canonical_json(&self) -> Result<String, String> {
        serde_json::to_string(self).map_err(|e| e.to_string())
    }
}

/// The read model of one job that composition needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobView {
    /// The job.
    pub job_id: JobId,
    /// Its realm.
    pub realm_id: String,
    /// The session that submitted it.
    pub origin_session_id: SessionId,
    /// How it ended, once it has.
    pub terminal_result: Option<JobTerminalResult>,
    /// How many attempts were claimed (0 while queued).
    pub attempt_count: u64,
    /// The current fence (advances only when an attempt is claimed).
    pub fence: u64,
}

/// The answer to a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobReceipt {
    /// The job (the same for every equivalent submission).
    pub job_id: JobId,
    /// Whether an equivalent job already existed.
    pub deduplicated: bool,
    /// The job's restart class.
    pub restart_class: RestartClass,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_results_have_the_canonical_json_encoding() {
        let code = |c: &str| JobFailureCode::new(c).expect("valid code");
        let cases = [
            (
                JobTerminalResult::Succeeded { result_ref: None },
                r#"{"Succeeded":{"result_ref":null}}"#,
            ),
            (
                JobTerminalResult::Failed {
                    code: code("scan_failed"),
                    detail_ref: None,
                },
                r#"{"Failed":{"code":"scan_failed","detail_ref":null}}"#,
            ),
            (JobTerminalResult::Cancelled, r#""Cancelled""#),
            (JobTerminalResult::WorkerLost, r#""WorkerLost""#),
            (
                JobTerminalResult::NeedsAttention {
                    reason: code("credentials_blocked"),
                },
                r#"{"NeedsAttention":{"reason":"credentials_blocked"}}"#,
            ),
        ];
        for (result, json) in cases {
            assert_eq!(result.canonical_json().as_deref(), Ok(json));
            let back: JobTerminalResult = serde_json::from_str(json).expect("decodes");
            assert_eq!(back, result);
        }
    }
}
