//! Request extractors: who is calling (bearer for the API, session cookie for the pages) and
//! query, path and JSON readers whose refusals are typed [`ApiError`]s instead of axum's plain
//! text.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use docket::core::model::parse_json_strict;
use docket::Docket;

use crate::auth::{find_grant, Grant, Session};
use crate::error::ApiError;
use crate::Shared;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "docket_session";

/// An API caller, authenticated by `Authorization: Bearer <token>` only.
#[derive(Clone, Debug)]
pub struct ApiCaller {
    /// The grant of the presented token.
    pub grant: Grant,
    /// The facade scoped to the grant's owner.
    pub docket: Docket,
}

impl ApiCaller {
    /// Refuses with 403 unless the grant may act.
    ///
    /// # Errors
    /// [`ApiError::forbidden`].
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.grant.role().may_act() {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }
}

/// The bearer token of a request, if it has a well-formed one.
#[must_use]
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

impl FromRequestParts<Shared> for ApiCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers).ok_or_else(ApiError::unauthorized)?;
        let grants = &state.config().grants;
        let index = find_grant(grants, token).ok_or_else(ApiError::unauthorized)?;
        let grant = grants[index].clone();
        let docket = grant.scope(state.docket());
        Ok(ApiCaller { grant, docket })
    }
}

/// An API caller whose token may act: 401 without a valid token, 403 with a read token.
#[derive(Clone, Debug)]
pub struct AdminCaller(pub ApiCaller);

impl FromRequestParts<Shared> for AdminCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, ApiError> {
        let caller = ApiCaller::from_request_parts(parts, state).await?;
        caller.require_admin()?;
        Ok(AdminCaller(caller))
    }
}

/// A page visitor with a live session (cookie `docket_session`).
#[derive(Clone, Debug)]
pub struct UiCaller {
    /// The grant the session was opened with.
    pub grant: Grant,
    /// The session (its CSRF token goes into every form).
    pub session: Session,
    /// The session id (to close it).
    pub session_id: String,
    /// The facade scoped to the grant's owner.
    pub docket: Docket,
}

/// The value of cookie `name`, if the request has one.
#[must_use]
pub fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    cookie_in(&parts.headers, name)
}

/// The value of cookie `name` in `headers`, if there is one.
#[must_use]
pub fn cookie_in<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A page request without a session: sent to the login page.
#[derive(Debug)]
pub struct LoginRequired;

impl axum::response::IntoResponse for LoginRequired {
    fn into_response(self) -> axum::response::Response {
        axum::response::Redirect::to("/ui/login").into_response()
    }
}

impl FromRequestParts<Shared> for UiCaller {
    type Rejection = LoginRequired;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, LoginRequired> {
        let id = cookie(parts, SESSION_COOKIE).ok_or(LoginRequired)?;
        let session = state.sessions().get(id).ok_or(LoginRequired)?;
        let grant = state
            .config()
            .grants
            .get(session.grant)
            .cloned()
            .ok_or(LoginRequired)?;
        let docket = grant.scope(state.docket());
        Ok(UiCaller {
            grant,
            session_id: id.to_owned(),
            session,
            docket,
        })
    }
}

/// A query string read into `T`; a malformed one is 400 `invalid_argument`.
#[derive(Debug)]
pub struct Q<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| Q(v))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// Path parameters read into `T`; malformed ones are 400 `invalid_argument`.
#[derive(Debug)]
pub struct P<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for P<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| P(v))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// A JSON body read into `T`, strictly (an object naming a key twice is refused, as run
/// input typed anywhere else is): 413 `payload_too_large` past the body limit, 415
/// `unsupported_media_type` without a JSON content type, 400 `invalid_json` for text that is
/// not JSON, 422 `invalid_body` for JSON of the wrong shape.
#[derive(Debug)]
pub struct J<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequest<S> for J<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let json_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json_type {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as application/json",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|e| body_rejection(e.status(), e.body_text()))?;
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                "the body is not UTF-8",
            )
        })?;
        let value = parse_json_strict(text)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", e.to_string()))?;
        serde_json::from_value(value).map(J).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                e.to_string(),
            )
        })
    }
}

/// The typed error of a body that could not be read.
#[must_use]
pub fn body_rejection(status: StatusCode, text: String) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than the console accepts",
        )
    } else {
        ApiError::bad_request(text)
    }
}
