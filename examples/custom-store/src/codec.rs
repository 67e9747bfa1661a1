//! Documents and events as JSON text, verified on every read: a record that does not decode,
//! breaks a durable rule or disagrees with its key is `Corrupt`, never "absent".

use docket_core::model::{validate_durable, Event, Run, RunId};
use docket_core::store::rules::effects::check_row_invariants;
use docket_core::store::StoreError;

use crate::error::unencodable;
use crate::tables::{Columns, EventRow, RunRow};

/// The columns of a validated document.
pub(crate) fn columns(run: &Run) -> Result<Columns, StoreError> {
    let missing = |what: &str| StoreError::invalid_transition(format!("{what} is missing"));
    Ok(Columns {
        graph_id: run.graph_id.clone(),
        graph_hash: run.graph_hash.clone(),
        status: run.status,
        step: run.step,
        checkpoint_seq: run.checkpoint_seq,
        event_seq: run.event_seq,
        started_at: run.started_at.ok_or_else(|| missing("started_at"))?,
        updated_at: run.updated_at.ok_or_else(|| missing("updated_at"))?,
        finished_at: run.finished_at,
    })
}

/// A validated run's columns and JSON text.
pub(crate) fn encode_run(run: &Run) -> Result<(Columns, String), StoreError> {
    let text = serde_json::to_string(run).map_err(|e| unencodable("run", &e))?;
    Ok((columns(run)?, text))
}

/// The document stored under `id`, verified against its key, the durable rules, the row
/// invariants and its columns.
pub(crate) fn decode_run(id: &RunId, row: &RunRow) -> Result<Run, StoreError> {
    let what = || format!("run {id}");
    let run: Run =
        serde_json::from_str(&row.document).map_err(|e| StoreError::corrupt(what(), e))?;
    validate_durable(&run).map_err(|e| StoreError::corrupt(what(), e))?;
    check_row_invariants(run.status, &row.ops).map_err(|e| StoreError::corrupt(what(), e))?;
    if &run.id != id || columns(&run)? != row.columns {
        return Err(StoreError::corrupt(
            what(),
            "document disagrees with its row",
        ));
    }
    Ok(run)
}

/// An event's JSON text.
pub(crate) fn encode_event(event: &Event) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|e| unencodable("event", &e))
}

/// The event stored under `(id, seq)`, verified against its key.
pub(crate) fn decode_event(id: &RunId, seq: u64, row: &EventRow) -> Result<Event, StoreError> {
    let what = || format!("event {id}#{seq}");
    let event: Event =
        serde_json::from_str(&row.json).map_err(|e| StoreError::corrupt(what(), e))?;
    if &event.run_id != id || event.seq != seq {
        return Err(StoreError::corrupt(what(), "event disagrees with its key"));
    }
    Ok(event)
}
