//! Operation rows out of PostgreSQL: the strict decoding of a stored record (anything that
//! does not decode, or breaks the record invariants, is `Corrupt`) and the encoding of JSON
//! parts.

use sqlx::postgres::PgRow;
use sqlx::Row;

use docket_core::model::Timestamp;
use docket_core::ops::rules::check_record;
use docket_core::ops::{
    CompletedOperation, CompletionSeq, OperationId, OperationKind, OperationLifecycleSnapshot,
    OperationStatus, OperationTerminalOutcome, OpsError, SessionId,
};

use crate::error;

/// A column of `row` by name (a missing or mistyped column is a driver error).
pub(super) fn column<'r, T>(row: &'r PgRow, name: &str) -> Result<T, OpsError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get(name)
        .map_err(|e| OpsError::from(error::safe(e)))
}

/// Decodes the `r_*` columns of `row` as a record of `owner`, verifying it.
pub(super) fn decode(
    owner: &SessionId,
    row: &PgRow,
) -> Result<OperationLifecycleSnapshot, OpsError> {
    let op_id: String = column(row, "r_op_id")?;
    let what = format!("operation row {owner}/{op_id}");
    let corrupt = |detail: String| OpsError::corrupt(what.clone(), detail);
    let id: OperationId = op_id
        .parse()
        .map_err(|e: OpsError| corrupt(e.to_string()))?;
    let kind_name: String = column(row, "r_kind")?;
    let kind = OperationKind::parse(&kind_name).map_err(|e| corrupt(e.to_string()))?;
    let status_name: String = column(row, "r_status")?;
    let status = OperationStatus::parse(&status_name)
        .ok_or_else(|| corrupt(format!("unknown status {status_name:?}")))?;
    let source = column::<Option<String>>(row, "r_source")?
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(format!("source: {e}")))?;
    let terminal_outcome = column::<Option<String>>(row, "r_outcome")?
        .as_deref()
        .map(serde_json::from_str::<OperationTerminalOutcome>)
        .transpose()
        .map_err(|e| corrupt(format!("outcome: {e}")))?;
    let unsigned = |value: i64, name: &str| {
        u64::try_from(value).map_err(|_| corrupt(format!("{name} {value} is negative")))
    };
    let record = OperationLifecycleSnapshot {
        id,
        owner: *owner,
        kind,
        display_name: column(row, "r_display_name")?,
        source_label: column(row, "r_source_label")?,
        source,
        status,
        progress_count: unsigned(column(row, "r_progress_count")?, "progress_count")?,
        terminal_outcome,
        completion_seq: column::<Option<i64>>(row, "r_completion_seq")?
            .map(|seq| unsigned(seq, "completion_seq").map(CompletionSeq))
            .transpose()?,
        created_at: Timestamp::from_micros(column(row, "r_created_at")?),
        started_at: column::<Option<i64>>(row, "r_started_at")?.map(Timestamp::from_micros),
        completed_at: column::<Option<i64>>(row, "r_completed_at")?.map(Timestamp::from_micros),
    };
    check_record(&record).map_err(corrupt)?;
    Ok(record)
}

/// The completion entry of a terminal record.
pub(super) fn completed(
    record: OperationLifecycleSnapshot,
) -> Result<CompletedOperation, OpsError> {
    match (record.completion_seq, record.terminal_outcome) {
        (Some(completion_seq), Some(outcome)) => Ok(CompletedOperation {
            id: record.id,
            completion_seq,
            outcome,
        }),
        _ => Err(OpsError::corrupt(
            format!("operation row {}/{}", record.owner, record.id),
            "a terminal record without its outcome",
        )),
    }
}

/// The error of a source or outcome that cannot be encoded as JSON.
pub(super) fn unencodable(error: serde_json::Error) -> OpsError {
    OpsError::invalid_argument(format!("cannot be encoded: {error}"))
}
