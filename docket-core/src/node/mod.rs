//! Node implementations and their execution (`docs/runs-and-moments.md`, “Executing a superstep”).
//!
//! A [`Node`] is registered under a stable name in a [`NodeRegistry`]; graphs name it in
//! `implementation`. The [`executor`] runs the activations of one superstep concurrently as
//! tokio tasks against one snapshot, bounding each attempt by its effective timeout.

mod context;
pub mod executor;
mod fn_node;
mod outcome;
mod registry;

use async_trait::async_trait;
use serde_json::{json, Value};

pub use context::NodeContext;
pub use executor::execute;
pub use fn_node::FnNode;
pub use outcome::NodeOutcome;
pub use registry::NodeRegistry;

use crate::model::ValueMap;

/// A node implementation.
///
/// Nodes must be replay-safe: an attempt may run more than once (at-least-once execution),
/// while its committed effect is exactly-once. Key external side effects by
/// [`NodeContext::idempotency_key`] or [`NodeContext::task_id`].
#[async_trait]
pub trait Node: Send + Sync + 'static {
    /// The raw schema (see [`crate::graph::Schema`]) of this node's `config`; its field
    /// defaults are materialized into the config at publication. Default: an open object.
    fn config_schema(&self) -> Value {
        json!({"type": "object", "open": true})
    }

    /// Runs one attempt against the superstep's snapshot `state` with the node's `config`.
    async fn call(&self, state: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome;
}
