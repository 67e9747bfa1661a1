//! Default materialization (`docs/graphs.md`, “The compiler pipeline”; `docs/graphs.md`,
//! “Effective document and content hash”): at publication, every config-schema field with a
//! declared default is written into the node's config when absent, so the stored effective document
//! no longer depends on the implementation's current defaults.

use serde_json::Value;

use super::contracts::NodeSchemas;
use super::document::GraphDocument;
use super::schema::{Schema, SchemaType};

/// Inserts every config-schema field default that the node's config does not set.
/// Explicit config always wins, even an explicit `null`.
#[must_use]
pub fn materialize(doc: &GraphDocument, schemas: &NodeSchemas) -> GraphDocument {
    let mut out = doc.clone();
    for node in out.nodes.values_mut() {
        let Some(name) = &node.implementation else {
            continue;
        };
        let Some(Ok(schema)) = schemas.by_implementation.get(name) else {
            continue;
        };
        if let SchemaType::Object { fields, .. } = &schema.ty {
            for (key, field) in fields {
                if let Some(default) = &field.default {
                    node.config
                        .entry(key.clone())
                        .or_insert_with(|| default.clone());
                }
            }
        }
    }
    out
}

/// Validates a node config against its implementation's schema.
///
/// # Errors
/// Human-readable reasons.
pub fn validate_config(
    schema: &Schema,
    config: &serde_json::Map<String, Value>,
) -> Result<(), Vec<String>> {
    schema.validate(&Value::Object(config.clone()))
}
