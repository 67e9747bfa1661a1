//! A small builder for writing graphs in Rust. The JSON wire format stays the canonical form:
//! a built document is an ordinary [`GraphDocument`], and the builder judges nothing the
//! compiler judges (unknown nodes, bad schemas, ... are compile diagnostics).
//!
//! Declaring the same id twice in one collection is allowed when both declarations are
//! identical (a no-op) and an error from [`GraphBuilder::build`] when they differ.
//!
//! ```
//! use docket_core::graph::{EdgeDecl, FieldDecl, GraphDocument, InputDecl, NodeDecl, OutputDecl, FINISH, START};
//! use serde_json::json;
//!
//! let doc = GraphDocument::builder("approval")
//!     .name("Expense approval")
//!     .input("amount", InputDecl::new(json!({"type": "integer"})).with_required())
//!     .field("approved", FieldDecl::new(json!({"type": "boolean"})))
//!     .field("log", FieldDecl::new(json!({"type": "list"})).with_reducer(json!("append")))
//!     .node("review", NodeDecl::new("std.approval").with_config("field", json!("approved")))
//!     .node("audit", "std.audit")
//!     .edge("begin", START, "review")
//!     .guarded_edge("audit_large", "review", "audit",
//!         json!({"op": "equals", "ref": "approved", "value": true}))
//!     .edge("done", ["review", "audit"], FINISH)
//!     .output("approved", OutputDecl::new())
//!     .output("history", OutputDecl::of("log"))
//!     .policy("max_supersteps", 10)
//!     .build()?;
//!
//! assert_eq!(doc.edges["done"], EdgeDecl::new(["review", "audit"], FINISH));
//! // The wire format is the canonical form: it reads back into the same document.
//! assert_eq!(GraphDocument::from_json(&doc.to_json_pretty())?, doc);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use serde_json::Value;

use super::document::{
    EdgeDecl, EdgeFrom, FieldDecl, GraphDocument, InputDecl, NodeDecl, OutputDecl, SCHEMA_VERSION,
};
use crate::model::ValueMap;

/// Two different declarations of one id in one collection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{collection} {id:?} is declared twice with different contents")]
pub struct BuildError {
    /// `"inputs"`, `"fields"`, `"outputs"`, `"nodes"` or `"edges"`.
    pub collection: &'static str,
    /// The conflicting id.
    pub id: String,
}

/// Builds a [`GraphDocument`]; see the [module documentation](self).
#[derive(Clone, Debug)]
#[must_use]
pub struct GraphBuilder {
    doc: GraphDocument,
    conflict: Option<BuildError>,
}

impl GraphDocument {
    /// Starts a document with graph id `id` and [`SCHEMA_VERSION`].
    pub fn builder(id: impl Into<String>) -> GraphBuilder {
        GraphBuilder {
            doc: GraphDocument {
                schema_version: SCHEMA_VERSION,
                id: id.into(),
                name: None,
                description: None,
                inputs: BTreeMap::new(),
                fields: BTreeMap::new(),
                outputs: BTreeMap::new(),
                nodes: BTreeMap::new(),
                edges: BTreeMap::new(),
                policies: ValueMap::new(),
                metadata: ValueMap::new(),
            },
            conflict: None,
        }
    }
}

impl GraphBuilder {
    /// Sets the human-readable name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.doc.name = Some(name.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.doc.description = Some(description.into());
        self
    }

    /// Declares run input `id`.
    pub fn input(mut self, id: impl Into<String>, decl: InputDecl) -> Self {
        let conflict = declare(&mut self.doc.inputs, "inputs", id.into(), decl);
        self.note(conflict)
    }

    /// Declares state field `id`.
    pub fn field(mut self, id: impl Into<String>, decl: FieldDecl) -> Self {
        let conflict = declare(&mut self.doc.fields, "fields", id.into(), decl);
        self.note(conflict)
    }

    /// Declares output `id`.
    pub fn output(mut self, id: impl Into<String>, decl: OutputDecl) -> Self {
        let conflict = declare(&mut self.doc.outputs, "outputs", id.into(), decl);
        self.note(conflict)
    }

    /// Declares node `id`; a bare implementation name is a node without config.
    pub fn node(mut self, id: impl Into<String>, decl: impl Into<NodeDecl>) -> Self {
        let conflict = declare(&mut self.doc.nodes, "nodes", id.into(), decl.into());
        self.note(conflict)
    }

    /// Declares an unguarded edge. `from` is `START`, a node id, or a list of node ids (a
    /// barrier join); `to` is a node id or `FINISH`.
    pub fn edge(
        self,
        id: impl Into<String>,
        from: impl Into<EdgeFrom>,
        to: impl Into<String>,
    ) -> Self {
        self.edge_decl(id, EdgeDecl::new(from, to))
    }

    /// Declares an edge with a guard (see [`super::guard`]).
    pub fn guarded_edge(
        self,
        id: impl Into<String>,
        from: impl Into<EdgeFrom>,
        to: impl Into<String>,
        guard: Value,
    ) -> Self {
        self.edge_decl(id, EdgeDecl::new(from, to).with_guard(guard))
    }

    /// Declares edge `id` from a full declaration.
    pub fn edge_decl(mut self, id: impl Into<String>, decl: EdgeDecl) -> Self {
        let conflict = declare(&mut self.doc.edges, "edges", id.into(), decl);
        self.note(conflict)
    }

    /// Sets graph policy `key` (e.g. `"max_supersteps"`).
    pub fn policy(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.doc.policies.insert(key.into(), value.into());
        self
    }

    /// Sets graph metadata `key`.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.doc.metadata.insert(key.into(), value.into());
        self
    }

    /// The document.
    ///
    /// # Errors
    /// [`BuildError`] for the first id declared twice with different contents.
    pub fn build(self) -> Result<GraphDocument, BuildError> {
        match self.conflict {
            Some(conflict) => Err(conflict),
            None => Ok(self.doc),
        }
    }

    fn note(mut self, conflict: Option<BuildError>) -> Self {
        if self.conflict.is_none() {
            self.conflict = conflict;
        }
        self
    }
}

