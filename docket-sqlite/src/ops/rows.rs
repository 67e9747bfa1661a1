//! Operation rows in and out: the column list every statement selects, the encoding of a new
//! record, and the strict decoding of a stored one (anything that does not decode, or breaks
//! the record invariants, is `Corrupt`).

use rusqlite::Row;

use docket_core::model::Timestamp;
use docket_core::ops::rules::check_record;
use docket_core::ops::{
    CompletionSeq, OperationId, OperationKind, OperationLifecycleSnapshot, OperationStatus,
    OperationTerminalOutcome, OpsError, SessionId,
};

use crate::error::SqlResult;

/// The columns every read and `RETURNING` clause selects, in [`decode`] order.
pub(super) const COLUMNS: &str = "op_id, kind, display_name, source_label, source, status, \
    progress_count, outcome, completion_seq, created_at, started_at, completed_at";

/// One operation row as SQLite returned it.
pub(super) struct RawOperation {
    op_id: String,
    kind: String,
    display_name: String,
    source_label: String,
    source: Option<String>,
    status: String,
    progress_count: i64,
    outcome: Option<String>,
    completion_seq: Option<i64>,
    created_at: i64,
    started_at: Option<i64>,
    completed_at: Option<i64>,
}

/// Reads the [`COLUMNS`] of `row`.
pub(super) fn raw(row: &Row<'_>) -> rusqlite::Result<RawOperation> {
    Ok(RawOperation {
        op_id: row.get(0)?,
        kind: row.get(1)?,
        display_name: row.get(2)?,
        source_label: row.get(3)?,
        source: row.get(4)?,
        status: row.get(5)?,
        progress_count: row.get(6)?,
        outcome: row.get(7)?,
        completion_seq: row.get(8)?,
        created_at: row.get(9)?,
        started_at: row.get(10)?,
        completed_at: row.get(11)?,
    })
}

/// Decodes a row of `owner`, verifying it.
pub(super) fn decode(
    owner: &SessionId,
    raw: RawOperation,
) -> Result<OperationLifecycleSnapshot, OpsError> {
    let what = format!("operation row {owner}/{}", raw.op_id);
    let corrupt = |detail: String| OpsError::corrupt(what.clone(), detail);
    let id: OperationId = raw
        .op_id
        .parse()
        .map_err(|e: OpsError| corrupt(e.to_string()))?;
    let kind = OperationKind::parse(&raw.kind).map_err(|e| corrupt(e.to_string()))?;
    let status = OperationStatus::parse(&raw.status)
        .ok_or_else(|| corrupt(format!("unknown status {:?}", raw.status)))?;
    let source = raw
        .source
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(format!("source: {e}")))?;
    let terminal_outcome = decode_outcome(raw.outcome.as_deref()).map_err(corrupt)?;
    let unsigned = |value: i64, name: &str| {
        u64::try_from(value).map_err(|_| corrupt(format!("{name} {value} is negative")))
    };
    let record = OperationLifecycleSnapshot {
        id,
        owner: *owner,
        kind,
        display_name: raw.display_name,
        source_label: raw.source_label,
        source,
        status,
        progress_count: unsigned(raw.progress_count, "progress_count")?,
        terminal_outcome,
        completion_seq: raw
            .completion_seq
            .map(|seq| unsigned(seq, "completion_seq").map(CompletionSeq))
            .transpose()?,
        created_at: Timestamp::from_micros(raw.created_at),
        started_at: raw.started_at.map(Timestamp::from_micros),
        completed_at: raw.completed_at.map(Timestamp::from_micros),
    };
    check_record(&record).map_err(corrupt)?;
    Ok(record)
}

/// Decodes a stored outcome.
fn decode_outcome(text: Option<&str>) -> Result<Option<OperationTerminalOutcome>, String> {
    text.map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("outcome: {e}"))
}

/// The error of a source or outcome that cannot be encoded as JSON.
pub(super) fn unencodable(error: serde_json::Error) -> OpsError {
    OpsError::invalid_argument(format!("cannot be encoded: {error}"))
}

/// Reads every row `rows` yields, mapped with `raw`.
pub(super) fn collect_raw(
    rows: rusqlite::MappedRows<'_, impl FnMut(&Row<'_>) -> rusqlite::Result<RawOperation>>,
) -> Result<Vec<RawOperation>, OpsError> {
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>().sql()?)
}
