//! The runs page (filters, keyset paging, live status) with the start form, and the
//! poisoned-runs page with retry.

use std::fmt::Write as _;

use axum::extract::State;
use axum::response::{IntoResponse, Redirect};
use axum::Form;
use futures::stream::{self, StreamExt};
use serde::Deserialize;

use docket::core::model::{RunStatus, RunSummary};
use docket::parse_input;

use super::{check_action, csrf_field, may_act, render, PageResult, UiError};
use crate::api::actions::{start_run, StartBody};
use crate::api::graphs::known_graph_ids;
use crate::api::runs::{list_page, RunFilter};
use crate::error::ApiError;
use crate::extract::{UiCaller, Q};
use crate::facts::{newest, when};
use crate::html::escape;
use crate::paths::encode;
use crate::Shared;

/// One table row of a run.
fn row(s: &RunSummary, extra: &str) -> String {
    let id = escape(s.id.as_str());
    format!(
        "<tr class=\"run-row\" data-run-id=\"{id}\">\
         <td><a class=\"run-link\" href=\"/ui/runs/{href}\">{id}</a></td>\
         <td>{graph}</td>\
         <td class=\"run-status status-{status}\" data-status=\"{status}\">{status}</td>\
         <td class=\"run-step\">{step}</td><td>{started}</td><td>{finished}</td>{extra}</tr>",
        href = encode(s.id.as_str()),
        graph = escape(s.graph_id.as_str()),
        status = s.status.as_str(),
        step = s.step,
        started = escape(&s.started_at.to_rfc3339()),
        finished = escape(&when(s.finished_at)),
    )
}

/// The query string of a filter without its cursor, for the next-page link.
fn filter_query(filter: &RunFilter) -> String {
    let mut parts = Vec::new();
    for (name, value) in [
        ("status", filter.status.as_deref()),
        ("graph_id", filter.graph_id.as_deref()),
    ] {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            parts.push(format!("{name}={}", encode(v)));
        }
    }
    parts.join("&")
}

/// `GET /ui/runs`.
pub async fn list(caller: UiCaller, Q(filter): Q<RunFilter>) -> PageResult {
    let listed = list_page(&caller.docket, &filter).await?;
    let mut body = String::new();
    let status = filter.status.as_deref().unwrap_or("");
    let _ = write!(
        body,
        "<form method=\"get\" action=\"/ui/runs\" id=\"filter-form\">\
         <label>Status <select name=\"status\" id=\"filter-status\"><option value=\"\">any</option>"
    );
    for s in RunStatus::DURABLE {
        let selected = if status == s.as_str() {
            " selected"
        } else {
            ""
        };
        let _ = write!(body, "<option value=\"{s}\"{selected}>{s}</option>");
    }
    let _ = write!(
        body,
        "</select></label> <label>Graph <input name=\"graph_id\" id=\"filter-graph\" value=\"{}\"></label> \
         <button type=\"submit\">Filter</button></form>",
        escape(filter.graph_id.as_deref().unwrap_or(""))
    );
    let _ = write!(
        body,
        "<table id=\"runs\" data-live=\"runs\"><thead><tr><th>Run</th><th>Graph</th><th>Status</th>\
         <th>Step</th><th>Started</th><th>Finished</th></tr></thead><tbody>"
    );
    for s in &listed.page.runs {
        body.push_str(&row(s, ""));
    }
    body.push_str("</tbody></table>");
    if listed.page.runs.is_empty() {
        body.push_str("<p id=\"no-runs\">No runs match.</p>");
    }
    if let Some(cursor) = &listed.next_cursor {
        let query = filter_query(&filter);
        let sep = if query.is_empty() { "" } else { "&" };
        let _ = write!(
            body,
            "<p><a id=\"next-page\" href=\"/ui/runs?{query}{sep}cursor={}\">Next page</a></p>",
            encode(cursor)
        );
    }
    if may_act(&caller) {
        let graphs = known_graph_ids(&caller.docket)
            .await
            .map_err(|e| ApiError::from_docket(e, "graph_not_found"))?;
        let _ = write!(
            body,
            "<h2>Start a run</h2><form method=\"post\" action=\"/ui/runs\" id=\"start-form\">{}\
             <label>Graph <select name=\"graph_id\" id=\"start-graph\">",
            csrf_field(&caller)
        );
        for g in graphs {
            let g = escape(g.as_str());
            let _ = write!(body, "<option value=\"{g}\">{g}</option>");
        }
        body.push_str(
            "</select></label> <label>Input (JSON object) <textarea name=\"input\" id=\"start-input\" \
             rows=\"2\" cols=\"40\">{}</textarea></label> \
             <button type=\"submit\" id=\"start-submit\">Start</button></form>",
        );
    }
    Ok(render(&caller, "Runs", &body))
}

/// The start form.
#[derive(Debug, Deserialize)]
pub struct StartForm {
    csrf: String,
    graph_id: String,
    input: String,
}

/// `POST /ui/runs`: starts a run of the newest version and shows it.
pub async fn start(caller: UiCaller, Form(form): Form<StartForm>) -> PageResult {
    check_action(&caller, &form.csrf)?;
    let text = if form.input.trim().is_empty() {
        "{}"
    } else {
        form.input.as_str()
    };
    let input = parse_input(text).map_err(|e| ApiError::from_docket(e, "run_not_found"))?;
    let body = StartBody {
        graph_id: form.graph_id,
        graph_hash: None,
        input,
        run_id: None,
    };
    let run = start_run(&caller.docket, body).await?;
    let id = run["run"]["id"].as_str().unwrap_or_default();
    Ok(Redirect::to(&format!("/ui/runs/{}", encode(id))).into_response())
}

/// `GET /ui/poisoned`: poisoned runs among the newest running ones, each with a retry form.
pub async fn poisoned(State(console): State<Shared>, caller: UiCaller) -> PageResult {
    let cap = console.config().inspect_cap;
    let running = newest(&caller.docket, RunStatus::Running, cap)
        .await
        .map_err(|e| UiError(ApiError::from_docket(e, "run_not_found")))?;
    let docket = caller.docket.clone();
    let infos: Vec<_> = stream::iter(running.into_iter().map(|s| {
        let docket = docket.clone();
        async move { (docket.inspect_run(&s.id).await, s) }
    }))
    .buffered(8)
    .collect()
    .await;
    let mut body = format!(
        "<p>Poisoned runs among the newest {cap} running runs.</p>\
         <table id=\"poisoned\"><thead><tr><th>Run</th><th>Graph</th><th>Status</th><th>Step</th>\
         <th>Started</th><th>Finished</th><th>Reason</th><th></th></tr></thead><tbody>"
    );
    let mut any = false;
    for (info, summary) in infos {
        let Ok(info) = info else { continue };
        let Some(poison) = info.poison else { continue };
        any = true;
        let action = if may_act(&caller) {
            format!(
                "<form method=\"post\" class=\"retry-form\" action=\"/ui/runs/{}/retry\">{}\
                 <button type=\"submit\">Retry</button></form>",
                encode(summary.id.as_str()),
                csrf_field(&caller)
            )
        } else {
            String::new()
        };
        let extra = format!(
            "<td class=\"poison-reason\">{}</td><td>{action}</td>",
            poison.reason.as_str()
        );
        body.push_str(&row(&summary, &extra));
    }
    body.push_str("</tbody></table>");
    if !any {
        body.push_str("<p id=\"no-poisoned\">No poisoned runs.</p>");
    }
    Ok(render(&caller, "Poisoned runs", &body))
}
