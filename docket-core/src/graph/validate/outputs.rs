//! Outputs: ids, sources and schemas.

use super::check_public_id;
use super::schema_compat::incompatibility;
use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::GraphDocument;
use crate::graph::schema::Schema;

/// Runs the outputs pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    for (id, output) in &doc.outputs {
        let path = pointer(&["outputs", id]);
        check_public_id(id, &path, out);
        let source = output.source.as_deref().unwrap_or(id);
        // Inputs win over fields, as in lowering; a clash is `duplicate_state_id` already.
        let source_schema = match (doc.inputs.get(source), doc.fields.get(source)) {
            (Some(input), _) => Some(input.schema.as_ref()),
            (None, Some(field)) => Some(field.schema.as_ref()),
            (None, None) => None,
        };
        let Some(source_schema) = source_schema else {
            let at = if output.source.is_some() {
                format!("{path}/source")
            } else {
                path.clone()
            };
            out.push(
                Diagnostic::error(
                    codes::UNKNOWN_OUTPUT_SOURCE,
                    at,
                    format!("output source {source:?} is neither an input nor a field"),
                )
                .with_id(id),
            );
            continue;
        };
        let Some(raw) = &output.schema else { continue };
        let schema = match Schema::parse(raw) {
            Ok(schema) => schema,
            Err(reasons) => {
                out.push(
                    Diagnostic::error(
                        codes::INVALID_SCHEMA,
                        format!("{path}/schema"),
                        reasons.join("; "),
                    )
                    .with_id(id),
                );
                continue;
            }
        };
        // A missing or invalid source schema is reported by the fields pass.
        let Some(Ok(source_schema)) = source_schema.map(Schema::parse) else {
            continue;
        };
        if let Some(reason) = incompatibility(&source_schema, &schema) {
            out.push(
                Diagnostic::error(
                    codes::INCOMPATIBLE_OUTPUT_SCHEMA,
                    format!("{path}/schema"),
                    format!("output schema cannot hold the values of {source:?}: {reason}"),
                )
                .with_id(id),
            );
        }
    }
}
