//! Validation passes (spec §6.3). Every pass always runs; all findings are returned.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::compile::{CompileOptions, NodeSchemas};
use super::diagnostic::Diagnostic;
use super::document::{GraphDocument, FINISH, SCHEMA_VERSION, START};
use super::guard::Guard;
use super::policy::{graph_max_supersteps, NodePolicies};
use super::reducer::Reducer;
use super::schema::Schema;
use crate::model::ids::MAX_ID_BYTES;

/// Runs every pass over `doc`.
#[must_use]
pub fn validate(
    doc: &GraphDocument,
    schemas: &NodeSchemas,
    _options: CompileOptions,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    document(doc, &mut out);
    fields(doc, &mut out);
    nodes(doc, schemas, &mut out);
    edges(doc, &mut out);
    out
}

static PUBLIC_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^[A-Za-z0-9][A-Za-z0-9_-]*$").expect("the public id pattern is a valid literal")
});

/// Whether `id` is a valid public id: `^[A-Za-z0-9][A-Za-z0-9_-]*$`, at most 255 bytes.
#[must_use]
pub fn public_id_ok(id: &str) -> bool {
    id.len() <= MAX_ID_BYTES && PUBLIC_ID.is_match(id)
}

fn document(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    if doc.schema_version != SCHEMA_VERSION {
        out.push(Diagnostic::error(
            "unsupported_schema_version",
            "/schema_version",
            format!(
                "schema_version {} is not supported (expected {SCHEMA_VERSION})",
                doc.schema_version
            ),
        ));
    }
    if !public_id_ok(&doc.id) {
        out.push(Diagnostic::error(
            "invalid_public_id",
            "/id",
            format!("graph id {:?} is not a valid public id", doc.id),
        ));
    }
    if let Err(reason) = graph_max_supersteps(&doc.policies) {
        out.push(Diagnostic::error(
            "invalid_policy",
            "/policies/max_supersteps",
            reason,
        ));
    }
}

fn fields(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    for (id, input) in &doc.inputs {
        let path = format!("/inputs/{id}");
        check_id(id, &path, out);
        check_schema(input.schema.as_ref(), &path, id, out);
    }
    for (id, field) in &doc.fields {
        let path = format!("/fields/{id}");
        check_id(id, &path, out);
        if doc.inputs.contains_key(id) {
            out.push(
                Diagnostic::error(
                    "duplicate_state_id",
                    &path,
                    format!("{id:?} is both an input and a field"),
                )
                .with_id(id),
            );
        }
        check_schema(field.schema.as_ref(), &path, id, out);
        if let Err(reasons) = Reducer::parse(field.reducer.as_ref()) {
            out.push(
                Diagnostic::error(
                    "invalid_reducer",
                    format!("{path}/reducer"),
                    reasons.join("; "),
                )
                .with_id(id),
            );
        }
    }
}

fn check_id(id: &str, path: &str, out: &mut Vec<Diagnostic>) {
    if id.starts_with('$') {
        out.push(Diagnostic::error("reserved_id", path, format!("{id:?} is reserved")).with_id(id));
    } else if !public_id_ok(id) {
        out.push(
            Diagnostic::error(
                "invalid_public_id",
                path,
                format!("{id:?} is not a valid public id"),
            )
            .with_id(id),
        );
    }
}

fn check_schema(raw: Option<&serde_json::Value>, path: &str, id: &str, out: &mut Vec<Diagnostic>) {
    match raw {
        None => out.push(
            Diagnostic::error(
                "missing_field_schema",
                path,
                format!("{id:?} has no schema"),
            )
            .with_id(id),
        ),
        Some(raw) => {
            if let Err(reasons) = Schema::parse(raw) {
                out.push(
                    Diagnostic::error(
                        "invalid_schema",
                        format!("{path}/schema"),
                        reasons.join("; "),
                    )
                    .with_id(id),
                );
            }
        }
    }
}

fn nodes(doc: &GraphDocument, schemas: &NodeSchemas, out: &mut Vec<Diagnostic>) {
    for (id, node) in &doc.nodes {
        let path = format!("/nodes/{id}");
        check_id(id, &path, out);
        match &node.implementation {
            None => out.push(
                Diagnostic::error(
                    "missing_node_implementation",
                    format!("{path}/implementation"),
                    "node has no implementation",
                )
                .with_id(id),
            ),
            Some(name) if schemas.missing.contains(name) => out.push(
                Diagnostic::error(
                    "node_module_not_loaded",
                    format!("{path}/implementation"),
                    format!("no implementation is registered as {name:?}"),
                )
                .with_id(id),
            ),
            Some(_) => {}
        }
        if let Err(reasons) = NodePolicies::resolve(&node.policies) {
            for reason in reasons {
                out.push(
                    Diagnostic::error("invalid_policy", format!("{path}/policies"), reason)
                        .with_id(id),
                );
            }
        }
    }
}

fn edges(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    let node_ids: BTreeSet<&str> = doc.nodes.keys().map(String::as_str).collect();
    for (id, edge) in &doc.edges {
        let path = format!("/edges/{id}");
        check_id(id, &path, out);
        for source in edge.from.ids() {
            if source == START && edge.from.is_barrier() {
                out.push(
                    Diagnostic::error(
                        "invalid_start_endpoint",
                        format!("{path}/from"),
                        "$start cannot be part of a barrier list",
                    )
                    .with_id(id),
                );
            } else if source == FINISH {
                out.push(
                    Diagnostic::error(
                        "invalid_finish_endpoint",
                        format!("{path}/from"),
                        "$finish cannot be a source",
                    )
                    .with_id(id),
                );
            } else if source != START && !node_ids.contains(source) {
                out.push(
                    Diagnostic::error(
                        "unknown_edge_source",
                        format!("{path}/from"),
                        format!("unknown source {source:?}"),
                    )
                    .with_id(id),
                );
            }
        }
        if edge.to == START {
            out.push(
                Diagnostic::error(
                    "invalid_start_endpoint",
                    format!("{path}/to"),
                    "$start cannot be a target",
                )
                .with_id(id),
            );
        } else if edge.to != FINISH && !node_ids.contains(edge.to.as_str()) {
            out.push(
                Diagnostic::error(
                    "unknown_edge_target",
                    format!("{path}/to"),
                    format!("unknown target {:?}", edge.to),
                )
                .with_id(id),
            );
        }
        if let Some(guard) = &edge.guard {
            if let Err(e) = Guard::parse(guard) {
                let code = if e.is_path_error {
                    "invalid_guard_path"
                } else {
                    "invalid_guard"
                };
                out.push(
                    Diagnostic::error(code, format!("{path}/guard"), e.to_string()).with_id(id),
                );
            }
        }
    }
}
