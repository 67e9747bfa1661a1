//! [`Layered`] as an operation registry: every required call goes to the layer's method of
//! the same name; the named transitions and the completion watch are the trait's own, built
//! on those calls, so overriding `transition_operation` intercepts all of them.

use async_trait::async_trait;

use crate::model::Timestamp;
use crate::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery,
    OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};
use crate::store::traits::Wakeups;

use super::{Layered, StoreLayer};

#[async_trait]
impl<L: StoreLayer> OpsLifecycleRegistry for Layered<L> {
    async fn register_operation(
        &self,
        owner: &SessionId,
        spec: &OperationSpec,
        max_concurrent: Option<u32>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        StoreLayer::register_operation(&self.0, owner, spec, max_concurrent, now).await
    }

    async fn transition_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        StoreLayer::transition_operation(&self.0, owner, id, transition, now).await
    }

    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        StoreLayer::terminate_owner(&self.0, owner, reason, now).await
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        StoreLayer::retire_owner(&self.0, owner, reason, now).await
    }

    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        StoreLayer::operation_snapshot(&self.0, owner, id).await
    }

    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        StoreLayer::list_operations(&self.0, owner, query).await
    }

    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        StoreLayer::collect_completed(&self.0, owner).await
    }

    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        StoreLayer::is_owner_retired(&self.0, owner).await
    }

    fn operation_wakeups(&self) -> Option<Wakeups> {
        StoreLayer::operation_wakeups(&self.0)
    }
}
