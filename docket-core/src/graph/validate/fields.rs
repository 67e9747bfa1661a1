//! Inputs and state fields: ids, schemas, reducers and defaults.

use serde_json::Value;

use super::check_public_id;
use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::GraphDocument;
use crate::graph::reducer::Reducer;
use crate::graph::schema::{Schema, SchemaType};

/// Runs the fields pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    for (id, input) in &doc.inputs {
        let path = pointer(&["inputs", id]);
        check_public_id(id, &path, out);
        let schema = schema(input.schema.as_ref(), &path, id, out);
        default(input.default.as_ref(), schema.as_ref(), &path, id, out);
    }
    for (id, field) in &doc.fields {
        let path = pointer(&["fields", id]);
        check_public_id(id, &path, out);
        if doc.inputs.contains_key(id) {
            out.push(
                Diagnostic::error(
                    codes::DUPLICATE_STATE_ID,
                    &path,
                    format!("{id:?} is declared both as an input and as a field"),
                )
                .with_id(id),
            );
        }
        let schema = schema(field.schema.as_ref(), &path, id, out);
        default(field.default.as_ref(), schema.as_ref(), &path, id, out);
        match Reducer::parse(field.reducer.as_ref()) {
            Err(reasons) => out.push(
                Diagnostic::error(
                    codes::INVALID_REDUCER,
                    format!("{path}/reducer"),
                    reasons.join("; "),
                )
                .with_id(id),
            ),
            Ok(reducer) => {
                if let Some(schema) = &schema {
                    reducer_fits(&reducer, schema, &path, id, out);
                }
            }
        }
    }
}

fn schema(raw: Option<&Value>, path: &str, id: &str, out: &mut Vec<Diagnostic>) -> Option<Schema> {
    let Some(raw) = raw else {
        out.push(
            Diagnostic::error(
                codes::MISSING_FIELD_SCHEMA,
                path,
                format!("{id:?} declares no schema"),
            )
            .with_id(id),
        );
        return None;
    };
    match Schema::parse(raw) {
        Ok(schema) => Some(schema),
        Err(reasons) => {
            out.push(
                Diagnostic::error(
                    codes::INVALID_SCHEMA,
                    format!("{path}/schema"),
                    reasons.join("; "),
                )
                .with_id(id),
            );
            None
        }
    }
}

/// A `null` default means "no default" (the reducer's zero applies), so only non-null
/// defaults are checked.
fn default(
    value: Option<&Value>,
    schema: Option<&Schema>,
    path: &str,
    id: &str,
    out: &mut Vec<Diagnostic>,
) {
    let (Some(value), Some(schema)) = (value.filter(|v| !v.is_null()), schema) else {
        return;
    };
    if let Err(reasons) = schema.validate(value) {
        out.push(
            Diagnostic::error(
                codes::INVALID_FIELD_DEFAULT,
                format!("{path}/default"),
                format!("default fails the schema: {}", reasons.join("; ")),
            )
            .with_id(id),
        );
    }
}

fn reducer_fits(
    reducer: &Reducer,
    schema: &Schema,
    path: &str,
    id: &str,
    out: &mut Vec<Diagnostic>,
) {
    let ty = &schema.ty;
    let (fits, needs) = match reducer {
        Reducer::LastValue | Reducer::FirstValue => (true, ""),
        Reducer::Append { .. } | Reducer::Union { .. } => {
            (matches!(ty, SchemaType::List { .. }), "a list")
        }
        Reducer::Sum => (
            matches!(ty, SchemaType::Integer { .. } | SchemaType::Float { .. }),
            "an integer or float",
        ),
        Reducer::Merge { .. } => (
            matches!(ty, SchemaType::Map | SchemaType::Object { .. }),
            "a map or object",
        ),
    };
    let reducer_path = format!("{path}/reducer");
    if !fits {
        out.push(
            Diagnostic::error(
                codes::REDUCER_SCHEMA_MISMATCH,
                &reducer_path,
                format!(
                    "reducer {} needs {needs} schema, found {}",
                    reducer.name(),
                    ty.name()
                ),
            )
            .with_id(id),
        );
        return;
    }
    if let (
        Reducer::Append { .. } | Reducer::Union { .. },
        SchemaType::List {
            item: Some(item), ..
        },
    ) = (reducer, ty)
    {
        if matches!(item.ty, SchemaType::List { .. }) {
            out.push(
                Diagnostic::warning(
                    codes::AMBIGUOUS_LIST_WRITE,
                    &reducer_path,
                    format!(
                        "{} over a list of lists: a list write appends its elements, so one \
                         list item must be written wrapped in another list",
                        reducer.name()
                    ),
                )
                .with_id(id),
            );
        }
    }
}
