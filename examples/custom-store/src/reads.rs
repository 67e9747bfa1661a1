//! Reads over the locked tables: runs, run pages and events, every one decoded and verified.

use docket_core::model::{
    Event, EventPage, EventQuery, Run, RunId, RunInfo, RunPage, RunQuery, RunSummary, Scope,
};
use docket_core::store::rules::queries::{event_page, run_page};
use docket_core::store::StoreError;

use crate::codec::{decode_event, decode_run};
use crate::tables::{RunRow, Tables};

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

/// `fetch_run`.
pub(crate) fn fetch(tables: &Tables, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
    decode_run(run_id, tables.visible(scope, run_id)?)
}

/// `inspect_run`: the run and its operational state (never the token).
pub(crate) fn inspect(
    tables: &Tables,
    scope: &Scope,
    run_id: &RunId,
) -> Result<RunInfo, StoreError> {
    let row = tables.visible(scope, run_id)?;
    Ok(RunInfo {
        run: decode_run(run_id, row)?,
        owner: row.owner.clone(),
        wake_at: row.ops.wake_at,
        claimed_at: row.ops.claimed_at,
        claim_attempts: row.ops.claim_attempts,
        claim_abandons: row.ops.claim_abandons,
        poison: row.ops.poison,
        admitted_at: row.ops.admitted_at,
    })
}

/// `list_runs` with a validated query, from the columns alone.
pub(crate) fn list_runs(tables: &Tables, scope: &Scope, query: &RunQuery) -> RunPage {
    let mut rows: Vec<RunSummary> = tables
        .runs
        .iter()
        .filter(|(id, row)| {
            let c = &row.columns;
            scope.admits(&row.owner)
                && query.graph_id.as_ref().is_none_or(|g| g == &c.graph_id)
                && query.graph_hash.as_ref().is_none_or(|h| h == &c.graph_hash)
                && query
                    .statuses
                    .as_ref()
                    .is_none_or(|s| s.contains(&c.status))
                && query
                    .before
                    .as_ref()
                    .is_none_or(|cursor| (c.started_at, *id) < (cursor.started_at, &cursor.run_id))
        })
        .map(|(id, row)| summary(id, row))
        .collect();
    rows.sort_by(|a, b| (b.started_at, &b.id).cmp(&(a.started_at, &a.id)));
    rows.truncate(query.limit as usize + 1);
    run_page(rows, query)
}

/// `fetch_event`: the run must be visible first.
pub(crate) fn fetch_event(
    tables: &Tables,
    scope: &Scope,
    run_id: &RunId,
    seq: u64,
) -> Result<Event, StoreError> {
    tables.visible(scope, run_id)?;
    let row = tables
        .events
        .get(run_id)
        .and_then(|rows| rows.get(&seq))
        .ok_or(StoreError::NotFound)?;
    decode_event(run_id, seq, row)
}

/// `fetch_latest_event`: the run must be visible first.
pub(crate) fn fetch_latest_event(
    tables: &Tables,
    scope: &Scope,
    run_id: &RunId,
) -> Result<Option<Event>, StoreError> {
    tables.visible(scope, run_id)?;
    tables
        .events
        .get(run_id)
        .and_then(|rows| rows.iter().next_back())
        .map(|(seq, row)| decode_event(run_id, *seq, row))
        .transpose()
}

/// `list_events` with a validated query: the page and the retained bounds, read under the
/// same lock.
pub(crate) fn list_events(
    tables: &Tables,
    scope: &Scope,
    run_id: &RunId,
    query: &EventQuery,
) -> Result<EventPage, StoreError> {
    let row = tables.visible(scope, run_id)?;
    let rows = tables.events.get(run_id);
    let oldest = rows.and_then(|r| r.keys().next().copied());
    let latest = rows.and_then(|r| r.keys().next_back().copied());
    let events = rows
        .into_iter()
        .flat_map(|r| r.range(query.after_seq.saturating_add(1)..))
        .take(query.limit as usize)
        .map(|(seq, event)| decode_event(run_id, *seq, event))
        .collect::<Result<Vec<Event>, StoreError>>()?;
    Ok(event_page(
        events,
        query,
        oldest,
        latest,
        row.columns.event_seq,
    ))
}
