//! Typed JSON errors: `{"error": {"code": "run_not_found", "message": "..."}}` with a stable
//! code and the HTTP status that goes with it.
//!
//! Messages never carry secrets: a storage failure is reported as `storage_unavailable` with a
//! fixed message (the store's own text may name hosts or schemas), and nothing here ever sees a
//! token or a claim token.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use docket::core::runtime::ErrorKind;
use docket::core::store::{StoreError, StoreErrorKind};
use docket::DocketError;

/// An API error: status, stable code, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable machine-readable code.
    pub code: &'static str,
    /// A human-readable explanation (never a secret).
    pub message: String,
}

impl ApiError {
    /// An error with the given parts.
    #[must_use]
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400 `invalid_argument`.
    #[must_use]
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    /// 401 `unauthorized`.
    #[must_use]
    pub fn unauthorized() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
        )
    }

    /// 403 `forbidden`: the token may read but not act.
    #[must_use]
    pub fn forbidden() -> Self {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this action needs an admin token",
        )
    }

    /// 404 with a specific code (`run_not_found`, `graph_not_found`, ...).
    #[must_use]
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    /// Maps a facade error, naming what was looked up when it is "not found".
    #[must_use]
    pub fn from_docket(error: DocketError, missing: &'static str) -> Self {
        match error {
            DocketError::NotFound => ApiError::not_found(missing, "not found"),
            DocketError::Store(e) => ApiError::from_store(&e, missing),
            DocketError::Runtime(e) => {
                let status = match e.kind {
                    ErrorKind::NotFound => StatusCode::NOT_FOUND,
                    ErrorKind::AlreadyResolved | ErrorKind::InactiveRun => StatusCode::CONFLICT,
                    ErrorKind::InvalidOptions => StatusCode::BAD_REQUEST,
                    ErrorKind::RuntimeUnavailable => StatusCode::SERVICE_UNAVAILABLE,
                    _ => StatusCode::UNPROCESSABLE_ENTITY,
                };
                let code = match e.kind {
                    ErrorKind::NotFound => "interrupt_not_found",
                    other => other.as_str(),
                };
                ApiError::new(status, code, e.message)
            }
            DocketError::InvalidGraph { .. } | DocketError::GraphMismatch { .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_graph",
                error.to_string(),
            ),
            DocketError::InvalidJson { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", error.to_string())
            }
            DocketError::InvalidOptions(message) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_options", message)
            }
            DocketError::Poisoned(_) => {
                ApiError::new(StatusCode::CONFLICT, "poisoned", error.to_string())
            }
            DocketError::OpsRegistryUnavailable => ApiError::not_found(
                "ops_registry_unavailable",
                "this store offers no operation registry",
            ),
            DocketError::Ops(e) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "ops_error", e.to_string())
            }
            other => {
                tracing::warn!(error = %other, "console: the store failed");
                storage_unavailable()
            }
        }
    }

    fn from_store(error: &StoreError, missing: &'static str) -> Self {
        match error.kind() {
            StoreErrorKind::NotFound => ApiError::not_found(missing, "not found"),
            StoreErrorKind::InvalidArgument => ApiError::bad_request(error.to_string()),
            StoreErrorKind::InvalidTransition
            | StoreErrorKind::InactiveRun
            | StoreErrorKind::StaleCheckpoint
            | StoreErrorKind::Conflict
            | StoreErrorKind::EventConflict
            | StoreErrorKind::GraphContentConflict => {
                ApiError::new(StatusCode::CONFLICT, "conflict", error.to_string())
            }
            _ => {
                tracing::warn!(%error, "console: the store failed");
                storage_unavailable()
            }
        }
    }
}

/// 503 with a fixed message: a store's own error text may name its host or schema.
fn storage_unavailable() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "storage_unavailable",
        "the store could not answer; see the server log",
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code,
            self.status.as_u16(),
            self.message
        )
    }
}
