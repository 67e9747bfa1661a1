//! `std.sleep_ms`: simulated slow work.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use docket_core::model::ValueMap;
use docket_core::node::{Node, NodeContext, NodeOutcome};

use super::values;

/// Awaits a tokio sleep of `config.ms` milliseconds (node work: the attempt timeout bounds
/// it, and no store transaction is held meanwhile), then writes `config.values`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SleepMs;

#[async_trait]
impl Node for SleepMs {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {
            "ms": {"type": "integer", "min": 0, "default": 100},
            "values": {"type": "map", "default": {}}
        }})
    }

    async fn call(&self, _: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let ms = config.get("ms").and_then(Value::as_u64).unwrap_or(100);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        NodeOutcome::Update(values(config))
    }
}
