//! The registry's writes: each is one call of a schema function (one round trip, one
//! transaction), bound from [`rules::TABLE`]; a refused write is named by the same rules from
//! what the function found.

use sqlx::postgres::PgRow;

use docket_core::model::Timestamp;
use docket_core::ops::rules::{self, RegistrationFacts};
use docket_core::ops::{
    CompletedOperation, CompletionSeq, OperationAction, OperationId, OperationLifecycleSnapshot,
    OperationStatus, OperationTransition, OpsError, SessionId,
};

use super::rows::{column, completed, decode, unencodable};
use crate::error;
use crate::store::PostgresStore;

/// The statuses of a from-set as the `text[]` the functions compare with.
fn from_set(statuses: &[OperationStatus]) -> Vec<String> {
    statuses.iter().map(|s| s.as_str().to_owned()).collect()
}

impl PostgresStore {
    /// Runs a write statement and returns its rows (a lost connection after sending is
    /// `Ambiguous`).
    async fn ops_write_rows(
        &self,
        statement: crate::statement::Statement<'_>,
    ) -> Result<Vec<PgRow>, OpsError> {
        let mut conn = self.conn().await?;
        let rows = statement.fetch_all(&mut conn).await.map_err(error::sent)?;
        conn.reuse();
        Ok(rows)
    }

    /// Registers `record` (a fresh Provisioning record) under `max_concurrent`.
    pub(crate) async fn ops_register(
        &self,
        record: &OperationLifecycleSnapshot,
        max_concurrent: Option<u32>,
    ) -> Result<(), OpsError> {
        let source = record
            .source
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(unencodable)?;
        let statement = self
            .q(&self.inner.ops_sql.register)
            .bind(record.owner.to_string())
            .bind(record.id.to_string())
            .bind(record.kind.name().into_owned())
            .bind(record.display_name.clone())
            .bind(record.source_label.clone())
            .bind(source)
            .bind(record.status.as_str())
            .bind(record.created_at.as_micros())
            .bind(max_concurrent.map(i64::from));
        let rows = self.ops_write_rows(statement).await?;
        let row = one_row(&rows, "docket_ops_register")?;
        if column::<bool>(row, "inserted")? {
            return Ok(());
        }
        let active: i64 = column(row, "active")?;
        let facts = RegistrationFacts {
            owner_retired: column(row, "owner_retired")?,
            id_taken: column(row, "id_taken")?,
            active: u64::try_from(active).unwrap_or(0),
        };
        rules::check_registration(record.owner, record.id, facts, max_concurrent)?;
        Err(OpsError::corrupt(
            format!("operation row {}/{}", record.owner, record.id),
            "the registration was refused although the rules admit it",
        ))
    }

    /// One transition (validated) of one operation.
    pub(crate) async fn ops_transition(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        let rule = rules::rule(transition.action);
        let outcome = transition
            .outcome
            .as_ref()
            .filter(|_| rule.mints_completion_seq)
            .map(serde_json::to_string)
            .transpose()
            .map_err(unencodable)?;
        let statement = self
            .q(&self.inner.ops_sql.transition)
            .bind(owner.to_string())
            .bind(id.to_string())
            .bind(from_set(rule.from))
            .bind(rule.to.map(OperationStatus::as_str))
            .bind(i64::from(rule.counts_progress))
            .bind(rule.stamps_started_at)
            .bind(rule.mints_completion_seq)
            .bind(outcome)
            .bind(now.as_micros())
            .bind(i64::from(self.inner.ops_retention.max_terminal()))
            .bind(self.inner.ops_wake.as_str());
        let rows = self.ops_write_rows(statement).await?;
        let row = one_row(&rows, "docket_ops_transition")?;
        if column::<bool>(row, "applied")? {
            return decode(owner, row);
        }
        if column::<bool>(row, "owner_retired")? {
            return Err(OpsError::OwnerRetired { owner: *owner });
        }
        let Some(status) = column::<Option<String>>(row, "current_status")? else {
            return Err(OpsError::NotFound { id: *id });
        };
        let what = || format!("operation row {owner}/{id}");
        let status = OperationStatus::parse(&status)
            .ok_or_else(|| OpsError::corrupt(what(), format!("unknown status {status:?}")))?;
        match rules::check_from(*id, transition.action, status) {
            Err(refused) => Err(refused),
            // The status read in the same transaction allows the action, yet the update on
            // the from-set matched nothing: the table and the statement disagree.
            Ok(_) => Err(OpsError::corrupt(
                what(),
                "a legal transition matched no row",
            )),
        }
    }

    /// `terminate_owner` (`retire: false`) or `retire_owner` (`retire: true`).
    pub(crate) async fn ops_terminate(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
        retire: bool,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        let termination = rules::termination(reason);
        let rule = rules::rule(OperationAction::Terminate);
        let (Some(target), Some(outcome)) = (rule.to, termination.outcome) else {
            return Err(OpsError::invalid_argument(
                "the termination rule records no outcome",
            ));
        };
        let statement = self
            .q(&self.inner.ops_sql.terminate)
            .bind(owner.to_string())
            .bind(from_set(rule.from))
            .bind(target.as_str())
            .bind(serde_json::to_string(&outcome).map_err(unencodable)?)
            .bind(now.as_micros())
            .bind(i64::from(self.inner.ops_retention.max_terminal()))
            .bind(retire)
            .bind(self.inner.ops_wake.as_str());
        let rows = self.ops_write_rows(statement).await?;
        let mut ended = Vec::with_capacity(rows.len());
        for row in &rows {
            if column::<bool>(row, "owner_retired")? {
                return Err(OpsError::OwnerRetired { owner: *owner });
            }
            let op_id: String = column(row, "r_op_id")?;
            let id: OperationId = op_id.parse().map_err(|e: OpsError| {
                OpsError::corrupt(format!("operation row {owner}/{op_id}"), e)
            })?;
            let seq: i64 = column(row, "r_completion_seq")?;
            let seq = u64::try_from(seq).map_err(|_| {
                OpsError::corrupt(
                    format!("operation row {owner}/{op_id}"),
                    format!("completion_seq {seq} is negative"),
                )
            })?;
            ended.push(CompletedOperation {
                id,
                completion_seq: CompletionSeq(seq),
                outcome: outcome.clone(),
            });
        }
        Ok(ended)
    }

    /// `collect_completed`.
    pub(crate) async fn ops_collect(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        let statement = self.q(&self.inner.ops_sql.collect).bind(owner.to_string());
        let rows = self.ops_write_rows(statement).await?;
        let mut drained = Vec::with_capacity(rows.len());
        for row in &rows {
            if column::<bool>(row, "owner_retired")? {
                return Err(OpsError::OwnerRetired { owner: *owner });
            }
            drained.push(completed(decode(owner, row)?)?);
        }
        drained.sort_by_key(|d| d.completion_seq);
        Ok(drained)
    }
}

/// The single row a write function returns.
fn one_row<'r>(rows: &'r [PgRow], function: &str) -> Result<&'r PgRow, OpsError> {
    rows.first()
        .ok_or_else(|| OpsError::corrupt(function.to_owned(), "the write function returned no row"))
}
