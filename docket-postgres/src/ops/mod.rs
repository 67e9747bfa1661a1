//! The operation registry of [`PostgresStore`]: the same pool, the same schema and migration
//! history as the runs (schema version 3 adds its two tables and its write functions).
//!
//! Every call checks its arguments with [`docket_core::ops::rules`] on the caller's task, then
//! sends one statement:
//!
//! * **Writes** are one call of a PL/pgSQL function of the schema (`sql/v3.sql`), so one round
//!   trip and one transaction each, sent like every other statement of the store (prepared on
//!   a direct connection, inline through `docket_prepare` behind a transaction pooler). The
//!   function locks the owner's row first, then applies one conditional update on the action's
//!   from-set, which the caller binds from [`rules::TABLE`] together with the target, the
//!   progress increment, the start stamp and whether a completion sequence is minted. The
//!   sequence is taken from the locked owner row in the same transaction (monotonic and
//!   gap-free per owner), the retired flag is read under the same lock, registration counts
//!   live operations under it (no over-admission), and an ending evicts the owner's oldest
//!   terminal records beyond the retention limit (URL `ops_retention=`, default 256).
//! * **Refusals** write nothing: the function reports what it found (retired owner, absent
//!   record, the current status read after the failed update, admission facts) and the caller
//!   names the error with the same rules ([`rules::check_from`],
//!   [`rules::check_registration`]), so the loser of a race gets the winner's status.
//! * **Reads** are plain selects.
//!
//! An ending write sends `pg_notify('docket_wake', '<schema>/ops')` in its transaction, so the
//! hint is delivered on commit; [`OpsLifecycleRegistry::operation_wakeups`] subscribes through
//! the store's LISTEN connection (to `listen_url` behind a transaction pooler), and none in
//! poll-only mode, where completion watches poll.
//!
//! # Cancel safety
//!
//! Reads are cancel safe. A write future dropped after its statement was sent may or may not
//! have committed (one statement: all or nothing); read the operation to find out.

mod reads;
mod rows;
pub(crate) mod sql;
mod writes;

use async_trait::async_trait;

use docket_core::model::Timestamp;
use docket_core::ops::rules;
use docket_core::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery,
    OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};
use docket_core::store::Wakeups;

use crate::store::PostgresStore;
use crate::wakeups::Topic;

#[async_trait]
impl OpsLifecycleRegistry for PostgresStore {
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
        self.ops_terminate(owner, reason, now, false).await
    }

    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        rules::validate_owner_reason(owner, reason)?;
        self.ops_terminate(owner, reason, now, true).await
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
        self.inner.wake.subscribe_to(Topic::Ops)
    }
}

#[cfg(test)]
mod tests {
    use docket_core::ops::OperationStatus;

    /// The status CHECKs of the registry's table spell exactly the statuses of the state
    /// machine: all of them in the status column, the live ones where terminality is decided.
    #[test]
    fn the_registry_checks_name_the_statuses_of_the_rules() {
        let quoted = |statuses: &mut dyn Iterator<Item = OperationStatus>| {
            statuses
                .map(|s| format!("'{}'", s.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let all = quoted(&mut OperationStatus::ALL.into_iter());
        let live = quoted(
            &mut OperationStatus::ALL
                .into_iter()
                .filter(|s| !s.is_terminal()),
        );
        let flat = include_str!("../sql/v3.sql")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(flat.contains(&format!("status IN ({all})")), "{flat}");
        assert!(flat.contains(&format!("(status IN ({live})) = (outcome IS NULL)")));
    }
}
