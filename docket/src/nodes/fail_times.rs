//! `std.fail_times`: deterministic transient failures.

use async_trait::async_trait;
use serde_json::{json, Value};

use docket_core::model::ValueMap;
use docket_core::node::{Node, NodeContext, NodeOutcome};

use super::values;

/// Fails with a retryable error while `ctx.attempt ≤ config.times`, then writes
/// `config.values`. Depends only on the attempt number, so it is deterministic across
/// processes and crashes.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailTimes;

#[async_trait]
impl Node for FailTimes {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {
            "times": {"type": "integer", "min": 0, "default": 2},
            "values": {"type": "map", "default": {}}
        }})
    }

    async fn call(&self, _: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        let times = config.get("times").and_then(Value::as_u64).unwrap_or(2);
        if u64::from(ctx.attempt) <= times {
            NodeOutcome::Error(format!(
                "std.fail_times: attempt {} of the first {times} fails",
                ctx.attempt
            ))
        } else {
            NodeOutcome::Update(values(config))
        }
    }
}
