//! `std.set`, `std.increment`, `std.echo`.

use async_trait::async_trait;
use serde_json::{json, Value};

use docket_core::model::ValueMap;
use docket_core::node::{Node, NodeContext, NodeOutcome};

use super::values;

/// `std.set`: writes `config.values`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Set;

#[async_trait]
impl Node for Set {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {"values": {"type": "map", "default": {}}}})
    }

    async fn call(&self, _: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        NodeOutcome::Update(values(config))
    }
}

/// `std.increment`: writes `state[field] + by`; integers stay integers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Increment;

#[async_trait]
impl Node for Increment {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {
            "field": {"type": "string", "required": true, "min_length": 1},
            "by": {"type": "float", "default": 1}
        }})
    }

    async fn call(&self, state: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let Some(field) = config.get("field").and_then(Value::as_str) else {
            return NodeOutcome::Fail("std.increment: config.field is missing".into());
        };
        let by = config.get("by").cloned().unwrap_or(json!(1));
        let current = state.get(field).cloned().unwrap_or(json!(0));
        let sum = match (current.as_i64(), by.as_i64()) {
            (Some(a), Some(b)) => match a.checked_add(b) {
                Some(s) => json!(s),
                None => return NodeOutcome::Fail(format!("std.increment: {field} overflows")),
            },
            _ => match (current.as_f64(), by.as_f64()) {
                (Some(a), Some(b)) => json!(a + b),
                _ => return NodeOutcome::Fail(format!("std.increment: {field} is not a number")),
            },
        };
        NodeOutcome::update(json!({ field: sum }))
    }
}

/// `std.echo`: for every `source → destination` of `config.copy`, writes the source's value
/// to the destination (absent sources are skipped).
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo;

#[async_trait]
impl Node for Echo {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {"copy": {"type": "map", "default": {}}}})
    }

    async fn call(&self, state: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let mut update = ValueMap::new();
        if let Some(copy) = config.get("copy").and_then(Value::as_object) {
            for (source, destination) in copy {
                let Some(destination) = destination.as_str() else {
                    return NodeOutcome::Fail(format!(
                        "std.echo: the destination of {source} must be a field name"
                    ));
                };
                if let Some(value) = state.get(source) {
                    update.insert(destination.to_owned(), value.clone());
                }
            }
        }
        NodeOutcome::Update(update)
    }
}
