//! The operation registry of [`SqliteStore`]: the same file, the same writer thread and the
//! same migration history as the runs (schema version 2 adds its two tables).
//!
//! Every call checks its arguments with [`docket_core::ops::rules`] on the caller's task,
//! then sends one closure to a connection thread. Each write is one `BEGIN IMMEDIATE`
//! transaction on the writer: the owner's retired flag, the legal from-set (bound from
//! [`rules::TABLE`]), the completion sequence, the admission limit and retention are all
//! decided inside it (see `ops/writes.rs`). Reads are one statement on a reader.
//!
//! After a write that ended an operation commits, a hint goes to
//! [`OpsLifecycleRegistry::operation_wakeups`] subscribers of this process; other processes
//! see the ending when their completion watch polls.
//!
//! # Cancel safety
//!
//! Reads are cancel safe. A write future dropped after its job was queued does not stop the
//! job: it may still commit, which the caller finds out by reading the operation.

mod reads;
mod rows;
mod writes;

use async_trait::async_trait;
use rusqlite::{Connection, TransactionBehavior};

use docket_core::model::Timestamp;
use docket_core::ops::rules;
use docket_core::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery,
    OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};
use docket_core::store::Wakeups;

use crate::error::{commit_error, SqlResult};
use crate::store::SqliteStore;
use writes::Written;

/// Runs `f` inside `BEGIN IMMEDIATE … COMMIT`; a refusal or any error rolls it back.
fn immediate<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, OpsError>,
) -> Result<T, OpsError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .sql()?;
    let out = f(&tx)?;
    tx.commit().map_err(commit_error)?;
    Ok(out)
}

impl SqliteStore {
    /// Runs `f` in one write transaction on the writer thread.
    async fn ops_write<T, F>(&self, f: F) -> Result<T, OpsError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, OpsError> + Send + 'static,
    {
        self.inner
            .workers
            .write(move |conn| Ok(immediate(conn, f)))
            .await?
    }

    /// A write whose commit may have ended operations: hints after the commit.
    async fn ops_ending_write<T, F>(&self, f: F) -> Result<T, OpsError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<Written<T>, OpsError> + Send + 'static,
    {
        let written = self.ops_write(f).await?;
        if written.ended {
            self.inner.ops_wake.send();
        }
        Ok(written.value)
    }

    /// Runs `f` on a reader connection.
    async fn ops_read<T, F>(&self, f: F) -> Result<T, OpsError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, OpsError> + Send + 'static,
    {
        self.inner.workers.read(move |conn| Ok(f(conn))).await?
    }

    fn retention(&self) -> rules::Retention {
        self.inner.options.ops_retention
    }
}

#[async_trait]
impl OpsLifecycleRegistry for SqliteStore {
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
        let stored = record.clone();
        self.ops_write(move |tx| writes::register(tx, &stored, max_concurrent))
            .await?;
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
        let (owner, id, transition, retention) =
            (*owner, *id, transition.clone(), self.retention());
        self.ops_ending_write(move |tx| {
            writes::transition(tx, &owner, &id, &transition, now, retention)
        })
        .await
    }

    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        let (owner, reason, retention) = (*owner, reason.to_owned(), self.retention());
        self.ops_ending_write(move |tx| {
            writes::terminate_owner(tx, &owner, &reason, now, retention)
        })
        .await
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        let (owner, reason, retention) = (*owner, reason.to_owned(), self.retention());
        self.ops_ending_write(move |tx| writes::retire_owner(tx, &owner, &reason, now, retention))
            .await
    }

    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        rules::validate_target(owner, id)?;
        let (owner, id) = (*owner, *id);
        self.ops_read(move |conn| reads::snapshot(conn, &owner, &id))
            .await
    }

    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        rules::validate_query(owner, query)?;
        let (owner, query) = (*owner, query.clone());
        self.ops_read(move |conn| reads::list(conn, &owner, &query))
            .await
    }

    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner(owner)?;
        let owner = *owner;
        self.ops_write(move |tx| writes::collect_completed(tx, &owner))
            .await
    }

    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        rules::validate_owner(owner)?;
        let owner = *owner;
        self.ops_read(move |conn| reads::is_retired(conn, &owner))
            .await
    }

    fn operation_wakeups(&self) -> Option<Wakeups> {
        Some(self.inner.ops_wake.subscribe())
    }
}
