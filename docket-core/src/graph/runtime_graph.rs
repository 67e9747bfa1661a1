//! The compiled, never-durable runtime graph (`docs/graphs.md`, “Lowering and the runtime graph”).

use std::collections::BTreeMap;

use serde_json::Value;

use super::policy::NodePolicies;
use super::reducer::Reducer;
use super::schema::Schema;
use crate::model::{GraphHash, GraphId, ValueMap};

/// Whether a last-value channel carries a run input or a state field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// `input:<id>`: written only at initialization.
    Input,
    /// `state:<id>`: written by node updates through its reducer.
    State,
}

/// A channel of the runtime graph.
#[derive(Clone, Debug, PartialEq)]
pub enum Channel {
    /// `input:<id>` or `state:<id>`.
    Value {
        /// The public input/field id.
        public_id: String,
        /// Input or state.
        kind: FieldKind,
        /// The declared schema.
        schema: Option<Schema>,
        /// Reducer (inputs: always last value).
        reducer: Reducer,
        /// Effective default: the declared default, else the reducer's zero (state only).
        default: Option<Value>,
        /// Inputs only: whether a run must provide it.
        required: bool,
    },
    /// `edge:<id>` of a plain edge: an activation visible for one step.
    Ephemeral {
        /// The public edge id.
        edge_id: String,
    },
    /// `edge:<id>` of a list-`from` edge: fires when every source completed since the last
    /// firing.
    Barrier {
        /// The public edge id.
        edge_id: String,
        /// Sorted source node ids.
        sources: Vec<String>,
    },
}

/// A node of the runtime graph, keyed `node:<id>`.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeNode {
    /// Public node id.
    pub public_id: String,
    /// `node:<id>`.
    pub runtime_id: String,
    /// Registered implementation name.
    pub implementation: String,
    /// Effective configuration.
    pub config: ValueMap,
    /// Sorted edge channel ids that activate this node.
    pub subscribe: Vec<String>,
    /// Sorted public ids of edges this node is a source of.
    pub outgoing_edges: Vec<String>,
    /// Raw policies; resolved with [`NodePolicies::resolve`] at plan time.
    pub policies: ValueMap,
    /// Metadata.
    pub metadata: ValueMap,
}

impl RuntimeNode {
    /// Resolves the node's policies.
    ///
    /// # Errors
    /// Human-readable reasons when a policy is malformed.
    pub fn resolved_policies(&self) -> Result<NodePolicies, Vec<String>> {
        NodePolicies::resolve(&self.policies)
    }
}

/// An edge of the runtime graph, keyed by public edge id.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeEdge {
    /// Public edge id.
    pub id: String,
    /// `edge:<id>`.
    pub channel_id: String,
    /// Source ids (`["$start"]` for entry edges).
    pub from: Vec<String>,
    /// Target node id or `"$finish"`.
    pub to: String,
    /// Raw guard expression, parsed at evaluation (see [`super::guard`]).
    pub guard: Option<Value>,
    /// Whether the edge is a barrier join.
    pub barrier: bool,
}

/// An output projection.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeOutput {
    /// Public output id.
    pub id: String,
    /// `output:<id>`.
    pub runtime_id: String,
    /// `input:<source>` or `state:<source>`.
    pub source_channel: String,
    /// Output schema (or the source's).
    pub schema: Option<Schema>,
}

/// The compiled graph the runtime executes.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeGraph {
    /// `"<graph_id>@<first 12 hex of hash>"`.
    pub id: String,
    /// Graph id.
    pub graph_id: GraphId,
    /// Effective-document hash.
    pub graph_hash: GraphHash,
    /// Channels by runtime channel id.
    pub channels: BTreeMap<String, Channel>,
    /// Nodes by runtime id (`node:<id>`).
    pub nodes: BTreeMap<String, RuntimeNode>,
    /// Edges by public edge id.
    pub edges: BTreeMap<String, RuntimeEdge>,
    /// Outputs by public id.
    pub outputs: BTreeMap<String, RuntimeOutput>,
    /// Effective `max_supersteps`: the graph policy, else the compile option, else none.
    pub max_supersteps: Option<u64>,
}

impl RuntimeGraph {
    /// The node with public id `node_id`.
    #[must_use]
    pub fn node(&self, node_id: &str) -> Option<&RuntimeNode> {
        self.nodes.get(&node_channel(node_id))
    }

    /// Declared inputs and state fields: public id → (channel id, channel).
    pub fn value_channels(&self) -> impl Iterator<Item = (&str, &String, &Channel)> {
        self.channels.iter().filter_map(|(id, ch)| match ch {
            Channel::Value { public_id, .. } => Some((public_id.as_str(), id, ch)),
            _ => None,
        })
    }

    /// The channel of state field `field`, if declared.
    #[must_use]
    pub fn state_field(&self, field: &str) -> Option<&Channel> {
        self.channels.get(&state_channel(field))
    }
}

/// `input:<id>`.
#[must_use]
pub fn input_channel(id: &str) -> String {
    format!("input:{id}")
}

/// `state:<id>`.
#[must_use]
pub fn state_channel(id: &str) -> String {
    format!("state:{id}")
}

/// `edge:<id>`.
#[must_use]
pub fn edge_channel(id: &str) -> String {
    format!("edge:{id}")
}

/// `node:<id>`.
#[must_use]
pub fn node_channel(id: &str) -> String {
    format!("node:{id}")
}

/// `output:<id>`.
#[must_use]
pub fn output_channel(id: &str) -> String {
    format!("output:{id}")
}
