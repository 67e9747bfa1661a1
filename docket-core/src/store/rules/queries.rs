//! Query validation and page construction shared by all backends (`docs/storage-contract.md`,
//! “Pages and cursors”).

use crate::model::{
    Event, EventPage, EventQuery, GraphCursor, GraphVersion, GraphVersionPage, GraphVersionQuery,
    RunCursor, RunPage, RunQuery, RunSummary, MAX_PAGE_LIMIT,
};
use crate::store::error::StoreError;
use crate::store::prune::PrunePolicy;

fn check_limit(limit: u32) -> Result<(), StoreError> {
    if limit == 0 || limit > MAX_PAGE_LIMIT {
        return Err(StoreError::invalid_argument(format!(
            "limit must be within 1..={MAX_PAGE_LIMIT}, got {limit}"
        )));
    }
    Ok(())
}

/// Checks a run query.
///
/// # Errors
/// `InvalidArgument` for a limit out of range or an empty status filter.
pub fn validate_run_query(query: &RunQuery) -> Result<(), StoreError> {
    check_limit(query.limit)?;
    if query.statuses.as_ref().is_some_and(Vec::is_empty) {
        return Err(StoreError::invalid_argument(
            "a status filter must name at least one status",
        ));
    }
    if query
        .statuses
        .as_ref()
        .is_some_and(|s| s.iter().any(|s| !s.is_durable()))
    {
        return Err(StoreError::invalid_argument(
            "status `created` is never stored",
        ));
    }
    Ok(())
}

/// Checks an event query.
///
/// # Errors
/// `InvalidArgument` for a limit out of range.
pub fn validate_event_query(query: &EventQuery) -> Result<(), StoreError> {
    check_limit(query.limit)
}

/// Checks a graph version query.
///
/// # Errors
/// `InvalidArgument` for a limit out of range.
pub fn validate_graph_query(query: &GraphVersionQuery) -> Result<(), StoreError> {
    check_limit(query.limit)
}

/// Checks a prune policy.
///
/// # Errors
/// `InvalidArgument` when events would be kept longer than their runs.
pub fn validate_prune_policy(policy: &PrunePolicy) -> Result<(), StoreError> {
    if policy.event_retention_ms > policy.run_retention_ms {
        return Err(StoreError::invalid_argument(
            "event retention must not exceed run retention",
        ));
    }
    Ok(())
}

/// Keeps the first `limit` of `rows` (fetched as `limit + 1` in final order) and says whether
/// the lookahead row existed.
#[must_use]
pub fn take_page<T>(mut rows: Vec<T>, limit: u32) -> (Vec<T>, bool) {
    let limit = limit as usize;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    (rows, has_more)
}

/// Builds a run page from `rows` (fetched as `limit + 1` in final order): the cursor is the
/// last returned run, or the supplied cursor when the page is empty.
#[must_use]
pub fn run_page(rows: Vec<RunSummary>, query: &RunQuery) -> RunPage {
    let (runs, has_more) = take_page(rows, query.limit);
    let next_before = runs
        .last()
        .map(|r| RunCursor {
            started_at: r.started_at,
            run_id: r.id.clone(),
        })
        .or_else(|| query.before.clone());
    RunPage {
        runs,
        next_before,
        has_more,
    }
}

/// Builds a graph version page from `rows` (fetched as `limit + 1` in final order): the
/// cursor is the last returned version, or the supplied cursor when the page is empty.
#[must_use]
pub fn graph_version_page(rows: Vec<GraphVersion>, query: &GraphVersionQuery) -> GraphVersionPage {
    let (versions, has_more) = take_page(rows, query.limit);
    let next_before = versions
        .last()
        .map(|v| GraphCursor {
            published_at: v.published_at,
            graph_hash: v.graph_ref.graph_hash.clone(),
        })
        .or_else(|| query.before.clone());
    GraphVersionPage {
        versions,
        next_before,
        has_more,
    }
}

/// Builds an event page from the page rows and the retained bounds read in one snapshot.
#[must_use]
pub fn event_page(
    events: Vec<Event>,
    query: &EventQuery,
    oldest_available_seq: Option<u64>,
    latest_available_seq: Option<u64>,
    latest_seq: u64,
) -> EventPage {
    let mut events = events;
    events.truncate(query.limit as usize);
    let next_after_seq = events.last().map_or(query.after_seq, |e| e.seq);
    EventPage {
        has_more: latest_available_seq.is_some_and(|latest| latest > next_after_seq),
        events,
        next_after_seq,
        oldest_available_seq,
        latest_available_seq,
        latest_seq,
    }
}
