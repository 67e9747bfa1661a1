//! The [`DeliveryLedger`] port: the durable cursor of terminal deliveries, and the links from
//! jobs to the work items that receive their evidence.

use async_trait::async_trait;

use super::error::DetachedJobError;
use super::ids::{JobId, JobReference, WorkItemRef};

/// Per realm, the set of jobs whose terminal delivery has not yet been applied, and the work
/// items linked to each job.
///
/// A job enters the pending set *before* its run can exist (the submission records it
/// first), and leaves it only after its terminal result was projected and delivered. So a
/// process killed anywhere between a run's terminal commit and the end of its delivery finds
/// the job pending when it restarts.
///
/// # Cancel safety
/// Every write is idempotent; a dropped write can be repeated.
#[async_trait]
pub trait DeliveryLedger: Send + Sync + std::fmt::Debug + 'static {
    /// Marks `job` pending unless it is pending or delivered already.
    ///
    /// # Errors
    /// `Store`.
    async fn record_pending(&self, job: &JobReference) -> Result<(), DetachedJobError>;

    /// Up to `limit` pending jobs of `realm`, ascending by id.
    ///
    /// # Errors
    /// `Store`.
    async fn pending(&self, realm: &str, limit: u32) -> Result<Vec<JobId>, DetachedJobError>;

    /// Marks `job` delivered (idempotent).
    ///
    /// # Errors
    /// `Store`.
    async fn mark_delivered(&self, job: &JobReference) -> Result<(), DetachedJobError>;

    /// Whether `job` was delivered.
    ///
    /// # Errors
    /// `Store`.
    async fn is_delivered(&self, job: &JobReference) -> Result<bool, DetachedJobError>;

    /// Links `item` to `job` (idempotent).
    ///
    /// # Errors
    /// `Store`.
    async fn link(&self, job: &JobReference, item: &WorkItemRef) -> Result<(), DetachedJobError>;

    /// The items linked to `job`, in a stable order.
    ///
    /// # Errors
    /// `Store`.
    async fn links(&self, job: &JobReference) -> Result<Vec<WorkItemRef>, DetachedJobError>;
}
