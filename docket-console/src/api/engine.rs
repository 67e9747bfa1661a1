//! Engine facts and the operation registry.

use std::str::FromStr;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use docket::core::ops::SessionId;

use crate::error::ApiError;
use crate::extract::{ApiCaller, P};
use crate::Shared;

/// `GET /api/v1/engine`: runs by status and the operational counts of running runs.
pub async fn facts(
    State(console): State<Shared>,
    caller: ApiCaller,
) -> Result<Json<Value>, ApiError> {
    let facts = console
        .facts()
        .get(&caller.docket, console.config().inspect_cap)
        .await
        .map_err(|e| ApiError::from_docket(e, "not_found"))?;
    serde_json::to_value(&facts)
        .map(Json)
        .map_err(|_| ApiError::bad_request("facts cannot be shown"))
}

/// `GET /api/v1/sessions/{session_id}/operations`: the operations a session holds in the
/// store's registry. The registry is keyed by session, not by tenant, so a tenant-bound token
/// is answered 404 (it could otherwise read other owners' sessions).
pub async fn operations(
    caller: ApiCaller,
    P(session_id): P<String>,
) -> Result<Json<Value>, ApiError> {
    if caller.grant.tenant().is_some() {
        return Err(ApiError::not_found(
            "ops_registry_unavailable",
            "the operation registry is not scoped to tenants",
        ));
    }
    let session = SessionId::from_str(&session_id)
        .map_err(|e| ApiError::bad_request(format!("session id: {e}")))?;
    let operations = caller
        .docket
        .all_operations(&session)
        .await
        .map_err(|e| ApiError::from_docket(e, "session_not_found"))?;
    Ok(Json(
        json!({ "session_id": session_id, "operations": operations }),
    ))
}
