//! The operation registry of [`RedisStore`]: the same connection, the same namespace (keys
//! `T ops:<owner>…`, see the crate docs) and the same URL as the runs.
//!
//! Every call checks its arguments with [`docket_core::ops::rules`] first (a bad argument
//! sends nothing). Each write is one script: the owner's retired flag, insert-if-absent, the
//! admission limit (the owner's live set), the from-set bound from the state-machine table,
//! the owner's completion sequence (`HINCRBY` on the owner hash) and retention eviction are
//! decided in the same atomic step. An ending publishes a hint on `docket:<ns>:ops` from
//! inside the script; the completion watch also polls, so a lost hint costs latency only.
//!
//! # Cancel safety
//!
//! Reads are cancel safe. A write future dropped after its script was sent may or may not
//! have been applied (as a lost reply, which is `Ambiguous`): re-read the operation.

mod reads;
mod record;
mod writes;

use async_trait::async_trait;

use docket_core::model::Timestamp;
use docket_core::ops::rules;
use docket_core::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery,
    OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};
use docket_core::store::Wakeups;

use crate::store::RedisStore;

#[async_trait]
impl OpsLifecycleRegistry for RedisStore {
    async fn register_operation(
        &self,
        owner: &SessionId,
        spec: &OperationSpec,
        max_concurrent: Option<u32>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        rules::validate_registration(owner, spec)?;
        rules::validate_limit(max_concurrent)?;
        let record = rules::registered(*owner, spec, now);
        self.ops_register(&record, max_concurrent).await?;
        Ok(record)
    }

    async fn transition_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        rules::validate_transition(owner, id, transition)?;
        self.ops_transition(owner, id, transition, now).await
    }

    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        self.ops_terminate(owner, reason, false, now).await
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        self.ops_terminate(owner, reason, true, now).await
    }

    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        rules::validate_target(owner, id)?;
        self.ops_snapshot(owner, id).await
    }

    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        rules::validate_query(owner, query)?;
        self.ops_list(owner, query).await
    }

    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner(owner)?;
        self.ops_collect(owner).await
    }

    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        rules::validate_owner(owner)?;
        self.ops_is_retired(owner).await
    }

    fn operation_wakeups(&self) -> Option<Wakeups> {
        Some(crate::wakeups::subscribe(
            self.client().clone(),
            self.keys().ops_channel(),
            self.runtime(),
        ))
    }
}
