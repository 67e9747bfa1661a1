//! Login and logout. The login form is protected from cross-site posting by a double-submit
//! token: `GET /ui/login` sets a short-lived `docket_login` cookie (HttpOnly, SameSite=Strict)
//! and puts the same random value in the form; the POST must carry both.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::auth::{find_grant, random_token, same_secret};
use crate::extract::{UiCaller, SESSION_COOKIE};
use crate::html::{escape, page};
use crate::Shared;

const LOGIN_COOKIE: &str = "docket_login";

fn login_page(status: StatusCode, message: &str) -> Response {
    let nonce = random_token();
    let note = if message.is_empty() {
        String::new()
    } else {
        format!(
            "<p id=\"login-error\" class=\"error\">{}</p>",
            escape(message)
        )
    };
    let body = format!(
        "{note}<form method=\"post\" action=\"/ui/login\" id=\"login-form\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{nonce}\">\
         <label>Token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\"></label>\
         <button type=\"submit\" id=\"login-submit\">Log in</button></form>"
    );
    let mut response = (status, Html(page("Log in", "", None, &body))).into_response();
    if let Ok(cookie) = HeaderValue::from_str(&format!(
        "{LOGIN_COOKIE}={nonce}; HttpOnly; SameSite=Strict; Path=/ui/login; Max-Age=600"
    )) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// `GET /ui/login`.
pub async fn form() -> Response {
    login_page(StatusCode::OK, "")
}

/// The login form.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    token: String,
    csrf: String,
}

/// `POST /ui/login`: a valid token opens a session (cookie `docket_session`).
pub async fn submit(
    State(console): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let nonce = crate::extract::cookie_in(&headers, LOGIN_COOKIE).unwrap_or_default();
    if nonce.is_empty() || !same_secret(nonce, &form.csrf) {
        return login_page(StatusCode::FORBIDDEN, "The login form expired; try again.");
    }
    let Some(grant) = find_grant(&console.config().grants, &form.token) else {
        return login_page(StatusCode::UNAUTHORIZED, "That token is not accepted.");
    };
    let session = console.sessions().open(grant);
    let mut response = Redirect::to("/ui/runs").into_response();
    if let Ok(cookie) = HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"
    )) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The logout form.
#[derive(Debug, Deserialize)]
pub struct LogoutForm {
    csrf: String,
}

/// `POST /ui/logout`.
pub async fn logout(
    State(console): State<Shared>,
    caller: UiCaller,
    Form(form): Form<LogoutForm>,
) -> Response {
    if !same_secret(&form.csrf, &caller.session.csrf) {
        return (StatusCode::FORBIDDEN, "csrf_failed").into_response();
    }
    console.sessions().close(&caller.session_id);
    let mut response = Redirect::to("/ui/login").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static("docket_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    response
}
