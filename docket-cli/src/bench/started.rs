//! When a vehicle starts a run, seen from the outside: the std nodes, each wrapped so that a
//! call first tells a [`StartHook`] which run it is for. The engine runs unmodified.
//!
//! The latency figures that end "when the vehicle starts the run" — claim-to-start (d) and
//! the wakeup (h) — used to take the vehicle's first read of the run after its claim, which
//! was how every drain began. A store that hands the run over with its claim
//! (`ClaimLease::run`) spares the vehicle that read, so the one moment every drain still has,
//! on every store, is its first node call: after the claim, the graph and the moment's plan
//! (pure, microseconds), just before the node's work.

use std::sync::Arc;

use async_trait::async_trait;

use docket_core::model::{RunId, ValueMap};
use docket_core::node::{Node, NodeContext, NodeOutcome, NodeRegistry};
use serde_json::Value;

use super::BenchError;

/// Told of every node call, with the run it is for.
pub(crate) trait StartHook: Send + Sync + 'static {
    /// A node of `run_id` is about to run (its first call is the run's start).
    fn node_called(&self, run_id: &RunId);
}

/// A node that tells its hook before it runs.
struct Reporting {
    inner: Arc<dyn Node>,
    hook: Arc<dyn StartHook>,
}

#[async_trait]
impl Node for Reporting {
    fn config_schema(&self) -> Value {
        self.inner.config_schema()
    }

    async fn call(&self, state: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        self.hook.node_called(&ctx.run_id);
        self.inner.call(state, config, ctx).await
    }
}

/// The std node registry with every node reporting to `hook`.
///
/// # Errors
/// [`BenchError::Setup`] if a std node cannot be registered again (it can: the names are
/// the std registry's own).
pub(crate) fn reporting_registry(hook: Arc<dyn StartHook>) -> Result<NodeRegistry, BenchError> {
    let std_nodes = docket::nodes::registry();
    let mut registry = NodeRegistry::new();
    for name in std_nodes.names() {
        let Some(inner) = std_nodes.get(name) else {
            continue;
        };
        let node = Reporting {
            inner,
            hook: Arc::clone(&hook),
        };
        registry
            .register(name, node)
            .map_err(|e| BenchError::Setup(format!("registering node {name}: {e}")))?;
    }
    Ok(registry)
}
