//! The graphs page, one graph version (picture and document), and the engine facts page.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use axum::extract::State;
use serde_json::Value;

use super::{graph_svg, render, PageResult, UiError};
use crate::api::graphs::{graph_ref_of, graphs_json};
use crate::error::ApiError;
use crate::extract::{UiCaller, P};
use crate::html::{escape, json_text};
use crate::paths::encode;
use crate::Shared;

/// `GET /ui/graphs`.
pub async fn list(caller: UiCaller) -> PageResult {
    let graphs = graphs_json(&caller.docket)
        .await
        .map_err(|e| UiError(ApiError::from_docket(e, "graph_not_found")))?;
    let mut body = String::from(
        "<table id=\"graphs\"><thead><tr><th>Graph</th><th>Version</th><th>Published</th></tr></thead><tbody>",
    );
    for graph in graphs["graphs"].as_array().into_iter().flatten() {
        let id = graph["graph_id"].as_str().unwrap_or_default();
        for version in graph["versions"].as_array().into_iter().flatten() {
            let hash = version["graph_hash"].as_str().unwrap_or_default();
            let _ = write!(
                body,
                "<tr class=\"graph-row\" data-graph-id=\"{eid}\"><td>{eid}</td>\
                 <td><a href=\"/ui/graphs/{hid}/{hhash}\"><code>{ehash}</code></a></td><td>{at}</td></tr>",
                eid = escape(id),
                hid = encode(id),
                hhash = encode(hash),
                ehash = escape(hash),
                at = escape(version["published_at"].as_str().unwrap_or_default()),
            );
        }
    }
    body.push_str("</tbody></table>");
    Ok(render(&caller, "Graphs", &body))
}

/// `GET /ui/graphs/{graph_id}/{graph_hash}`.
pub async fn show(caller: UiCaller, P((graph_id, graph_hash)): P<(String, String)>) -> PageResult {
    let graph_ref = graph_ref_of(&graph_id, &graph_hash)?;
    let doc = caller
        .docket
        .fetch_graph(&graph_ref)
        .await
        .map_err(|e| UiError(ApiError::from_docket(e, "graph_not_found")))?;
    let mut body = graph_svg(&doc, &BTreeSet::new());
    let _ = write!(
        body,
        "<h2>Document</h2><pre id=\"graph-document\">{}</pre>",
        json_text(&serde_json::to_value(&doc).unwrap_or(Value::Null))
    );
    let title = format!("Graph {}", graph_ref.graph_id.as_str());
    Ok(render(&caller, &title, &body))
}

/// `GET /ui/engine`.
pub async fn engine(State(console): State<Shared>, caller: UiCaller) -> PageResult {
    let facts = console
        .facts()
        .get(&caller.docket, console.config().inspect_cap)
        .await
        .map_err(|e| UiError(ApiError::from_docket(e, "not_found")))?;
    let mut body = String::from("<table id=\"engine-runs\"><tbody>");
    for count in &facts.runs {
        let more = if count.capped { "+" } else { "" };
        let _ = write!(
            body,
            "<tr data-status=\"{s}\"><th>{s}</th><td>{c}{more}</td></tr>",
            s = count.status,
            c = count.count
        );
    }
    let _ = write!(
        body,
        "</tbody></table><h2>Running runs ({} inspected{})</h2><table id=\"engine-queue\"><tbody>",
        facts.inspected,
        if facts.inspected_all { ", all" } else { "" }
    );
    for (name, value) in [
        ("due", facts.due),
        ("claimed", facts.claimed),
        ("expired claim", facts.expired),
        ("poisoned", facts.poisoned),
        ("scheduled", facts.scheduled),
    ] {
        let _ = write!(body, "<tr><th>{name}</th><td>{value}</td></tr>");
    }
    body.push_str("</tbody></table>");
    Ok(render(&caller, "Engine", &body))
}
