//! Concurrency of a superstep (`docs/runs-and-moments.md`, “Executing a superstep”; scenario 191 of
//! `docs/scenarios.md`): every activation runs at the same time, against the same snapshot, with
//! its own identity.

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use docket_core::model::{RunStatus, ValueMap};
use docket_core::node::{Node, NodeContext, NodeOutcome};
use serde_json::json;
use support::{doc, edge, field, node, register, set, state, Fx};
use tokio::sync::Barrier;

/// Completes only once every sibling reached the same barrier.
struct Rendezvous(Arc<Barrier>);

#[async_trait]
impl Node for Rendezvous {
    async fn call(&self, _: &ValueMap, config: &ValueMap, _: &NodeContext) -> NodeOutcome {
        self.0.wait().await;
        NodeOutcome::Update(
            config
                .get("values")
                .and_then(|v| v.as_object())
                .cloned()
                .unwrap_or_default(),
        )
    }
}

#[tokio::test(start_paused = true)]
async fn all_activations_of_a_superstep_run_concurrently() {
    // Sequential execution could never pass the barrier: the first node would time out.
    let mut fx = Fx::new().max_attempt_ms(1_000);
    let log = fx.log.clone();
    register(
        &mut fx.nodes,
        &log,
        "rendezvous",
        Rendezvous(Arc::new(Barrier::new(3))),
    );
    let graph = doc(json!({
        "fields": {"a": field("integer"), "b": field("integer"), "c": field("integer")},
        "outputs": {"a": {}, "b": {}, "c": {}},
        "nodes": {
            "a": node("rendezvous", json!({"values": {"a": 1}})),
            "b": node("rendezvous", json!({"values": {"b": 2}})),
            "c": node("rendezvous", json!({"values": {"c": 3}})),
        },
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b"), "e2": edge("$start", "c")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(
        driven.run.output,
        Some(
            json!({"a": 1, "b": 2, "c": 3})
                .as_object()
                .cloned()
                .expect("map")
        )
    );
}

#[tokio::test]
async fn siblings_see_one_snapshot_and_not_each_others_writes() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("integer"), "seen_a": field("map"), "seen_b": field("map")},
        "nodes": {
            "seed": set(json!({"x": 1})),
            "a": node("echo", json!({"field": "seen_a"})),
            "b": node("echo", json!({"field": "seen_b"})),
            "w": set(json!({"x": 2})),
        },
        "edges": {
            "e0": edge("$start", "seed"),
            "e1": edge("seed", "a"), "e2": edge("seed", "b"), "e3": edge("seed", "w"),
        },
    }));
    let driven = fx.run(&graph, json!({})).await;
    let seen_a = state(&driven.run, "seen_a").expect("a wrote");
    assert_eq!(seen_a, state(&driven.run, "seen_b").expect("b wrote"));
    assert_eq!(seen_a["x"], json!(1), "w's same-step write is invisible");
    assert_eq!(state(&driven.run, "x"), Some(json!(2)));
}

/// Records the context it was called with.
struct Recorder(Arc<Mutex<Vec<NodeContext>>>);

#[async_trait]
impl Node for Recorder {
    async fn call(&self, _: &ValueMap, _: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        self.0.lock().expect("lock").push(ctx.clone());
        NodeOutcome::Update(ValueMap::new())
    }
}

#[tokio::test]
async fn a_node_context_carries_identity_versions_and_application_context() {
    let mut fx = Fx::new();
    fx.config = fx
        .config
        .clone()
        .with_context(json!({"tenant": "acme"}).as_object().cloned().expect("map"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = fx.log.clone();
    register(&mut fx.nodes, &log, "recorder", Recorder(seen.clone()));
    let graph = doc(json!({
        "inputs": {"q": field("string")},
        "fields": {"x": field("integer")},
        "nodes": {"first": set(json!({"x": 1})), "rec": node("recorder", json!({}))},
        "edges": {"e0": edge("$start", "first"), "e1": edge("first", "rec")},
    }));
    fx.run(&graph, json!({"q": "hi"})).await;
    let contexts = seen.lock().expect("lock").clone();
    assert_eq!(contexts.len(), 1);
    let ctx = &contexts[0];
    assert_eq!(ctx.run_id.as_str(), "run_1");
    assert_eq!(ctx.node_id, "rec");
    assert_eq!(ctx.step, 1);
    assert_eq!(ctx.attempt, 1);
    assert_eq!(ctx.task_id, "run_1:1:rec");
    assert_eq!(ctx.idempotency_key, "run_1:1:rec:1");
    assert_eq!(ctx.application["tenant"], json!("acme"));
    assert_eq!(
        ctx.source_versions,
        [("q".to_owned(), 1), ("x".to_owned(), 1)]
            .into_iter()
            .collect()
    );
}
