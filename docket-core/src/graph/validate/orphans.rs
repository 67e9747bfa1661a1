//! `orphaned_field` (warning): a state field whose id no output source, guard or node config
//! mentions as a string. Nothing reads or writes such a field by name, which usually means a
//! typo or a leftover. Inputs are exempt: a run provides them, and nodes read them from state.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::GraphDocument;

/// Runs the orphaned-field pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    if doc.fields.is_empty() {
        return;
    }
    let mut mentioned: BTreeSet<&str> = doc
        .outputs
        .iter()
        .map(|(id, o)| o.source.as_deref().unwrap_or(id))
        .collect();
    for edge in doc.edges.values() {
        if let Some(guard) = &edge.guard {
            strings(guard, &mut mentioned);
        }
    }
    for node in doc.nodes.values() {
        for value in node.config.values() {
            strings(value, &mut mentioned);
        }
    }
    for id in doc
        .fields
        .keys()
        .filter(|id| !mentioned.contains(id.as_str()))
    {
        out.push(
            Diagnostic::warning(
                codes::ORPHANED_FIELD,
                pointer(&["fields", id]),
                format!("no output, guard or node config mentions field {id:?}"),
            )
            .with_id(id),
        );
    }
}

/// Collects every string inside `value`, walking with an explicit stack so a deeply nested
/// (and therefore already non-durable) value cannot overflow the call stack.
fn strings<'a>(value: &'a Value, into: &mut BTreeSet<&'a str>) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                into.insert(s);
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
}
