//! The [`JobAuthority`] port: submit and read detached jobs.

use async_trait::async_trait;

use docket_core::ops::SessionId;

use super::error::DetachedJobError;
use super::ids::JobReference;
use super::job::{JobReceipt, JobSpec, JobView};

/// The authority over detached jobs: it alone decides whether a job exists and how it ended.
///
/// # Contract
/// * **Idempotent submission** on `(realm, submission_key)`: an equivalent spec (equal in
///   every field but the key) returns the same job with `deduplicated: true` and changes
///   nothing; a different spec is [`DetachedJobError::SubmissionConflict`] and creates
///   nothing. Keys never collide across realms.
/// * **Realm scoping**: a job is only visible through a reference naming its realm; any other
///   realm sees [`DetachedJobError::NotFound`].
/// * **Concealment**: [`JobAuthority::get_authorized_for_session`] answers `NotFound` for a
///   session that is not the job's origin, exactly as for an unknown job.
///
/// # Cancel safety
/// Reads are cancel safe. A dropped `submit` may or may not have created the job; submitting
/// the same spec again finds out without creating a second one.
#[async_trait]
pub trait JobAuthority: Send + Sync + std::fmt::Debug + 'static {
    /// Submits `spec` (see the trait docs for idempotency).
    ///
    /// # Errors
    /// `InvalidInput`, `SubmissionConflict`, `Store`.
    async fn submit(&self, spec: JobSpec) -> Result<JobReceipt, DetachedJobError>;

    /// The job named by `reference`, read in the reference's realm.
    ///
    /// # Errors
    /// `NotFound` (also for another realm's job), `Store`.
    async fn get_for_reference(
        &self,
        reference: &JobReference,
    ) -> Result<JobView, DetachedJobError>;

    /// The job named by `reference`, only when `session` is its origin session.
    ///
    /// # Errors
    /// `NotFound` (unknown job, other realm, or another session), `Store`.
    async fn get_authorized_for_session(
        &self,
        reference: &JobReference,
        session: &SessionId,
    ) -> Result<JobView, DetachedJobError> {
        let view = self.get_for_reference(reference).await?;
        if &view.origin_session_id != session {
            return Err(DetachedJobError::NotFound(reference.job_id().clone()));
        }
        Ok(view)
    }
}
