//! The registry's reads, each one statement.

use sqlx::Row;

use docket_core::ops::rules::operation_page;
use docket_core::ops::{
    OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery, OpsError, SessionId,
};

use super::rows::decode;
use crate::error;
use crate::store::PostgresStore;

impl PostgresStore {
    /// The record of `(owner, id)`, if any.
    pub(crate) async fn ops_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        let mut conn = self.conn().await?;
        let row = self
            .q(&self.inner.ops_sql.snapshot)
            .bind(owner.to_string())
            .bind(id.to_string())
            .fetch_optional(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        row.map(|row| decode(owner, &row)).transpose()
    }

    /// One page of the owner's records, ascending by `(display_name, op_id)` in byte order
    /// (the column's `COLLATE "C"`; UUIDs compare as bytes), after the query's cursor.
    pub(crate) async fn ops_list(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        let (after_name, after_id) = match &query.after {
            Some(cursor) => (
                Some(cursor.display_name.clone()),
                Some(cursor.id.to_string()),
            ),
            None => (None, None),
        };
        let mut conn = self.conn().await?;
        let rows = self
            .q(&self.inner.ops_sql.list)
            .bind(owner.to_string())
            .bind(after_name)
            .bind(after_id)
            .bind(i64::from(query.limit) + 1)
            .fetch_all(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        let records = rows
            .iter()
            .map(|row| decode(owner, row))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(operation_page(records, query))
    }

    /// Whether `owner` is retired (an owner without a row is not).
    pub(crate) async fn ops_is_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        let mut conn = self.conn().await?;
        let row = self
            .q(&self.inner.ops_sql.retired)
            .bind(owner.to_string())
            .fetch_optional(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        match row {
            Some(row) => Ok(row.try_get::<bool, _>(0).map_err(error::safe)?),
            None => Ok(false),
        }
    }
}
