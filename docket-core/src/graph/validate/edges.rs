//! Edges: ids, endpoints, source lists and guards.

use std::collections::BTreeSet;

use super::{check_public_id, shorten};
use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::{EdgeDecl, EdgeFrom, GraphDocument, FINISH, START};
use crate::graph::guard::Guard;

/// Runs the edges pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    for (id, edge) in &doc.edges {
        let path = pointer(&["edges", id]);
        check_public_id(id, &path, out);
        sources(doc, id, edge, &format!("{path}/from"), out);
        target(doc, id, edge, &format!("{path}/to"), out);
        if let Some(raw) = &edge.guard {
            guard(doc, id, raw, &format!("{path}/guard"), out);
        }
    }
}

fn sources(doc: &GraphDocument, id: &str, edge: &EdgeDecl, at: &str, out: &mut Vec<Diagnostic>) {
    let list = match &edge.from {
        EdgeFrom::One(source) => {
            if source == FINISH {
                out.push(
                    Diagnostic::error(
                        codes::INVALID_FINISH_ENDPOINT,
                        at,
                        "$finish cannot be an edge source",
                    )
                    .with_id(id),
                );
            } else if source != START && !doc.nodes.contains_key(source) {
                out.push(unknown_source(id, at, source));
            }
            return;
        }
        EdgeFrom::Many(list) => list,
    };
    if list.is_empty() {
        out.push(
            Diagnostic::error(
                codes::EMPTY_EDGE_SOURCES,
                at,
                "a source list needs at least one node",
            )
            .with_id(id),
        );
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, source) in list.iter().enumerate() {
        let at = format!("{at}/{i}");
        if !seen.insert(source.as_str()) {
            out.push(
                Diagnostic::error(
                    codes::DUPLICATE_EDGE_SOURCE,
                    &at,
                    format!("source {} is listed twice", shorten(source)),
                )
                .with_id(id),
            );
        } else if source == START {
            out.push(
                Diagnostic::error(
                    codes::INVALID_START_ENDPOINT,
                    &at,
                    "$start cannot be part of a source list",
                )
                .with_id(id),
            );
        } else if source == FINISH {
            out.push(
                Diagnostic::error(
                    codes::INVALID_FINISH_ENDPOINT,
                    &at,
                    "$finish cannot be part of a source list",
                )
                .with_id(id),
            );
        } else if !doc.nodes.contains_key(source) {
            out.push(unknown_source(id, &at, source));
        }
    }
}

fn unknown_source(id: &str, at: &str, source: &str) -> Diagnostic {
    Diagnostic::error(
        codes::UNKNOWN_EDGE_SOURCE,
        at,
        format!("edge source {} is not a node", shorten(source)),
    )
    .with_id(id)
}

fn target(doc: &GraphDocument, id: &str, edge: &EdgeDecl, at: &str, out: &mut Vec<Diagnostic>) {
    if edge.to == START {
        out.push(
            Diagnostic::error(
                codes::INVALID_START_ENDPOINT,
                at,
                "$start cannot be an edge target",
            )
            .with_id(id),
        );
    } else if edge.to != FINISH && !doc.nodes.contains_key(&edge.to) {
        out.push(
            Diagnostic::error(
                codes::UNKNOWN_EDGE_TARGET,
                at,
                format!("edge target {} is not a node", shorten(&edge.to)),
            )
            .with_id(id),
        );
    }
}

fn guard(
    doc: &GraphDocument,
    id: &str,
    raw: &serde_json::Value,
    at: &str,
    out: &mut Vec<Diagnostic>,
) {
    match Guard::parse(raw) {
        Err(e) => {
            let code = if e.is_path_error {
                codes::INVALID_GUARD_PATH
            } else {
                codes::INVALID_GUARD
            };
            let inner = if e.path == "/" { "" } else { e.path.as_str() };
            out.push(Diagnostic::error(code, format!("{at}{inner}"), e.message).with_id(id));
        }
        Ok(parsed) => {
            for field in parsed.fields() {
                if !doc.inputs.contains_key(&field) && !doc.fields.contains_key(&field) {
                    out.push(
                        Diagnostic::error(
                            codes::UNKNOWN_GUARD_FIELD,
                            at,
                            format!(
                                "guard reads {}, which is neither an input nor a field",
                                shorten(&field)
                            ),
                        )
                        .with_id(id),
                    );
                }
            }
        }
    }
}
