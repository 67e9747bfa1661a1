//! Unit-test fixtures: small compiled graphs and initialized runs.

use serde_json::{json, Value};

use super::init::{build_initial_run, propose_init, Initialization};
use super::SequentialIds;
use crate::graph::{compile_for_publication, CompileOptions, GraphDocument, RuntimeGraph};
use crate::model::{Run, Timestamp, ValueMap};
use crate::node::{FnNode, NodeOutcome, NodeRegistry};

/// A registry with `set` (writes `config.values`).
pub fn registry() -> NodeRegistry {
    NodeRegistry::new()
        .with(
            "set",
            FnNode::new(|_, config: &ValueMap, _| {
                NodeOutcome::Update(
                    config
                        .get("values")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                )
            }),
        )
        .expect("fresh registry")
}

/// Compiles a graph body (`schema_version` and `id` added).
pub fn rtg(body: Value) -> RuntimeGraph {
    let mut map = body.as_object().cloned().expect("map body");
    map.insert("schema_version".into(), json!(1));
    map.entry("id").or_insert(json!("g"));
    let doc = GraphDocument::from_value(Value::Object(map)).expect("document");
    compile_for_publication(&doc, &registry(), CompileOptions::default())
        .expect("compiles")
        .runtime
}

/// The fixed instant unit tests run at.
pub fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_000_000 + ms)
}

/// An initialized (committed) run of `rtg` with `input`.
pub fn started(rtg: &RuntimeGraph, input: Value) -> Run {
    let input = input.as_object().cloned().unwrap_or_default();
    let run =
        build_initial_run(rtg, input, None, ValueMap::new(), &SequentialIds::new()).expect("build");
    match propose_init(rtg, &run, t(0)).expect("init") {
        Initialization::Moment(m) => m.run,
        Initialization::Terminal(_) => panic!("fresh run"),
    }
}

/// A `set` node writing `values`.
pub fn set(values: Value) -> Value {
    json!({"implementation": "set", "config": {"values": values}})
}
