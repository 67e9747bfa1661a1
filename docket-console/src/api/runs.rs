//! Reading runs: the filtered, keyset-paged list, one run, its events, its state at a
//! checkpoint.

use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use docket::core::model::{
    EventQuery, GraphHash, RunCursor, RunId, RunPage, RunQuery, RunStatus, Timestamp,
};
use docket::Docket;

use super::graphs::{graph_id_of, page_limit};
use super::json::{run_json, summary_json};
use crate::error::ApiError;
use crate::extract::{ApiCaller, P, Q};
use crate::paths::{cursor_token, parse_cursor};
use crate::state::at_checkpoint;

/// Filters and paging of the run list (shared with the runs page).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RunFilter {
    /// Comma-separated statuses (`running,waiting,done,failed,cancelled`).
    pub status: Option<String>,
    /// Only runs of this graph id.
    pub graph_id: Option<String>,
    /// Only runs of this graph hash.
    pub graph_hash: Option<String>,
    /// Only runs started before this instant (µs since the epoch, exclusive).
    pub started_before: Option<i64>,
    /// Only runs started after this instant (µs since the epoch, exclusive).
    pub started_after: Option<i64>,
    /// Page size (default 50, at most 1000).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One page of the run list, with the cursor of the next.
#[derive(Debug)]
pub struct Listed {
    /// The page (rows past `started_after` removed).
    pub page: RunPage,
    /// The opaque cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

/// Runs one filtered page of the list.
///
/// # Errors
/// 400 for a malformed filter; the store's errors otherwise.
pub async fn list_page(docket: &Docket, filter: &RunFilter) -> Result<Listed, ApiError> {
    let statuses = match filter.status.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(list) => Some(
            list.split(',')
                .map(|s| {
                    RunStatus::parse(s.trim())
                        .filter(|s| s.is_durable())
                        .ok_or_else(|| ApiError::bad_request(format!("unknown status {s:?}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let graph_id = match filter.graph_id.as_deref() {
        None | Some("") => None,
        Some(id) => Some(graph_id_of(id)?),
    };
    let graph_hash = match filter.graph_hash.as_deref() {
        None | Some("") => None,
        Some(h) => {
            Some(GraphHash::new(h).map_err(|e| ApiError::bad_request(format!("graph hash: {e}")))?)
        }
    };
    let before = match (filter.cursor.as_deref(), filter.started_before) {
        (Some(token), _) if !token.is_empty() => {
            Some(parse_cursor(token).map_err(ApiError::bad_request)?)
        }
        // (started_at, run_id) < (T, " ") is started_at < T: " " is the smallest valid id
        // (ids hold no control character), so only a run named " " at exactly T is lost.
        (_, Some(micros)) => Some(RunCursor {
            started_at: Timestamp::from_micros(micros),
            run_id: RunId::new(" ").map_err(|e| ApiError::bad_request(e.to_string()))?,
        }),
        _ => None,
    };
    let query = RunQuery {
        limit: page_limit(filter.limit, 50)?,
        before,
        graph_id,
        graph_hash,
        statuses,
    };
    let mut page = docket
        .list_runs(&query)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    if let Some(after) = filter.started_after.map(Timestamp::from_micros) {
        // Newest first: the first row at or before `after` ends the listing.
        if let Some(cut) = page.runs.iter().position(|r| r.started_at <= after) {
            page.runs.truncate(cut);
            page.has_more = false;
        }
    }
    let next_cursor = page
        .next_before
        .as_ref()
        .filter(|_| page.has_more)
        .map(cursor_token);
    Ok(Listed { page, next_cursor })
}

/// `GET /api/v1/runs`.
pub async fn list(caller: ApiCaller, Q(filter): Q<RunFilter>) -> Result<Json<Value>, ApiError> {
    let listed = list_page(&caller.docket, &filter).await?;
    let runs: Vec<Value> = listed.page.runs.iter().map(summary_json).collect();
    Ok(Json(json!({
        "runs": runs,
        "has_more": listed.page.has_more,
        "next_cursor": listed.next_cursor,
    })))
}

/// A run id from a path, or 400.
///
/// # Errors
/// 400 `invalid_argument`.
pub fn run_id_of(raw: &str) -> Result<RunId, ApiError> {
    RunId::new(raw).map_err(|e| ApiError::bad_request(format!("run id: {e}")))
}

/// `GET /api/v1/runs/{run_id}`.
pub async fn show(caller: ApiCaller, P(run_id): P<String>) -> Result<Json<Value>, ApiError> {
    let info = caller
        .docket
        .inspect_run(&run_id_of(&run_id)?)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    Ok(Json(run_json(&info)))
}

/// Query of [`events`].
#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    after_seq: Option<u64>,
    limit: Option<u32>,
}

/// `GET /api/v1/runs/{run_id}/events`.
pub async fn events(
    caller: ApiCaller,
    P(run_id): P<String>,
    Q(query): Q<EventsQuery>,
) -> Result<Json<Value>, ApiError> {
    let query = EventQuery {
        after_seq: query.after_seq.unwrap_or(0),
        limit: page_limit(query.limit, 100)?,
    };
    let page = caller
        .docket
        .list_events(&run_id_of(&run_id)?, &query)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    Ok(Json(json!({
        "events": page.events,
        "has_more": page.has_more,
        "next_after_seq": page.next_after_seq,
        "oldest_available_seq": page.oldest_available_seq,
        "latest_seq": page.latest_seq,
    })))
}

/// `GET /api/v1/runs/{run_id}/checkpoints/{checkpoint_seq}`.
pub async fn checkpoint(
    caller: ApiCaller,
    P((run_id, n)): P<(String, u64)>,
) -> Result<Json<Value>, ApiError> {
    let state = at_checkpoint(&caller.docket, &run_id_of(&run_id)?, n)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?
        .ok_or_else(|| ApiError::not_found("checkpoint_not_found", "no such checkpoint"))?;
    serde_json::to_value(&state)
        .map(Json)
        .map_err(|_| ApiError::not_found("checkpoint_not_found", "the checkpoint cannot be shown"))
}
