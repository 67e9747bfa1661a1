//! Actions (admin tokens only): start a run, cancel it, retry a poisoned run, resolve an
//! interrupt.

use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};

use docket::core::model::{GraphHash, GraphRef, RunId, RunStatus};
use docket::{Docket, StartOptions};

use super::graphs::graph_id_of;
use super::runs::run_id_of;
use crate::error::ApiError;
use crate::extract::{AdminCaller, J, P};

/// Body of [`start`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartBody {
    /// The graph id.
    pub graph_id: String,
    /// A version (default: the newest).
    pub graph_hash: Option<String>,
    /// The run input (default `{}`).
    #[serde(default)]
    pub input: Map<String, Value>,
    /// The run id (default: generated).
    pub run_id: Option<String>,
}

/// Starts a run as `docket`'s owner.
///
/// # Errors
/// 400 for malformed ids, 404 `graph_not_found`, 409 when the run id is taken, 422 for input
/// the graph refuses.
pub async fn start_run(docket: &Docket, body: StartBody) -> Result<Value, ApiError> {
    let graph_id = graph_id_of(&body.graph_id)?;
    let graph_ref = match body.graph_hash.as_deref() {
        Some(hash) => GraphRef {
            graph_id,
            graph_hash: GraphHash::new(hash)
                .map_err(|e| ApiError::bad_request(format!("graph hash: {e}")))?,
        },
        None => docket
            .fetch_latest_graph_ref(&graph_id)
            .await
            .map_err(|e| ApiError::from_docket(e, "graph_not_found"))?,
    };
    let run_id = body.run_id.as_deref().map(run_id_of).transpose()?;
    let options = StartOptions {
        run_id,
        ..StartOptions::default()
    };
    let run = docket
        .start_run(&graph_ref, body.input, options)
        .await
        .map_err(|e| ApiError::from_docket(e, "graph_not_found"))?;
    refetch(docket, &run.id).await
}

/// `POST /api/v1/runs` → 201 with the run.
pub async fn start(
    AdminCaller(caller): AdminCaller,
    J(body): J<StartBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let run = start_run(&caller.docket, body).await?;
    Ok((StatusCode::CREATED, Json(run)))
}

/// The run with its operational state, as the API shows it.
async fn refetch(docket: &Docket, run_id: &RunId) -> Result<Value, ApiError> {
    docket
        .inspect_run(run_id)
        .await
        .map(|info| super::json::run_json(&info))
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))
}

/// Cancels a run as `docket`'s owner.
///
/// # Errors
/// 404 `run_not_found`; 409 when the run already finished.
pub async fn cancel_run(docket: &Docket, run_id: &RunId) -> Result<Value, ApiError> {
    docket
        .cancel_run(run_id)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    refetch(docket, run_id).await
}

/// Recovers a poisoned run as `docket`'s owner.
///
/// # Errors
/// 404 `run_not_found`; 409 `not_poisoned` when it is not poisoned.
pub async fn retry_run(docket: &Docket, run_id: &RunId) -> Result<Value, ApiError> {
    let info = docket
        .inspect_run(run_id)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    if !info.is_poisoned() || info.run.status != RunStatus::Running {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_poisoned",
            "only a poisoned run can be retried",
        ));
    }
    docket
        .retry_poisoned_run(run_id)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    refetch(docket, run_id).await
}

/// Resolves interrupt `interrupt_id` of a run with `value`, as `docket`'s owner.
///
/// # Errors
/// 404 `run_not_found` / `interrupt_not_found`; 409 `already_resolved` or `inactive_run`;
/// 422 for a value the interrupt's schema refuses.
pub async fn resolve_run(
    docket: &Docket,
    run_id: &RunId,
    interrupt_id: &str,
    value: Value,
) -> Result<Value, ApiError> {
    docket
        .resolve_interrupt(run_id, interrupt_id, value)
        .await
        .map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    refetch(docket, run_id).await
}

/// `POST /api/v1/runs/{run_id}/cancel`.
pub async fn cancel(
    AdminCaller(caller): AdminCaller,
    P(run_id): P<String>,
) -> Result<Json<Value>, ApiError> {
    cancel_run(&caller.docket, &run_id_of(&run_id)?)
        .await
        .map(Json)
}

/// `POST /api/v1/runs/{run_id}/retry`.
pub async fn retry(
    AdminCaller(caller): AdminCaller,
    P(run_id): P<String>,
) -> Result<Json<Value>, ApiError> {
    retry_run(&caller.docket, &run_id_of(&run_id)?)
        .await
        .map(Json)
}

/// Body of [`resolve`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// The value the interrupted node receives.
    pub value: Value,
}

/// `POST /api/v1/runs/{run_id}/interrupts/{interrupt_id}/resolve`.
pub async fn resolve(
    AdminCaller(caller): AdminCaller,
    P((run_id, interrupt_id)): P<(String, String)>,
    J(body): J<ResolveBody>,
) -> Result<Json<Value>, ApiError> {
    resolve_run(
        &caller.docket,
        &run_id_of(&run_id)?,
        &interrupt_id,
        body.value,
    )
    .await
    .map(Json)
}
