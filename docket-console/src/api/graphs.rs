//! Graphs: the ids known to the console, their versions, and one version's document.

use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use docket::core::model::{
    GraphCursor, GraphHash, GraphId, GraphRef, GraphVersion, GraphVersionQuery, RunQuery,
    Timestamp, MAX_PAGE_LIMIT,
};
use docket::examples::EXAMPLES;
use docket::{Docket, DocketError};

use crate::error::ApiError;
use crate::extract::{ApiCaller, P, Q};

/// Versions listed per graph by [`list`].
const VERSIONS_PER_GRAPH: u32 = 20;

/// The graph ids the console knows: the bundled examples and every graph id among the newest
/// runs (the stores address graphs by id and have no "list graph ids" operation).
///
/// # Errors
/// As [`Docket::list_runs`].
pub async fn known_graph_ids(docket: &Docket) -> Result<Vec<GraphId>, DocketError> {
    let mut ids: Vec<String> = EXAMPLES.iter().map(|e| e.id.to_owned()).collect();
    let page = docket
        .list_runs(&RunQuery {
            limit: MAX_PAGE_LIMIT,
            ..RunQuery::default()
        })
        .await?;
    ids.extend(page.runs.into_iter().map(|s| s.graph_id.into_string()));
    ids.sort();
    ids.dedup();
    Ok(ids
        .into_iter()
        .filter_map(|id| GraphId::new(id).ok())
        .collect())
}

/// The known graphs with their newest versions (ids without a version are left out).
///
/// # Errors
/// As [`Docket::list_graph_versions`].
pub async fn graphs_json(docket: &Docket) -> Result<Value, DocketError> {
    let mut graphs = Vec::new();
    for id in known_graph_ids(docket).await? {
        let page = docket
            .list_graph_versions(
                &id,
                &GraphVersionQuery {
                    limit: VERSIONS_PER_GRAPH,
                    before: None,
                },
            )
            .await?;
        if page.versions.is_empty() {
            continue;
        }
        let versions: Vec<Value> = page.versions.iter().map(version_json).collect();
        graphs.push(
            json!({"graph_id": id.as_str(), "versions": versions, "more_versions": page.has_more}),
        );
    }
    Ok(json!({ "graphs": graphs }))
}

/// One published version as the API shows it.
fn version_json(version: &GraphVersion) -> Value {
    json!({
        "graph_hash": version.graph_ref.graph_hash.as_str(),
        "published_at": version.published_at.to_rfc3339(),
    })
}

/// `GET /api/v1/graphs`.
pub async fn list(caller: ApiCaller) -> Result<Json<Value>, ApiError> {
    graphs_json(&caller.docket)
        .await
        .map(Json)
        .map_err(|e| ApiError::from_docket(e, "graph_not_found"))
}

/// Query of [`versions`].
#[derive(Debug, Deserialize)]
pub struct VersionsQuery {
    limit: Option<u32>,
    /// `<published_at µs>_<graph hash>` from a previous page's `next_cursor`.
    cursor: Option<String>,
}

/// `GET /api/v1/graphs/{graph_id}/versions`.
pub async fn versions(
    caller: ApiCaller,
    P(graph_id): P<String>,
    Q(query): Q<VersionsQuery>,
) -> Result<Json<Value>, ApiError> {
    let graph_id = graph_id_of(&graph_id)?;
    let before = match query.cursor.as_deref() {
        None => None,
        Some(token) => Some(graph_cursor(token)?),
    };
    let limit = page_limit(query.limit, 50)?;
    let page = caller
        .docket
        .list_graph_versions(&graph_id, &GraphVersionQuery { limit, before })
        .await
        .map_err(|e| ApiError::from_docket(e, "graph_not_found"))?;
    let versions: Vec<Value> = page.versions.iter().map(version_json).collect();
    let next = page
        .next_before
        .filter(|_| page.has_more)
        .map(|c| format!("{}_{}", c.published_at.as_micros(), c.graph_hash.as_str()));
    Ok(Json(json!({
        "graph_id": graph_id.as_str(),
        "versions": versions,
        "has_more": page.has_more,
        "next_cursor": next,
    })))
}

/// `GET /api/v1/graphs/{graph_id}/versions/{graph_hash}`: the effective document.
pub async fn document(
    caller: ApiCaller,
    P((graph_id, graph_hash)): P<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let graph_ref = graph_ref_of(&graph_id, &graph_hash)?;
    let doc = caller
        .docket
        .fetch_graph(&graph_ref)
        .await
        .map_err(|e| ApiError::from_docket(e, "graph_not_found"))?;
    serde_json::to_value(&doc)
        .map(Json)
        .map_err(|_| ApiError::not_found("graph_not_found", "the stored document cannot be shown"))
}

/// A graph id from a path or query, or 400.
///
/// # Errors
/// 400 `invalid_argument`.
pub fn graph_id_of(raw: &str) -> Result<GraphId, ApiError> {
    GraphId::new(raw).map_err(|e| ApiError::bad_request(format!("graph id: {e}")))
}

/// A graph reference from its two parts, or 400.
///
/// # Errors
/// 400 `invalid_argument`.
pub fn graph_ref_of(graph_id: &str, graph_hash: &str) -> Result<GraphRef, ApiError> {
    Ok(GraphRef {
        graph_id: graph_id_of(graph_id)?,
        graph_hash: GraphHash::new(graph_hash)
            .map_err(|e| ApiError::bad_request(format!("graph hash: {e}")))?,
    })
}

fn graph_cursor(token: &str) -> Result<GraphCursor, ApiError> {
    let bad = || ApiError::bad_request("malformed cursor");
    let (micros, hash) = token.split_once('_').ok_or_else(bad)?;
    Ok(GraphCursor {
        published_at: Timestamp::from_micros(micros.parse().map_err(|_| bad())?),
        graph_hash: GraphHash::new(hash).map_err(|_| bad())?,
    })
}

/// A page size: `default` when absent, else `1..=1000`.
///
/// # Errors
/// 400 `invalid_argument` outside the range.
pub fn page_limit(limit: Option<u32>, default: u32) -> Result<u32, ApiError> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=MAX_PAGE_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_PAGE_LIMIT}"
        ))),
    }
}
