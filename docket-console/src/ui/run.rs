//! The run page: status, input and output, the event timeline, the state at a chosen
//! checkpoint, open interrupts with a resolve form, the graph with the current superstep
//! highlighted, and the cancel and retry forms.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use axum::response::{IntoResponse, Redirect};
use axum::Form;
use serde::Deserialize;
use serde_json::Value;

use docket::core::model::{
    parse_json_strict, EventQuery, GraphRef, InterruptStatus, RunId, RunInfo, MAX_PAGE_LIMIT,
};

use super::{check_action, csrf_field, graph_svg, may_act, render, PageResult, UiError};
use crate::api::actions::{cancel_run, resolve_run, retry_run};
use crate::api::runs::run_id_of;
use crate::error::ApiError;
use crate::extract::{UiCaller, P, Q};
use crate::facts::when;
use crate::html::{escape, json_text};
use crate::paths::encode;
use crate::state::at_checkpoint;

/// Query of the run page.
#[derive(Debug, Deserialize)]
pub struct RunPageQuery {
    /// The checkpoint to show the state at.
    checkpoint: Option<u64>,
}

fn not_found(e: docket::DocketError) -> UiError {
    UiError(ApiError::from_docket(e, "run_not_found"))
}

/// `GET /ui/runs/{run_id}`.
pub async fn show(caller: UiCaller, P(raw): P<String>, Q(query): Q<RunPageQuery>) -> PageResult {
    let run_id = run_id_of(&raw)?;
    let info = caller
        .docket
        .inspect_run(&run_id)
        .await
        .map_err(not_found)?;
    let run = &info.run;
    let id = escape(run.id.as_str());
    let href = encode(run.id.as_str());
    let mut body = String::new();
    let _ = write!(
        body,
        "<section id=\"run\" data-run-id=\"{id}\" data-checkpoint-seq=\"{seq}\">\
         <dl><dt>Run</dt><dd id=\"run-id\">{id}</dd>\
         <dt>Graph</dt><dd><a id=\"run-graph\" href=\"/ui/graphs/{gid_href}/{hash_href}\">{gid}</a> \
         <code>{hash}</code></dd>\
         <dt>Status</dt><dd id=\"run-status\" class=\"run-status status-{status}\" data-run-id=\"{id}\" \
         data-status=\"{status}\">{status}</dd>\
         <dt>Step</dt><dd id=\"run-step\">{step}</dd><dt>Checkpoint</dt><dd id=\"run-checkpoint\">{seq}</dd>\
         <dt>Started</dt><dd>{started}</dd><dt>Updated</dt><dd>{updated}</dd>\
         <dt>Finished</dt><dd>{finished}</dd>{tenant}</dl></section>",
        gid = escape(run.graph_id.as_str()),
        gid_href = encode(run.graph_id.as_str()),
        hash = escape(run.graph_hash.as_str()),
        hash_href = encode(run.graph_hash.as_str()),
        status = run.status.as_str(),
        step = run.step,
        seq = run.checkpoint_seq,
        started = escape(&when(run.started_at)),
        updated = escape(&when(run.updated_at)),
        finished = escape(&when(run.finished_at)),
        tenant = info
            .owner
            .tenant_id()
            .map(|t| format!("<dt>Tenant</dt><dd>{}</dd>", escape(t.as_str())))
            .unwrap_or_default(),
    );
    operational(&mut body, &caller, &info);
    let _ = write!(
        body,
        "<h2>Input</h2><pre id=\"run-input\">{}</pre>",
        json_text(&Value::Object(run.input.clone()))
    );
    if let Some(output) = &run.output {
        let _ = write!(
            body,
            "<h2>Output</h2><pre id=\"run-output\">{}</pre>",
            json_text(&Value::Object(output.clone()))
        );
    }
    if let Some(failure) = &run.failure {
        let _ = write!(
            body,
            "<h2>Failure</h2><pre id=\"run-failure\">{}</pre>",
            json_text(&serde_json::to_value(failure).unwrap_or_default())
        );
    }
    interrupts(&mut body, &caller, &info);
    // The current superstep: nodes with parked tasks or pending activation.
    let active: BTreeSet<String> = run
        .active_tasks
        .values()
        .map(|t| t.node_id.clone())
        .chain(run.pending_nodes.iter().cloned())
        .collect();
    let graph_ref = GraphRef {
        graph_id: run.graph_id.clone(),
        graph_hash: run.graph_hash.clone(),
    };
    body.push_str("<h2>Graph</h2>");
    match caller.docket.fetch_graph(&graph_ref).await {
        Ok(doc) => body.push_str(&graph_svg(&doc, &active)),
        Err(_) => body.push_str("<p>The graph version is not readable.</p>"),
    }
    checkpoint(
        &mut body,
        &caller,
        &run_id,
        &href,
        run.checkpoint_seq,
        query.checkpoint,
    )
    .await?;
    timeline(&mut body, &caller, &run_id).await?;
    Ok(render(&caller, &format!("Run {}", run.id.as_str()), &body))
}

