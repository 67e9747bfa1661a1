//! `non_durable_graph_value`: the open parts of a document (config, policies, metadata and
//! defaults) must be portable values, because the effective document is stored and hashed.
//!
//! Schemas, reducers and guards are structural and judged by their own passes; guards
//! legitimately use the reserved `$path` key.

use serde_json::Value;

use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::GraphDocument;
use crate::model::value::{check_portable, check_portable_map, ValueError};
use crate::model::ValueMap;

/// Runs the durability pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    map(&doc.policies, &["policies"], &doc.id, out);
    map(&doc.metadata, &["metadata"], &doc.id, out);
    for (id, input) in &doc.inputs {
        value(input.default.as_ref(), &["inputs", id, "default"], id, out);
        map(&input.metadata, &["inputs", id, "metadata"], id, out);
    }
    for (id, field) in &doc.fields {
        value(field.default.as_ref(), &["fields", id, "default"], id, out);
        map(&field.metadata, &["fields", id, "metadata"], id, out);
    }
    for (id, output) in &doc.outputs {
        map(&output.metadata, &["outputs", id, "metadata"], id, out);
    }
    for (id, node) in &doc.nodes {
        map(&node.config, &["nodes", id, "config"], id, out);
        map(&node.policies, &["nodes", id, "policies"], id, out);
        map(&node.metadata, &["nodes", id, "metadata"], id, out);
    }
    for (id, edge) in &doc.edges {
        map(&edge.metadata, &["edges", id, "metadata"], id, out);
    }
}

fn map(map: &ValueMap, at: &[&str], id: &str, out: &mut Vec<Diagnostic>) {
    if let Err(error) = check_portable_map(map) {
        report(&error, at, id, out);
    }
}

fn value(value: Option<&Value>, at: &[&str], id: &str, out: &mut Vec<Diagnostic>) {
    if let Some(Err(error)) = value.map(check_portable) {
        report(&error, at, id, out);
    }
}

fn report(error: &ValueError, at: &[&str], id: &str, out: &mut Vec<Diagnostic>) {
    let base = pointer(at);
    let inner = match error {
        ValueError::ReservedKey { key, path } => format!("{}/{key}", trim_root(path)),
        ValueError::TooDeep { path } | ValueError::NotAMap { path, .. } => {
            trim_root(path).to_owned()
        }
    };
    out.push(
        Diagnostic::error(
            codes::NON_DURABLE_GRAPH_VALUE,
            format!("{base}{inner}"),
            format!("not a durable value: {error}"),
        )
        .with_id(id),
    );
}

fn trim_root(path: &str) -> &str {
    if path == "/" {
        ""
    } else {
        path
    }
}
