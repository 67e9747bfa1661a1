//! Test node implementations, each logging its calls.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use docket_core::model::{Interrupt, ValueMap};
use docket_core::node::{Node, NodeContext, NodeOutcome, NodeRegistry};
use serde_json::{json, Value};

/// One recorded node call.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub node_id: String,
    pub attempt: u32,
    pub idempotency_key: String,
    pub snapshot: ValueMap,
    pub step: u64,
}

/// Shared record of every node call.
#[derive(Clone, Debug, Default)]
pub struct CallLog(Arc<Mutex<Vec<Call>>>);

impl CallLog {
    fn push(&self, call: Call) {
        self.0.lock().expect("call log lock").push(call);
    }

    /// Every call, in call order.
    pub fn all(&self) -> Vec<Call> {
        self.0.lock().expect("call log lock").clone()
    }

    /// Attempts of `node_id`, in call order.
    pub fn attempts(&self, node_id: &str) -> Vec<u32> {
        self.all()
            .into_iter()
            .filter(|c| c.node_id == node_id)
            .map(|c| c.attempt)
            .collect()
    }

    /// How many times `node_id` ran.
    pub fn count(&self, node_id: &str) -> usize {
        self.attempts(node_id).len()
    }

    /// Snapshots seen by `node_id`.
    pub fn snapshots(&self, node_id: &str) -> Vec<ValueMap> {
        self.all()
            .into_iter()
            .filter(|c| c.node_id == node_id)
            .map(|c| c.snapshot)
            .collect()
    }

    /// Node ids in call order.
    pub fn order(&self) -> Vec<String> {
        self.all().into_iter().map(|c| c.node_id).collect()
    }
}

/// Wraps a node so every call is logged before it runs.
pub struct Logged<N> {
    pub inner: N,
    pub log: CallLog,
}

#[async_trait]
impl<N: Node> Node for Logged<N> {
    fn config_schema(&self) -> Value {
        self.inner.config_schema()
    }

    async fn call(&self, state: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        self.log.push(Call {
            node_id: ctx.node_id.clone(),
            attempt: ctx.attempt,
            idempotency_key: ctx.idempotency_key.clone(),
            snapshot: state.clone(),
            step: ctx.step,
        });
        self.inner.call(state, config, ctx).await
    }
}