fn operational(body: &mut String, caller: &UiCaller, info: &RunInfo) {
    let href = encode(info.run.id.as_str());
    if let Some(poison) = &info.poison {
        let _ = write!(
            body,
            "<p id=\"run-poisoned\" class=\"poisoned\">Poisoned ({}) at {}.</p>",
            poison.reason.as_str(),
            escape(&poison.poisoned_at.to_rfc3339())
        );
        if may_act(caller) {
            let _ = write!(
                body,
                "<form method=\"post\" id=\"retry-form\" class=\"retry-form\" action=\"/ui/runs/{href}/retry\">{}\
                 <button type=\"submit\">Retry</button></form>",
                csrf_field(caller)
            );
        }
    }
    if !info.run.status.is_terminal() && may_act(caller) {
        let _ = write!(
            body,
            "<form method=\"post\" id=\"cancel-form\" action=\"/ui/runs/{href}/cancel\">{}\
             <button type=\"submit\" id=\"cancel-submit\">Cancel run</button></form>",
            csrf_field(caller)
        );
    }
    let _ = write!(
        body,
        "<p class=\"operational\">Claimed at: {} · wake at: {} · claim attempts: {} · hand-backs: {}</p>",
        escape(&when(info.claimed_at)),
        escape(&when(info.wake_at)),
        info.claim_attempts,
        info.claim_abandons
    );
}

fn interrupts(body: &mut String, caller: &UiCaller, info: &RunInfo) {
    let open: Vec<_> = info
        .run
        .interrupts
        .values()
        .filter(|i| i.status == InterruptStatus::Open)
        .collect();
    if open.is_empty() {
        return;
    }
    body.push_str("<h2>Open interrupts</h2>");
    let href = encode(info.run.id.as_str());
    for (n, interrupt) in open.into_iter().enumerate() {
        let form_id = if n == 0 {
            "resolve-form".to_owned()
        } else {
            format!("resolve-form-{}", n + 1)
        };
        let _ = write!(
            body,
            "<div class=\"interrupt\" data-interrupt-id=\"{iid}\"><p>Interrupt <code>{iid}</code> of node \
             <code>{node}</code> (resumes <code>{channel}</code>)</p><pre class=\"interrupt-metadata\">{meta}</pre>",
            iid = escape(&interrupt.id),
            node = escape(&interrupt.node_id),
            channel = escape(&interrupt.resume_channel),
            meta = json_text(&Value::Object(interrupt.metadata.clone())),
        );
        if may_act(caller) {
            let _ = write!(
                body,
                "<form method=\"post\" id=\"{form_id}\" class=\"resolve-form\" \
                 action=\"/ui/runs/{href}/interrupts/{iid_href}/resolve\">{csrf}\
                 <label>Value (JSON) <textarea name=\"value\" class=\"resolve-value\" rows=\"2\" cols=\"30\">true</textarea></label>\
                 <button type=\"submit\" class=\"resolve-submit\">Resolve</button></form>",
                iid_href = encode(&interrupt.id),
                csrf = csrf_field(caller),
            );
        }
        body.push_str("</div>");
    }
}

