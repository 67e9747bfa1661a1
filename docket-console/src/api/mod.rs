//! The JSON API under `/api/v1/` (`docs/console.md`, “API”). Every route authenticates by
//! bearer token ([`crate::extract::ApiCaller`]); actions need an admin token. The routes are
//! listed in `openapi.json`, served at `/api/v1/openapi.json` (a test holds the two equal).

pub mod actions;
pub mod engine;
pub mod graphs;
pub mod json;
pub mod runs;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::error::ApiError;
use crate::Shared;

pub use json::{run_json, summary_json};

/// The OpenAPI 3 document of the API.
pub const OPENAPI: &str = include_str!("../../openapi.json");

/// Every API route, as `(method, path)` in axum's syntax, mirroring [`routes`]: a test checks
/// each is routed and appears in [`OPENAPI`], and that [`OPENAPI`] documents nothing else.
pub const ROUTES: [(&str, &str); 14] = [
    ("get", "/api/v1/openapi.json"),
    ("get", "/api/v1/graphs"),
    ("get", "/api/v1/graphs/{graph_id}/versions"),
    ("get", "/api/v1/graphs/{graph_id}/versions/{graph_hash}"),
    ("get", "/api/v1/runs"),
    ("post", "/api/v1/runs"),
    ("get", "/api/v1/runs/{run_id}"),
    ("get", "/api/v1/runs/{run_id}/events"),
    ("get", "/api/v1/runs/{run_id}/checkpoints/{checkpoint_seq}"),
    ("post", "/api/v1/runs/{run_id}/cancel"),
    ("post", "/api/v1/runs/{run_id}/retry"),
    (
        "post",
        "/api/v1/runs/{run_id}/interrupts/{interrupt_id}/resolve",
    ),
    ("get", "/api/v1/sessions/{session_id}/operations"),
    ("get", "/api/v1/engine"),
];

/// The API routes.
pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/graphs", get(graphs::list))
        .route("/api/v1/graphs/{graph_id}/versions", get(graphs::versions))
        .route(
            "/api/v1/graphs/{graph_id}/versions/{graph_hash}",
            get(graphs::document),
        )
        .route("/api/v1/runs", get(runs::list).post(actions::start))
        .route("/api/v1/runs/{run_id}", get(runs::show))
        .route("/api/v1/runs/{run_id}/events", get(runs::events))
        .route(
            "/api/v1/runs/{run_id}/checkpoints/{checkpoint_seq}",
            get(runs::checkpoint),
        )
        .route("/api/v1/runs/{run_id}/cancel", post(actions::cancel))
        .route("/api/v1/runs/{run_id}/retry", post(actions::retry))
        .route(
            "/api/v1/runs/{run_id}/interrupts/{interrupt_id}/resolve",
            post(actions::resolve),
        )
        .route(
            "/api/v1/sessions/{session_id}/operations",
            get(engine::operations),
        )
        .route("/api/v1/engine", get(engine::facts))
}

/// The OpenAPI document (public: it holds no data).
async fn openapi() -> Response {
    let mut response = OPENAPI.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 404 `route_not_found` for every path no route matches.
pub async fn route_not_found() -> ApiError {
    ApiError::not_found("route_not_found", "no such route")
}

/// 405 `method_not_allowed` for a known path with another method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not accept that method",
    )
}
