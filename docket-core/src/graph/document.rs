//! The authored graph document and its JSON wire format (`docs/graphs.md`,
//! “The authored document”).
//!
//! The document is strict about its own structure (unknown keys are rejected by serde) and
//! lenient about the parts the compiler judges (schemas, reducers, guards and policies are kept
//! as raw JSON), so that a malformed schema or guard becomes a compiler diagnostic with a path
//! rather than an opaque parse error.
//!
//! ```json
//! {
//!   "schema_version": 1,
//!   "id": "approval",
//!   "inputs": { "amount": { "schema": { "type": "integer" }, "required": true } },
//!   "fields": { "approved": { "schema": { "type": "boolean" } } },
//!   "outputs": { "approved": {} },
//!   "nodes": { "ask": { "implementation": "std.approval", "config": { "field": "approved" } } },
//!   "edges": { "start": { "from": "$start", "to": "ask" } }
//! }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{parse_json_strict, JsonError, ValueMap};

/// The reserved source endpoint of entry edges.
pub const START: &str = "$start";
/// The reserved target endpoint of terminal edges.
pub const FINISH: &str = "$finish";
/// The only supported document schema version.
pub const SCHEMA_VERSION: u64 = 1;

/// An authored graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphDocument {
    /// Must be [`SCHEMA_VERSION`].
    pub schema_version: u64,
    /// Public graph id.
    pub id: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Run inputs by public id (share one namespace with `fields`).
    #[serde(default)]
    pub inputs: BTreeMap<String, InputDecl>,
    /// State fields by public id.
    #[serde(default)]
    pub fields: BTreeMap<String, FieldDecl>,
    /// Outputs projected at completion, by public id.
    #[serde(default)]
    pub outputs: BTreeMap<String, OutputDecl>,
    /// Nodes by public id.
    #[serde(default)]
    pub nodes: BTreeMap<String, NodeDecl>,
    /// Edges by public id.
    #[serde(default)]
    pub edges: BTreeMap<String, EdgeDecl>,
    /// Graph policies, e.g. `{"max_supersteps": 10}`.
    #[serde(default)]
    pub policies: ValueMap,
    /// Free-form portable metadata.
    #[serde(default)]
    pub metadata: ValueMap,
}

/// A declared run input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputDecl {
    /// Value schema (required; absence is the `missing_field_schema` diagnostic).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema: Option<Value>,
    /// Whether a run must provide it (unless it has a default).
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Value readers see when the input is not provided.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<Value>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub metadata: ValueMap,
}

/// A declared state field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldDecl {
    /// Value schema (required; absence is the `missing_field_schema` diagnostic).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema: Option<Value>,
    /// Reducer (`"sum"` or `{"type": "append", "unique": true}`); default `last_value`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub reducer: Option<Value>,
    /// Effective value before the first write.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<Value>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub metadata: ValueMap,
}

/// A declared output.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputDecl {
    /// Input or field id projected; defaults to the output id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Output schema; defaults to the source's.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema: Option<Value>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub metadata: ValueMap,
}

/// A declared node.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDecl {
    /// Registered implementation name, e.g. `"std.set"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    /// Node configuration (defaults are materialized at publication).
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub config: ValueMap,
    /// Node policies: `timeout_ms`, `retry: {max_attempts, backoff_ms}`.
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub policies: ValueMap,
    /// Editor metadata: branch group name → outgoing edge ids.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub branches: BTreeMap<String, Vec<String>>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub metadata: ValueMap,
}

/// The source side of an edge: one endpoint, or a list of nodes (a barrier join).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EdgeFrom {
    /// `"$start"` or one node id.
    One(String),
    /// A barrier join over these nodes (even a one-element list).
    Many(Vec<String>),
}

impl EdgeFrom {
    /// The source ids as a list.
    #[must_use]
    pub fn ids(&self) -> Vec<&str> {
        match self {
            EdgeFrom::One(id) => vec![id.as_str()],
            EdgeFrom::Many(ids) => ids.iter().map(String::as_str).collect(),
        }
    }

    /// Whether the edge is a barrier join.
    #[must_use]
    pub fn is_barrier(&self) -> bool {
        matches!(self, EdgeFrom::Many(_))
    }
}

/// A declared edge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeDecl {
    /// Source endpoint(s).
    pub from: EdgeFrom,
    /// Target node id or `"$finish"`.
    pub to: String,
    /// Optional guard expression (see [`super::guard`]).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub guard: Option<Value>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Editor handle on the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_handle: Option<String>,
    /// Editor handle on the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_handle: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "ValueMap::is_empty")]
    pub metadata: ValueMap,
}

/// Deserializes a present member as `Some`, even when it is `null`: `Option<Value>` would
/// otherwise read `"default": null` back as `None`, so the document would not round-trip and
/// its canonical bytes (and hash) would change on re-encoding.
fn present<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Value::deserialize(deserializer).map(Some)
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

/// Why a graph document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// An object names the same key twice (see [`crate::model::parse_json_strict`]).
    #[error("duplicate key {key:?} at {path}: a JSON object may name each key once")]
    DuplicateKey {
        /// The repeated key.
        key: String,
        /// JSON pointer of the repeated member.
        path: String,
    },
    /// The bytes are not JSON of the document's shape (unknown key, wrong type, ...).
    #[error("malformed graph document at line {line}, column {column}: {message}")]
    Malformed {
        /// serde_json's message.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
}

impl GraphDocument {
    /// Parses the JSON wire format.
    ///
    /// # Errors
    /// [`DocumentError::DuplicateKey`] for an object naming a key twice;
    /// [`DocumentError::Malformed`] for invalid JSON, unknown keys or wrongly typed members.
    pub fn from_json(text: &str) -> Result<Self, DocumentError> {
        // Checked first and apart: the typed parse below would keep the last of two equal
        // map keys, and it alone knows the line and column of a shape error.
        if let Err(JsonError::DuplicateKey { key, path }) = parse_json_strict(text) {
            return Err(DocumentError::DuplicateKey { key, path });
        }
        serde_json::from_str(text).map_err(|e| DocumentError::Malformed {
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        })
    }

    /// Parses the wire format from a JSON value.
    ///
    /// # Errors
    /// [`DocumentError::Malformed`] for unknown keys or wrongly typed members.
    pub fn from_value(value: Value) -> Result<Self, DocumentError> {
        serde_json::from_value(value).map_err(|e| DocumentError::Malformed {
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        })
    }

    /// The wire format as a JSON value.
    #[must_use]
    pub fn to_value(&self) -> Value {
        // Serializing the document cannot fail: every map is string-keyed.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The wire format as pretty-printed JSON text.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.to_value()).unwrap_or_default()
    }
}