async fn checkpoint(
    body: &mut String,
    caller: &UiCaller,
    run_id: &RunId,
    href: &str,
    latest: u64,
    chosen: Option<u64>,
) -> Result<(), UiError> {
    let _ = write!(
        body,
        "<h2>State at a checkpoint</h2><form method=\"get\" action=\"/ui/runs/{href}\" id=\"checkpoint-form\">\
         <select name=\"checkpoint\" id=\"checkpoint-select\">"
    );
    // The newest checkpoints first; a very long history offers its last thousand.
    for n in (latest.saturating_sub(999).max(1)..=latest).rev() {
        let selected = if chosen == Some(n) { " selected" } else { "" };
        let _ = write!(body, "<option value=\"{n}\"{selected}>{n}</option>");
    }
    body.push_str("</select> <button type=\"submit\">Show</button></form>");
    let Some(n) = chosen else { return Ok(()) };
    let state = at_checkpoint(&caller.docket, run_id, n)
        .await
        .map_err(not_found)?
        .ok_or_else(|| ApiError::not_found("checkpoint_not_found", "no such checkpoint"))?;
    let _ = write!(
        body,
        "<section id=\"checkpoint-state\" data-checkpoint=\"{n}\"><h3>Checkpoint {n} of {latest}</h3>\
         <pre id=\"checkpoint-envelope\">{}</pre><table id=\"checkpoint-channels\"><thead><tr><th>Channel</th>\
         <th>Then</th><th>Value</th><th>Touched at</th></tr></thead><tbody>",
        json_text(&state.envelope)
    );
    for channel in &state.channels {
        let value = channel
            .value
            .as_ref()
            .map(json_text)
            .unwrap_or_else(|| "—".to_owned());
        let touched: Vec<String> = channel.touched_at.iter().map(u64::to_string).collect();
        let _ = write!(
            body,
            "<tr class=\"channel-row\" data-channel=\"{id}\"><td>{id}</td><td>{status}</td>\
             <td><pre>{value}</pre></td><td>{touched}</td></tr>",
            id = escape(&channel.channel_id),
            status = channel.status,
            touched = touched.join(", "),
        );
    }
    body.push_str("</tbody></table></section>");
    Ok(())
}

async fn timeline(body: &mut String, caller: &UiCaller, run_id: &RunId) -> Result<(), UiError> {
    let page = caller
        .docket
        .list_events(
            run_id,
            &EventQuery {
                after_seq: 0,
                limit: MAX_PAGE_LIMIT,
            },
        )
        .await
        .map_err(not_found)?;
    body.push_str(
        "<h2>Events</h2><table id=\"timeline\"><thead><tr><th>Seq</th><th>Type</th><th>Step</th>\
         <th>Node</th><th>Channel</th><th>Payload</th></tr></thead><tbody>",
    );
    for event in &page.events {
        let _ = write!(
            body,
            "<tr class=\"event-row\" data-seq=\"{seq}\"><td>{seq}</td><td class=\"event-type\">{kind}</td>\
             <td>{step}</td><td>{node}</td><td>{channel}</td><td><pre>{payload}</pre></td></tr>",
            seq = event.seq,
            kind = event.event_type.as_str(),
            step = event.step,
            node = escape(event.node_id.as_deref().unwrap_or("")),
            channel = escape(event.channel_id.as_deref().unwrap_or("")),
            payload = json_text(&Value::Object(event.payload.clone())),
        );
    }
    body.push_str("</tbody></table>");
    if page.has_more {
        body.push_str("<p>The first 1000 events are shown; the API pages through the rest.</p>");
    }
    Ok(())
}

/// A form carrying only the CSRF token.
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// `POST /ui/runs/{run_id}/cancel`.
pub async fn cancel(caller: UiCaller, P(raw): P<String>, Form(form): Form<CsrfForm>) -> PageResult {
    check_action(&caller, &form.csrf)?;
    let run_id = run_id_of(&raw)?;
    cancel_run(&caller.docket, &run_id).await?;
    Ok(back_to(&run_id))
}

/// `POST /ui/runs/{run_id}/retry`.
pub async fn retry(caller: UiCaller, P(raw): P<String>, Form(form): Form<CsrfForm>) -> PageResult {
    check_action(&caller, &form.csrf)?;
    let run_id = run_id_of(&raw)?;
    retry_run(&caller.docket, &run_id).await?;
    Ok(back_to(&run_id))
}

/// The resolve form.
#[derive(Debug, Deserialize)]
pub struct ResolveForm {
    csrf: String,
    value: String,
}

/// `POST /ui/runs/{run_id}/interrupts/{interrupt_id}/resolve`.
pub async fn resolve(
    caller: UiCaller,
    P((raw, interrupt_id)): P<(String, String)>,
    Form(form): Form<ResolveForm>,
) -> PageResult {
    check_action(&caller, &form.csrf)?;
    let run_id = run_id_of(&raw)?;
    let value = parse_json_strict(&form.value).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the value is not JSON: {e}"),
        )
    })?;
    resolve_run(&caller.docket, &run_id, &interrupt_id, value).await?;
    Ok(back_to(&run_id))
}

fn back_to(run_id: &RunId) -> axum::response::Response {
    Redirect::to(&format!("/ui/runs/{}", encode(run_id.as_str()))).into_response()
}
