//! Reads, run on reader connections: runs, run pages and events.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};

use docket_core::model::{Event, EventPage, EventQuery, RunId, RunInfo, RunPage, RunQuery, Scope};
use docket_core::store::rules::queries::{event_page, run_page};
use docket_core::store::StoreError;

use crate::codec::{
    clamp_u64, decode_event, decode_summary, row_values, EVENT_COLUMNS, SUMMARY_COLUMNS,
};
use crate::error::SqlResult;
use crate::sql::{load_event, load_run, snapshot};

/// `inspect_run` (and, through `.run`, `fetch_run`).
pub(crate) fn inspect(
    conn: &Connection,
    scope: &Scope,
    run_id: &RunId,
) -> Result<RunInfo, StoreError> {
    let stored = load_run(conn, scope, run_id)?.ok_or(StoreError::NotFound)?;
    Ok(RunInfo {
        owner: stored.owner,
        wake_at: stored.ops.wake_at,
        claimed_at: stored.ops.claimed_at,
        claim_attempts: stored.ops.claim_attempts,
        claim_abandons: stored.ops.claim_abandons,
        poison: stored.ops.poison,
        admitted_at: stored.ops.admitted_at,
        run: stored.run,
    })
}

/// `list_runs` (query already validated): summary columns only, newest first.
pub(crate) fn list_runs(
    conn: &Connection,
    scope: &Scope,
    query: &RunQuery,
) -> Result<RunPage, StoreError> {
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM docket_runs WHERE 1 = 1");
    let mut args: Vec<Value> = Vec::new();
    if let Some(owner) = scope.as_owner() {
        sql.push_str(" AND scope_key = ?");
        args.push(Value::Text(owner.scope_key().to_owned()));
    }
    if let Some(graph_id) = &query.graph_id {
        sql.push_str(" AND graph_id = ?");
        args.push(Value::Text(graph_id.as_str().to_owned()));
    }
    if let Some(graph_hash) = &query.graph_hash {
        sql.push_str(" AND graph_hash = ?");
        args.push(Value::Text(graph_hash.as_str().to_owned()));
    }
    if let Some(statuses) = &query.statuses {
        let marks = vec!["?"; statuses.len()].join(", ");
        sql.push_str(&format!(" AND status IN ({marks})"));
        args.extend(statuses.iter().map(|s| Value::Text(s.as_str().to_owned())));
    }
    if let Some(cursor) = &query.before {
        sql.push_str(" AND (started_at < ? OR (started_at = ? AND run_id < ?))");
        args.push(Value::Integer(cursor.started_at.as_micros()));
        args.push(Value::Integer(cursor.started_at.as_micros()));
        args.push(Value::Text(cursor.run_id.as_str().to_owned()));
    }
    sql.push_str(" ORDER BY started_at DESC, run_id DESC LIMIT ?");
    args.push(Value::Integer(i64::from(query.limit) + 1));
    let mut stmt = conn.prepare(&sql).sql()?;
    let rows = stmt
        .query_map(params_from_iter(args), |row| row_values(row, 10))
        .sql()?;
    let mut runs = Vec::new();
    for values in rows {
        runs.push(decode_summary(&values.sql()?)?);
    }
    Ok(run_page(runs, query))
}

/// `fetch_event`.
pub(crate) fn fetch_event(
    conn: &mut Connection,
    scope: &Scope,
    run_id: &RunId,
    seq: u64,
) -> Result<Event, StoreError> {
    snapshot(conn, |tx| {
        if !crate::sql::visible(tx, scope, run_id)? {
            return Err(StoreError::NotFound);
        }
        load_event(tx, run_id, seq)?.ok_or(StoreError::NotFound)
    })
}

/// `fetch_latest_event`: the newest retained event; a corrupt newest row is an error.
pub(crate) fn fetch_latest_event(
    conn: &mut Connection,
    scope: &Scope,
    run_id: &RunId,
) -> Result<Option<Event>, StoreError> {
    snapshot(conn, |tx| {
        if !crate::sql::visible(tx, scope, run_id)? {
            return Err(StoreError::NotFound);
        }
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM docket_events WHERE run_id = ?1 \
                 ORDER BY seq DESC LIMIT 1"
            ))
            .sql()?;
        let mut rows = stmt
            .query_map([run_id.as_str()], |row| row_values(row, 10))
            .sql()?;
        rows.next()
            .transpose()
            .sql()?
            .map(|values| decode_event(&values))
            .transpose()
    })
}

/// `list_events` (query already validated): page rows, retained bounds and the run's
/// `event_seq` from one read transaction.
pub(crate) fn list_events(
    conn: &mut Connection,
    scope: &Scope,
    run_id: &RunId,
    query: &EventQuery,
) -> Result<EventPage, StoreError> {
    snapshot(conn, |tx| {
        if !crate::sql::visible(tx, scope, run_id)? {
            return Err(StoreError::NotFound);
        }
        let latest_seq: i64 = tx
            .prepare_cached("SELECT event_seq FROM docket_runs WHERE run_id = ?1")
            .sql()?
            .query_row([run_id.as_str()], |row| row.get(0))
            .sql()?;
        let latest_seq = u64::try_from(latest_seq).map_err(|_| {
            StoreError::corrupt(format!("run row {run_id}"), "column event_seq is negative")
        })?;
        let (oldest, latest): (Option<i64>, Option<i64>) = tx
            .prepare_cached("SELECT MIN(seq), MAX(seq) FROM docket_events WHERE run_id = ?1")
            .sql()?
            .query_row([run_id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
            .sql()?;
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM docket_events WHERE run_id = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
            ))
            .sql()?;
        let rows = stmt
            .query_map(
                params![
                    run_id.as_str(),
                    clamp_u64(query.after_seq),
                    i64::from(query.limit)
                ],
                |row| row_values(row, 10),
            )
            .sql()?;
        let mut events = Vec::new();
        for values in rows {
            events.push(decode_event(&values.sql()?)?);
        }
        let bound = |seq: Option<i64>| seq.and_then(|s| u64::try_from(s).ok());
        Ok(event_page(
            events,
            query,
            bound(oldest),
            bound(latest),
            latest_seq,
        ))
    })
}
