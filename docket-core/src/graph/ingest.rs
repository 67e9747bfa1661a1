//! Reading the JSON wire format with diagnostics instead of one opaque parse error (the ingest
//! step of `docs/graphs.md`, “The compiler pipeline”).
//!
//! [`GraphDocument::from_json`] stops at the first serde error and has no path. The functions
//! here judge the document piece by piece, so each problem gets its catalogue code and a
//! JSON-pointer path:
//!
//! * `duplicate_key`: an object names the same key twice (two nodes `a`, two `id`s), which a
//!   JSON parser would resolve silently by keeping the last;
//! * `invalid_document`: not JSON, not an object, an unknown top-level key, a missing or
//!   non-string `id`, a non-string `name`/`description`, a collection or `policies`/`metadata`
//!   that is not an object;
//! * `unsupported_schema_version`: `schema_version` other than the integer 1 (nothing else is
//!   judged, since other versions may have another shape);
//! * `invalid_field`: an input or field record of the wrong shape (unknown key, wrong type);
//! * `invalid_record`: an output, node or edge record of the wrong shape.
//!
//! A document that ingests still has to pass the compiler's validation.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::codes;
use super::diagnostic::{pointer, Diagnostic};
use super::document::{
    EdgeDecl, FieldDecl, GraphDocument, InputDecl, NodeDecl, OutputDecl, SCHEMA_VERSION,
};
use crate::model::{parse_json_strict, JsonError};

const TOP_LEVEL: &[&str] = &[
    "schema_version",
    "id",
    "name",
    "description",
    "inputs",
    "fields",
    "outputs",
    "nodes",
    "edges",
    "policies",
    "metadata",
];

/// Parses the JSON wire format, reporting every structural problem.
///
/// # Errors
/// The diagnostics (all error severity) when the text is not a well-formed document.
pub fn parse_document(text: &str) -> Result<GraphDocument, Vec<Diagnostic>> {
    let value = parse_json_strict(text).map_err(|e| {
        vec![match e {
            JsonError::DuplicateKey { ref key, ref path } => {
                Diagnostic::error(codes::DUPLICATE_KEY, path.clone(), e.to_string())
                    .with_id(key.clone())
            }
            JsonError::Syntax { reason } => Diagnostic::error(
                codes::INVALID_DOCUMENT,
                "",
                format!("not a JSON document: {reason}"),
            ),
        }]
    })?;
    parse_document_value(value)
}

/// Interprets a JSON value as a graph document, reporting every structural problem.
///
/// # Errors
/// The diagnostics (all error severity) when the value is not a well-formed document.
pub fn parse_document_value(value: Value) -> Result<GraphDocument, Vec<Diagnostic>> {
    let Value::Object(map) = &value else {
        return Err(vec![Diagnostic::error(
            codes::INVALID_DOCUMENT,
            "",
            "a graph document is a JSON object",
        )]);
    };
    match map.get("schema_version") {
        None => {
            return Err(vec![Diagnostic::error(
                codes::INVALID_DOCUMENT,
                "/schema_version",
                "schema_version is required",
            )])
        }
        Some(v) if v.as_u64() != Some(SCHEMA_VERSION) => {
            let d = Diagnostic::error(
                codes::UNSUPPORTED_SCHEMA_VERSION,
                "/schema_version",
                format!("schema_version {v} is not supported (expected {SCHEMA_VERSION})"),
            );
            return Err(vec![match map.get("id").and_then(Value::as_str) {
                Some(id) => d.with_id(id),
                None => d,
            }]);
        }
        Some(_) => {}
    }
    let graph_id = map.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut out = Vec::new();
    let mut document = |path: String, message: String| {
        let d = Diagnostic::error(codes::INVALID_DOCUMENT, path, message);
        out.push(if graph_id.is_empty() {
            d
        } else {
            d.with_id(graph_id)
        });
    };
    for key in map.keys().filter(|k| !TOP_LEVEL.contains(&k.as_str())) {
        document(pointer(&[key]), format!("unknown top-level key {key:?}"));
    }
    match map.get("id") {
        Some(Value::String(_)) => {}
        None => document("/id".into(), "id is required".into()),
        Some(_) => document("/id".into(), "id must be a string".into()),
    }
    for key in ["name", "description"] {
        if let Some(v) = map.get(key).filter(|v| !v.is_null() && !v.is_string()) {
            document(
                pointer(&[key]),
                format!("{key} must be a string, found {v}"),
            );
        }
    }
    for key in [
        "policies", "metadata", "inputs", "fields", "outputs", "nodes", "edges",
    ] {
        if map.get(key).is_some_and(|v| !v.is_object()) {
            document(pointer(&[key]), format!("{key} must be an object"));
        }
    }
    records::<InputDecl>(map, "inputs", codes::INVALID_FIELD, &mut out);
    records::<FieldDecl>(map, "fields", codes::INVALID_FIELD, &mut out);
    records::<OutputDecl>(map, "outputs", codes::INVALID_RECORD, &mut out);
    records::<NodeDecl>(map, "nodes", codes::INVALID_RECORD, &mut out);
    records::<EdgeDecl>(map, "edges", codes::INVALID_RECORD, &mut out);
    if !out.is_empty() {
        return Err(out);
    }
    GraphDocument::from_value(value).map_err(|e| {
        vec![Diagnostic::error(
            codes::INVALID_DOCUMENT,
            "",
            e.to_string(),
        )]
    })
}

fn records<T: DeserializeOwned>(
    map: &Map<String, Value>,
    collection: &str,
    code: &str,
    out: &mut Vec<Diagnostic>,
) {
    let Some(Value::Object(entries)) = map.get(collection) else {
        return;
    };
    for (id, entry) in entries {
        if let Err(e) = serde_json::from_value::<T>(entry.clone()) {
            out.push(
                Diagnostic::error(
                    code,
                    pointer(&[collection, id]),
                    format!("malformed {collection} record: {e}"),
                )
                .with_id(id),
            );
        }
    }
}
