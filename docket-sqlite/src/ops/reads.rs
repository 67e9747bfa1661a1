//! The registry's reads, each one statement on a reader connection.

use rusqlite::{params, Connection, OptionalExtension};

use docket_core::ops::rules::operation_page;
use docket_core::ops::{
    OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery, OpsError, SessionId,
};

use super::rows::{collect_raw, decode, raw, COLUMNS};
use crate::error::SqlResult;

/// The record of `(owner, id)`, if any.
pub(crate) fn snapshot(
    conn: &Connection,
    owner: &SessionId,
    id: &OperationId,
) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM docket_ops_operations WHERE owner_id = ?1 AND op_id = ?2"
        ))
        .sql()?
        .query_row(params![owner.to_string(), id.to_string()], raw)
        .optional()
        .sql()?;
    row.map(|row| decode(owner, row)).transpose()
}

/// One page of the owner's records, ascending by `(display_name, op_id)` in byte order (the
/// `BINARY` collation), after the query's cursor.
pub(crate) fn list(
    conn: &Connection,
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
    let raws = {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM docket_ops_operations \
                 WHERE owner_id = ?1 AND (?2 IS NULL OR (display_name, op_id) > (?2, ?3)) \
                 ORDER BY display_name, op_id LIMIT ?4"
            ))
            .sql()?;
        let rows = stmt
            .query_map(
                params![
                    owner.to_string(),
                    after_name,
                    after_id,
                    i64::from(query.limit) + 1
                ],
                raw,
            )
            .sql()?;
        collect_raw(rows)?
    };
    let records = raws
        .into_iter()
        .map(|row| decode(owner, row))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(operation_page(records, query))
}

/// Whether `owner` is retired.
pub(crate) fn is_retired(conn: &Connection, owner: &SessionId) -> Result<bool, OpsError> {
    let retired: Option<i64> = conn
        .prepare_cached("SELECT retired FROM docket_ops_owners WHERE owner_id = ?1")
        .sql()?
        .query_row([owner.to_string()], |row| row.get(0))
        .optional()
        .sql()?;
    Ok(retired == Some(1))
}
