//! Run and event reads (`docs/storage-contract.md`, “Reading runs”; `docs/storage-contract.md`,
//! “Reading events”), from the locked state.

use crate::model::{
    Event, EventPage, EventQuery, Run, RunId, RunInfo, RunPage, RunQuery, RunSummary, Scope,
};
use crate::store::rules::queries::{
    event_page, run_page, validate_event_query, validate_run_query,
};
use crate::store::StoreError;

use super::state::{decode_event, decode_run, RunRow, State};

/// The exact last committed document.
pub(super) fn fetch_run(state: &State, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
    decode_run(run_id, state.visible_row(scope, run_id)?)
}

/// The document plus its operational projection (never the token).
pub(super) fn inspect_run(
    state: &State,
    scope: &Scope,
    run_id: &RunId,
) -> Result<RunInfo, StoreError> {
    let row = state.visible_row(scope, run_id)?;
    let run = decode_run(run_id, row)?;
    Ok(RunInfo {
        run,
        owner: row.owner.clone(),
        wake_at: row.ops.wake_at,
        claimed_at: row.ops.claimed_at,
        claim_attempts: row.ops.claim_attempts,
        claim_abandons: row.ops.claim_abandons,
        poison: row.ops.poison,
        admitted_at: row.ops.admitted_at,
    })
}

fn summary(id: &RunId, row: &RunRow) -> RunSummary {
    let c = &row.columns;
    RunSummary {
        id: id.clone(),
        owner: row.owner.clone(),
        graph_id: c.graph_id.clone(),
        graph_hash: c.graph_hash.clone(),
        status: c.status,
        step: c.step,
        checkpoint_seq: c.checkpoint_seq,
        started_at: c.started_at,
        updated_at: c.updated_at,
        finished_at: c.finished_at,
    }
}

fn matches(query: &RunQuery, id: &RunId, row: &RunRow) -> bool {
    let c = &row.columns;
    query.graph_id.as_ref().is_none_or(|g| g == &c.graph_id)
        && query.graph_hash.as_ref().is_none_or(|h| h == &c.graph_hash)
        && query
            .statuses
            .as_ref()
            .is_none_or(|statuses| statuses.contains(&c.status))
        && query
            .before
            .as_ref()
            .is_none_or(|cursor| (c.started_at, id) < (cursor.started_at, &cursor.run_id))
}

/// Runs newest first by `(started_at, run_id)`, from the summary columns only.
pub(super) fn list_runs(
    state: &State,
    scope: &Scope,
    query: &RunQuery,
) -> Result<RunPage, StoreError> {
    validate_run_query(query)?;
    let mut rows: Vec<RunSummary> = state
        .runs
        .iter()
        .filter(|(id, row)| scope.admits(&row.owner) && matches(query, id, row))
        .map(|(id, row)| summary(id, row))
        .collect();
    rows.sort_by(|a, b| (b.started_at, &b.id).cmp(&(a.started_at, &a.id)));
    rows.truncate(query.limit as usize + 1);
    Ok(run_page(rows, query))
}

/// One retained event of a visible run.
pub(super) fn fetch_event(
    state: &State,
    scope: &Scope,
    run_id: &RunId,
    seq: u64,
) -> Result<Event, StoreError> {
    state.visible_row(scope, run_id)?;
    state.stored_event(run_id, seq)?.ok_or(StoreError::NotFound)
}

/// The newest retained event of a visible run; a corrupt newest row is an error.
pub(super) fn fetch_latest_event(
    state: &State,
    scope: &Scope,
    run_id: &RunId,
) -> Result<Option<Event>, StoreError> {
    state.visible_row(scope, run_id)?;
    state
        .events
        .get(run_id)
        .and_then(|events| events.iter().next_back())
        .map(|(seq, row)| decode_event(run_id, *seq, row))
        .transpose()
}

/// Events after `query.after_seq`, with retained bounds and `latest_seq` from the same state.
pub(super) fn list_events(
    state: &State,
    scope: &Scope,
    run_id: &RunId,
    query: &EventQuery,
) -> Result<EventPage, StoreError> {
    validate_event_query(query)?;
    let row = state.visible_row(scope, run_id)?;
    let retained = state.events.get(run_id);
    let oldest = retained.and_then(|events| events.keys().next().copied());
    let latest = retained.and_then(|events| events.keys().next_back().copied());
    let page = retained
        .into_iter()
        .flat_map(|events| events.range(query.after_seq.saturating_add(1)..))
        .take(query.limit as usize)
        .map(|(seq, event)| decode_event(run_id, *seq, event))
        .collect::<Result<Vec<Event>, StoreError>>()?;
    Ok(event_page(
        page,
        query,
        oldest,
        latest,
        row.columns.event_seq,
    ))
}
