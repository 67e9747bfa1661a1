//! `std.approval`: a human-in-the-loop gate.

use async_trait::async_trait;
use serde_json::{json, Value};

use docket_core::model::{Interrupt, ValueMap};
use docket_core::node::{Node, NodeContext, NodeOutcome};

/// Interrupts until state field `config.field` holds a (non-null) value, then passes
/// without writing. The interrupt id is `config.interrupt_id`, or the node id, so it can be
/// resolved from the CLI by name: `docket interrupt resolve RUN <id> true`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Approval;

#[async_trait]
impl Node for Approval {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {
            "field": {"type": "string", "required": true, "min_length": 1},
            "interrupt_id": {"type": "string", "min_length": 1},
            "schema": {"type": "map"}
        }})
    }

    async fn call(&self, state: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        let Some(field) = config.get("field").and_then(Value::as_str) else {
            return NodeOutcome::Fail("std.approval: config.field is missing".into());
        };
        if state.get(field).is_some_and(|v| !v.is_null()) {
            return NodeOutcome::Update(ValueMap::new());
        }
        let mut interrupt = Interrupt::new(field);
        interrupt.id = Some(
            config
                .get("interrupt_id")
                .and_then(Value::as_str)
                .unwrap_or(&ctx.node_id)
                .to_owned(),
        );
        interrupt.schema = config.get("schema").cloned();
        NodeOutcome::Interrupt(interrupt)
    }
}