fn values(config: &ValueMap) -> ValueMap {
    config
        .get("values")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `set`: writes `config.values`.
pub struct Set;

#[async_trait]
impl Node for Set {
    async fn call(&self, _: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        NodeOutcome::Update(values(config))
    }
}

/// `increment`: writes `state[field] + by` (`by` defaults to 1, an unset field counts as 0).
pub struct Increment;

#[async_trait]
impl Node for Increment {
    async fn call(&self, state: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let Some(field) = config.get("field").and_then(Value::as_str) else {
            return NodeOutcome::Fail("increment needs a field".into());
        };
        let by = config.get("by").and_then(Value::as_i64).unwrap_or(1);
        let current = state.get(field).and_then(Value::as_i64).unwrap_or(0);
        NodeOutcome::update(json!({ field: current + by }))
    }
}

/// `flaky`: a retryable error while `attempt <= fail_times`, then writes `config.values` (or
/// fails permanently when `config.then` is `"fail"`).
pub struct Flaky;

#[async_trait]
impl Node for Flaky {
    async fn call(&self, _: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        let fail_times = config
            .get("fail_times")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if u64::from(ctx.attempt) <= fail_times {
            let reason = config
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("flaky");
            return NodeOutcome::Error(reason.to_owned());
        }
        if config.get("then").and_then(Value::as_str) == Some("fail") {
            return NodeOutcome::Fail("gave up".into());
        }
        NodeOutcome::Update(values(config))
    }
}

/// `fail`: a permanent failure with `config.reason`.
pub struct Fail;

#[async_trait]
impl Node for Fail {
    async fn call(&self, _: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        NodeOutcome::Fail(
            config
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("broken")
                .to_owned(),
        )
    }
}

/// `approval`: interrupts into `config.field` until that field holds a value (null and empty
/// lists count as none), then writes it to `config.output` (if set). `config.id` and
/// `config.schema` shape the interrupt.
pub struct Approval;

#[async_trait]
impl Node for Approval {
    async fn call(&self, state: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let field = config
            .get("field")
            .and_then(Value::as_str)
            .unwrap_or("approved");
        match state.get(field) {
            Some(v) if !v.is_null() && v.as_array().is_none_or(|items| !items.is_empty()) => {
                let mut update = ValueMap::new();
                if let Some(out) = config.get("output").and_then(Value::as_str) {
                    update.insert(out.to_owned(), v.clone());
                }
                NodeOutcome::Update(update)
            }
            _ => {
                let mut interrupt = Interrupt::new(field);
                interrupt.id = config.get("id").and_then(Value::as_str).map(str::to_owned);
                interrupt.schema = config.get("schema").cloned();
                NodeOutcome::Interrupt(interrupt)
            }
        }
    }
}

/// `echo`: writes the whole snapshot it saw to `config.field`.
pub struct Echo;

#[async_trait]
impl Node for Echo {
    async fn call(&self, state: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let field = config
            .get("field")
            .and_then(Value::as_str)
            .unwrap_or("seen");
        NodeOutcome::update(json!({ field: Value::Object(state.clone()) }))
    }
}

/// `never`: waits forever.
pub struct Never;

#[async_trait]
impl Node for Never {
    async fn call(&self, _: &ValueMap, _: &ValueMap, _: &NodeContext) -> NodeOutcome {
        std::future::pending::<()>().await;
        NodeOutcome::Update(ValueMap::new())
    }
}

/// `panic`: panics.
pub struct Panics;

#[async_trait]
impl Node for Panics {
    async fn call(&self, _: &ValueMap, _: &ValueMap, _: &NodeContext) -> NodeOutcome {
        panic!("node exploded");
    }
}

/// `await`: the reserved await return.
pub struct Awaits;

#[async_trait]
impl Node for Awaits {
    async fn call(&self, _: &ValueMap, _: &ValueMap, _: &NodeContext) -> NodeOutcome {
        NodeOutcome::Await(json!({"job": 1}))
    }
}

/// `command`: the reserved command return.
pub struct Commands;

#[async_trait]
impl Node for Commands {
    async fn call(&self, _: &ValueMap, _: &ValueMap, _: &NodeContext) -> NodeOutcome {
        NodeOutcome::Command(json!({"goto": "x"}))
    }
}

/// `raw`: returns `config.outcome` as an update when it is a map, else an invalid return.
/// Map keys spelled `dollar:<name>` come out as `$<name>`: graph config may not carry reserved
/// keys (the compiler rejects them), so the node has to make them itself.
pub struct Raw;

fn with_dollar_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let key = match k.strip_prefix("dollar:") {
                        Some(rest) => format!("${rest}"),
                        None => k,
                    };
                    (key, with_dollar_keys(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(with_dollar_keys).collect()),
        other => other,
    }
}

#[async_trait]
impl Node for Raw {
    async fn call(&self, _: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        NodeOutcome::update(with_dollar_keys(
            config.get("outcome").cloned().unwrap_or(Value::Null),
        ))
    }
}

/// Registers `node` under `name`, wrapped in call logging.
pub fn register(registry: &mut NodeRegistry, log: &CallLog, name: &str, node: impl Node) {
    registry
        .register(
            name,
            Logged {
                inner: node,
                log: log.clone(),
            },
        )
        .expect("unique test node name");
}

/// The standard test registry.
pub fn registry(log: &CallLog) -> NodeRegistry {
    let mut r = NodeRegistry::new();
    register(&mut r, log, "set", Set);
    register(&mut r, log, "increment", Increment);
    register(&mut r, log, "flaky", Flaky);
    register(&mut r, log, "fail", Fail);
    register(&mut r, log, "approval", Approval);
    register(&mut r, log, "echo", Echo);
    register(&mut r, log, "never", Never);
    register(&mut r, log, "panic", Panics);
    register(&mut r, log, "await", Awaits);
    register(&mut r, log, "command", Commands);
    register(&mut r, log, "raw", Raw);
    r
}
