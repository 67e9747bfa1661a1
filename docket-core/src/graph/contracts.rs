//! What the compiler needs to know about node implementations.

use std::collections::BTreeMap;

use serde_json::Value;

use super::document::GraphDocument;
use super::schema::Schema;
use super::validate::implementation_name_ok;

/// Resolves registered node implementation names to their config schemas.
///
/// The node registry implements this; the compiler asks once per distinct implementation per
/// compile.
pub trait NodeContracts: Send + Sync {
    /// The raw config schema of `implementation` (see [`super::Schema`]), or `None` when no
    /// implementation is registered under that name.
    fn config_schema(&self, implementation: &str) -> Option<Value>;
}

/// Contracts with no registered implementation: every node is `node_module_not_loaded`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoContracts;

impl NodeContracts for NoContracts {
    fn config_schema(&self, _implementation: &str) -> Option<Value> {
        None
    }
}

/// Config schemas of the implementations a document uses, looked up once per compile.
#[derive(Clone, Debug, Default)]
pub struct NodeSchemas {
    /// Implementation name → parsed config schema, or the reasons it failed to parse.
    pub by_implementation: BTreeMap<String, Result<Schema, Vec<String>>>,
    /// Implementation names with no registered implementation.
    pub missing: Vec<String>,
}

impl NodeSchemas {
    /// Asks `contracts` once for each distinct implementation named by `doc`. Malformed names
    /// (the `unsupported_node_implementation` diagnostic) are never looked up.
    #[must_use]
    pub fn collect(doc: &GraphDocument, contracts: &dyn NodeContracts) -> Self {
        let mut out = NodeSchemas::default();
        for node in doc.nodes.values() {
            let Some(name) = &node.implementation else {
                continue;
            };
            if !implementation_name_ok(name)
                || out.by_implementation.contains_key(name)
                || out.missing.contains(name)
            {
                continue;
            }
            match contracts.config_schema(name) {
                Some(raw) => {
                    out.by_implementation
                        .insert(name.clone(), Schema::parse(&raw));
                }
                None => out.missing.push(name.clone()),
            }
        }
        out
    }
}
