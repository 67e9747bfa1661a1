//! The registry's rows: one per owner (retired flag, next completion sequence) and one per
//! `(owner, operation)` with a column per field — names and statuses as their stable
//! strings, times as microseconds, the source and the outcome as JSON text — decoded and
//! verified on every read.

use docket_core::model::Timestamp;
use docket_core::ops::rules::check_record;
use docket_core::ops::{
    CompletionSeq, OperationId, OperationKind, OperationLifecycleSnapshot, OperationStatus,
    OpsError, SessionId,
};

use crate::error::unencodable_operation;

/// One owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OwnerRow {
    pub retired: bool,
    pub next_completion_seq: u64,
}

impl Default for OwnerRow {
    fn default() -> Self {
        OwnerRow {
            retired: false,
            next_completion_seq: CompletionSeq::FIRST.get(),
        }
    }
}

/// One operation, column by column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OperationRow {
    pub kind: String,
    pub display_name: String,
    pub source_label: String,
    pub source_json: Option<String>,
    pub status: String,
    pub progress_count: u64,
    pub outcome_json: Option<String>,
    pub completion_seq: Option<u64>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
}

impl OperationRow {
    /// Whether the row is terminal, read from its status column alone.
    pub fn is_terminal(&self) -> bool {
        OperationStatus::parse(&self.status).is_some_and(OperationStatus::is_terminal)
    }
}

/// The row of a record.
pub(crate) fn to_row(record: &OperationLifecycleSnapshot) -> Result<OperationRow, OpsError> {
    Ok(OperationRow {
        kind: record.kind.name().into_owned(),
        display_name: record.display_name.clone(),
        source_label: record.source_label.clone(),
        source_json: record
            .source
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| unencodable_operation(&e))?,
        status: record.status.as_str().to_owned(),
        progress_count: record.progress_count,
        outcome_json: record
            .terminal_outcome
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| unencodable_operation(&e))?,
        completion_seq: record.completion_seq.map(CompletionSeq::get),
        created_at: record.created_at.as_micros(),
        started_at: record.started_at.map(Timestamp::as_micros),
        completed_at: record.completed_at.map(Timestamp::as_micros),
    })
}

/// The record stored under `(owner, id)`, verified: every column must decode and the whole
/// must satisfy the record invariants, or it is `Corrupt`.
pub(crate) fn from_row(
    owner: &SessionId,
    id: &OperationId,
    row: &OperationRow,
) -> Result<OperationLifecycleSnapshot, OpsError> {
    let corrupt = |detail: String| OpsError::corrupt(format!("operation {owner}/{id}"), detail);
    let kind = OperationKind::parse(&row.kind).map_err(|e| corrupt(e.to_string()))?;
    let status = OperationStatus::parse(&row.status)
        .ok_or_else(|| corrupt(format!("unknown status {:?}", row.status)))?;
    let source = row
        .source_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(format!("source: {e}")))?;
    let terminal_outcome = row
        .outcome_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(format!("outcome: {e}")))?;
    let record = OperationLifecycleSnapshot {
        id: *id,
        owner: *owner,
        kind,
        display_name: row.display_name.clone(),
        source_label: row.source_label.clone(),
        source,
        status,
        progress_count: row.progress_count,
        terminal_outcome,
        completion_seq: row.completion_seq.map(CompletionSeq),
        created_at: Timestamp::from_micros(row.created_at),
        started_at: row.started_at.map(Timestamp::from_micros),
        completed_at: row.completed_at.map(Timestamp::from_micros),
    };
    check_record(&record).map_err(corrupt)?;
    Ok(record)
}
