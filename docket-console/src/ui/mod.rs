//! The pages under `/ui/` (`docs/console.md`, “Pages”): server-rendered HTML, authenticated by
//! the session cookie, every form carrying the session's CSRF token.

mod graph_svg;
mod graphs;
mod live;
mod login;
mod run;
mod runs;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::auth::same_secret;
use crate::error::ApiError;
use crate::extract::UiCaller;
use crate::html::{escape, page};
use crate::Shared;

pub use graph_svg::graph_svg;

const CONSOLE_JS: &str = include_str!("../../assets/console.js");
const CONSOLE_CSS: &str = include_str!("../../assets/console.css");

/// The page routes.
pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/ui/login", get(login::form).post(login::submit))
        .route("/ui/logout", post(login::logout))
        .route("/ui/runs", get(runs::list).post(runs::start))
        .route("/ui/runs/{run_id}", get(run::show))
        .route("/ui/runs/{run_id}/cancel", post(run::cancel))
        .route("/ui/runs/{run_id}/retry", post(run::retry))
        .route(
            "/ui/runs/{run_id}/interrupts/{interrupt_id}/resolve",
            post(run::resolve),
        )
        .route("/ui/poisoned", get(runs::poisoned))
        .route("/ui/graphs", get(graphs::list))
        .route("/ui/graphs/{graph_id}/{graph_hash}", get(graphs::show))
        .route("/ui/engine", get(graphs::engine))
        .route("/ui/events", get(live::events))
        .route("/ui/assets/console.js", get(script))
        .route("/ui/assets/console.css", get(style))
}

/// `/` → the runs page.
pub async fn home() -> Redirect {
    Redirect::to("/ui/runs")
}

async fn script() -> Response {
    asset(CONSOLE_JS, "text/javascript; charset=utf-8")
}

async fn style() -> Response {
    asset(CONSOLE_CSS, "text/css; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// An error shown as a page (same status and code as the API would answer).
#[derive(Debug)]
pub struct UiError(pub ApiError);

impl From<ApiError> for UiError {
    fn from(e: ApiError) -> Self {
        UiError(e)
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let body = format!(
            "<p id=\"error\" class=\"error\" data-code=\"{code}\">{message}</p>\
             <p><a href=\"/ui/runs\">Back to the runs</a></p>",
            code = escape(self.0.code),
            message = escape(&self.0.message),
        );
        let title = format!("Error {}", self.0.status.as_u16());
        (self.0.status, Html(page(&title, "", None, &body))).into_response()
    }
}

/// The result of a page handler.
pub type PageResult = Result<Response, UiError>;

/// A page for `caller` with the frame.
fn render(caller: &UiCaller, title: &str, body: &str) -> Response {
    let who = match caller.grant.tenant() {
        Some(t) => format!("{} · tenant {}", caller.grant.role().as_str(), t.as_str()),
        None => caller.grant.role().as_str().to_owned(),
    };
    Html(page(title, &who, Some(&caller.session.csrf), body)).into_response()
}

/// The hidden CSRF field of a form.
fn csrf_field(caller: &UiCaller) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(&caller.session.csrf)
    )
}

/// Refuses a POST whose CSRF token is not the session's (403 `csrf_failed`) or whose grant
/// may not act (403 `forbidden`).
fn check_action(caller: &UiCaller, csrf: &str) -> Result<(), UiError> {
    if !same_secret(csrf, &caller.session.csrf) {
        return Err(UiError(ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf_failed",
            "the form's CSRF token does not match this session; reload the page",
        )));
    }
    if !caller.grant.role().may_act() {
        return Err(UiError(ApiError::forbidden()));
    }
    Ok(())
}

/// Whether the caller may act (forms for actions are only shown then).
fn may_act(caller: &UiCaller) -> bool {
    caller.grant.role().may_act()
}
