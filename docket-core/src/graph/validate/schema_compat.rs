//! Whether an output schema can hold every value of its source's schema (`docs/graphs.md`,
//! “Diagnostic catalogue”, `incompatible_output_schema`).
//!
//! * the types must be the same;
//! * an enum output must contain every source value;
//! * list outputs compare items recursively: an output list without `item` accepts anything,
//!   while an itemless source list against an itemed output is incompatible.
//!
//! Other constraints (lengths, bounds, object fields) are not compared: the output schema is
//! checked against the projected value at completion anyway.

use crate::graph::schema::{Schema, SchemaType};

/// Why `output` cannot hold every value of `source`, or `None` when it can.
#[must_use]
pub fn incompatibility(source: &Schema, output: &Schema) -> Option<String> {
    at(source, output, "")
}

fn at(source: &Schema, output: &Schema, path: &str) -> Option<String> {
    let where_ = if path.is_empty() { "/" } else { path };
    match (&source.ty, &output.ty) {
        (a, b) if a.name() != b.name() => Some(format!(
            "{where_}: output type {} differs from source type {}",
            b.name(),
            a.name()
        )),
        (SchemaType::Enum { values: from }, SchemaType::Enum { values: to }) => from
            .iter()
            .find(|v| !to.contains(v))
            .map(|missing| format!("{where_}: output enum lacks the source value {missing}")),
        (SchemaType::List { item: from, .. }, SchemaType::List { item: to, .. }) => {
            match (from, to) {
                (_, None) => None,
                (None, Some(_)) => Some(format!(
                    "{where_}: the source list has no item schema but the output list has one"
                )),
                (Some(from), Some(to)) => at(from, to, &format!("{path}/item")),
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn s(v: Value) -> Schema {
        Schema::parse(&v).expect("valid schema")
    }

    #[test]
    fn same_types_are_compatible_and_different_types_are_not() {
        assert!(
            incompatibility(&s(json!({"type": "string"})), &s(json!({"type": "string"}))).is_none()
        );
        assert!(
            incompatibility(&s(json!({"type": "integer"})), &s(json!({"type": "float"}))).is_some()
        );
    }

    #[test]
    fn enum_output_must_contain_every_source_value() {
        let src = s(json!({"type": "enum", "values": ["a", "b"]}));
        assert!(
            incompatibility(&src, &s(json!({"type": "enum", "values": ["b", "a", "c"]}))).is_none()
        );
        assert!(incompatibility(&src, &s(json!({"type": "enum", "values": ["a"]}))).is_some());
    }

    #[test]
    fn list_items_compare_recursively() {
        let ints = s(json!({"type": "list", "item": {"type": "integer"}}));
        let any = s(json!({"type": "list"}));
        let strs = s(json!({"type": "list", "item": {"type": "string"}}));
        assert!(incompatibility(&ints, &any).is_none());
        assert!(incompatibility(&any, &ints).is_some());
        let reason = incompatibility(&ints, &strs).expect("incompatible");
        assert!(reason.starts_with("/item"), "{reason}");
    }
}