fn declare<T: PartialEq>(
    map: &mut BTreeMap<String, T>,
    collection: &'static str,
    id: String,
    decl: T,
) -> Option<BuildError> {
    match map.entry(id) {
        Entry::Vacant(slot) => {
            slot.insert(decl);
            None
        }
        Entry::Occupied(existing) if *existing.get() == decl => None,
        Entry::Occupied(existing) => Some(BuildError {
            collection,
            id: existing.key().clone(),
        }),
    }
}

impl InputDecl {
    /// An optional input with value schema `schema`.
    #[must_use]
    pub fn new(schema: impl Into<Value>) -> Self {
        InputDecl {
            schema: Some(schema.into()),
            required: false,
            default: None,
            label: None,
            description: None,
            metadata: ValueMap::new(),
        }
    }

    /// Makes the input required.
    #[must_use]
    pub fn with_required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Sets the value readers see when the input is not provided.
    #[must_use]
    pub fn with_default(mut self, default: impl Into<Value>) -> Self {
        self.default = Some(default.into());
        self
    }

    /// Sets the label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

impl FieldDecl {
    /// A `last_value` field with value schema `schema`.
    #[must_use]
    pub fn new(schema: impl Into<Value>) -> Self {
        FieldDecl {
            schema: Some(schema.into()),
            reducer: None,
            default: None,
            label: None,
            description: None,
            metadata: ValueMap::new(),
        }
    }

    /// Sets the reducer (`json!("append")`, `json!({"type": "merge", "deep": true})`, ...).
    #[must_use]
    pub fn with_reducer(mut self, reducer: impl Into<Value>) -> Self {
        self.reducer = Some(reducer.into());
        self
    }

    /// Sets the value before the first write.
    #[must_use]
    pub fn with_default(mut self, default: impl Into<Value>) -> Self {
        self.default = Some(default.into());
        self
    }

    /// Sets the label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

impl OutputDecl {
    /// An output projecting the input or field of the same id.
    #[must_use]
    pub fn new() -> Self {
        OutputDecl::default()
    }

    /// An output projecting input or field `source`.
    #[must_use]
    pub fn of(source: impl Into<String>) -> Self {
        OutputDecl {
            source: Some(source.into()),
            ..OutputDecl::default()
        }
    }

    /// Sets the output schema (default: the source's).
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<Value>) -> Self {
        self.schema = Some(schema.into());
        self
    }
}

impl NodeDecl {
    /// A node running registered implementation `implementation`.
    #[must_use]
    pub fn new(implementation: impl Into<String>) -> Self {
        NodeDecl {
            implementation: Some(implementation.into()),
            ..NodeDecl::default()
        }
    }

    /// Sets config key `key`.
    #[must_use]
    pub fn with_config(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.config.insert(key.into(), value.into());
        self
    }

    /// Sets node policy `key` (`"timeout_ms"`, `"retry"`).
    #[must_use]
    pub fn with_policy(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.policies.insert(key.into(), value.into());
        self
    }

    /// Declares branch group `group` over outgoing edges `edges`.
    #[must_use]
    pub fn with_branch<S: Into<String>>(
        mut self,
        group: impl Into<String>,
        edges: impl IntoIterator<Item = S>,
    ) -> Self {
        self.branches
            .insert(group.into(), edges.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

impl From<&str> for NodeDecl {
    fn from(implementation: &str) -> Self {
        NodeDecl::new(implementation)
    }
}

impl From<String> for NodeDecl {
    fn from(implementation: String) -> Self {
        NodeDecl::new(implementation)
    }
}

impl EdgeDecl {
    /// An unguarded edge.
    #[must_use]
    pub fn new(from: impl Into<EdgeFrom>, to: impl Into<String>) -> Self {
        EdgeDecl {
            from: from.into(),
            to: to.into(),
            guard: None,
            label: None,
            description: None,
            source_handle: None,
            target_handle: None,
            metadata: ValueMap::new(),
        }
    }

    /// Sets the guard.
    #[must_use]
    pub fn with_guard(mut self, guard: Value) -> Self {
        self.guard = Some(guard);
        self
    }

    /// Sets the label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

impl From<&str> for EdgeFrom {
    fn from(source: &str) -> Self {
        EdgeFrom::One(source.to_owned())
    }
}

impl From<String> for EdgeFrom {
    fn from(source: String) -> Self {
        EdgeFrom::One(source)
    }
}

impl From<Vec<String>> for EdgeFrom {
    fn from(sources: Vec<String>) -> Self {
        EdgeFrom::Many(sources)
    }
}

impl From<Vec<&str>> for EdgeFrom {
    fn from(sources: Vec<&str>) -> Self {
        EdgeFrom::Many(sources.into_iter().map(str::to_owned).collect())
    }
}

impl<const N: usize> From<[&str; N]> for EdgeFrom {
    fn from(sources: [&str; N]) -> Self {
        EdgeFrom::Many(sources.iter().map(|s| (*s).to_owned()).collect())
    }
}
