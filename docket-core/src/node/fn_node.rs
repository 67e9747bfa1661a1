//! A node from a synchronous closure.

use std::fmt;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Node, NodeContext, NodeOutcome};
use crate::model::ValueMap;

/// A [`Node`] whose attempt is a synchronous function of state, config and context.
pub struct FnNode<F> {
    f: F,
    schema: Value,
}

impl<F> FnNode<F>
where
    F: Fn(&ValueMap, &ValueMap, &NodeContext) -> NodeOutcome + Send + Sync + 'static,
{
    /// Wraps `f` with an open-object config schema.
    pub fn new(f: F) -> Self {
        FnNode {
            f,
            schema: json!({"type": "object", "open": true}),
        }
    }

    /// Replaces the config schema.
    #[must_use]
    pub fn with_config_schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }
}

impl<F> fmt::Debug for FnNode<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnNode")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<F> Node for FnNode<F>
where
    F: Fn(&ValueMap, &ValueMap, &NodeContext) -> NodeOutcome + Send + Sync + 'static,
{
    fn config_schema(&self) -> Value {
        self.schema.clone()
    }

    async fn call(&self, state: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        (self.f)(state, config, ctx)
    }
}
