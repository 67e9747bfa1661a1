//! The interrupt request a node returns (`docs/runs-and-moments.md`,
//! “Interrupts and cancellation”).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::value::ValueMap;

/// A node's request to pause until an external resolution arrives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupt {
    /// Node-chosen id; `None` lets the runtime generate one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Stamped by the runtime with the interrupting node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Optional schema (raw JSON, see [`crate::graph::Schema`]) the resolution must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The declared state field the resolution is written to.
    pub resume_channel: String,
    /// Free-form portable metadata.
    #[serde(default)]
    pub metadata: ValueMap,
}

impl Interrupt {
    /// An interrupt that resumes into `resume_channel`, with no id, schema or metadata.
    #[must_use]
    pub fn new(resume_channel: impl Into<String>) -> Self {
        Interrupt {
            id: None,
            node_id: None,
            schema: None,
            resume_channel: resume_channel.into(),
            metadata: ValueMap::new(),
        }
    }
}
