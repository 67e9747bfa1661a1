//! [`BackendOps`]: the operation registry of a Docket backend, as an owned
//! `Arc<dyn OpsLifecycleRegistry>`.

use std::sync::Arc;

use async_trait::async_trait;

use docket_core::model::Timestamp;
use docket_core::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery,
    OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};
use docket_core::store::{Backend, Wakeups};

/// Forwards every registry call to the registry of the backend it holds (the backend lends
/// its registry by reference only; this owns the backend instead, so it can be shared).
#[derive(Clone, Debug)]
pub struct BackendOps {
    backend: Arc<dyn Backend>,
}

impl BackendOps {
    /// The registry of `backend`.
    ///
    /// # Errors
    /// `Unavailable` (permanent) when the backend offers no registry.
    pub fn new(backend: Arc<dyn Backend>) -> Result<Self, OpsError> {
        if backend.ops_registry().is_none() {
            return Err(OpsError::no_registry());
        }
        Ok(BackendOps { backend })
    }

    fn registry(&self) -> Result<&dyn OpsLifecycleRegistry, OpsError> {
        self.backend
            .ops_registry()
            .ok_or_else(OpsError::no_registry)
    }
}

#[async_trait]
impl OpsLifecycleRegistry for BackendOps {
    async fn register_operation(
        &self,
        owner: &SessionId,
        spec: &OperationSpec,
        max_concurrent: Option<u32>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.registry()?
            .register_operation(owner, spec, max_concurrent, now)
            .await
    }

    async fn transition_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        self.registry()?
            .transition_operation(owner, id, transition, now)
            .await
    }

    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        self.registry()?.terminate_owner(owner, reason, now).await
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        self.registry()?.retire_owner(owner, reason, now).await
    }

    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        self.registry()?.operation_snapshot(owner, id).await
    }

    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        self.registry()?.list_operations(owner, query).await
    }

    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        self.registry()?.collect_completed(owner).await
    }

    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        self.registry()?.is_owner_retired(owner).await
    }

    fn operation_wakeups(&self) -> Option<Wakeups> {
        self.backend.ops_registry()?.operation_wakeups()
    }
}
