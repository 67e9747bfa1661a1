//! Attempt timeouts and cancellation (`docs/runs-and-moments.md`, “Executing a superstep”;
//! `docs/graphs.md`, “Host checks”; scenario 184 of `docs/scenarios.md`). Time is tokio's paused
//! clock: a never-ready node times out as soon as the runtime is idle, without real waiting.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use docket_core::inline::run_inline;
use docket_core::model::{CheckpointType as C, EventType as E, RunStatus, ValueMap};
use docket_core::node::{Node, NodeContext, NodeOutcome};
use docket_core::runtime::{check_execution_policy, propose_advance, ErrorKind, Proposal};
use serde_json::{json, Value};
use support::{all_events, doc, edge, field, node, register, set, state, types, Fx};

/// Waits forever; records when its attempt is dropped (aborted).
struct Hang {
    started: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl Node for Hang {
    async fn call(&self, _: &ValueMap, _: &ValueMap, _: &NodeContext) -> NodeOutcome {
        let _guard = SetOnDrop(self.dropped.clone());
        self.started.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
        NodeOutcome::Update(ValueMap::new())
    }
}

/// Yields to the runtime until `flag` is set, failing after a bounded number of rounds.
async fn eventually(flag: &AtomicBool, what: &str) {
    for _ in 0..10_000 {
        if flag.load(Ordering::SeqCst) {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("{what} never happened");
}

fn hanging(fx: &mut Fx) -> (Arc<AtomicBool>, Arc<AtomicBool>) {
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let log = fx.log.clone();
    register(
        &mut fx.nodes,
        &log,
        "hang",
        Hang {
            started: started.clone(),
            dropped: dropped.clone(),
        },
    );
    (started, dropped)
}

fn one(implementation: &str, policies: Value) -> docket_core::graph::GraphDocument {
    doc(json!({
        "fields": {"x": field("integer")},
        "nodes": {"n": {"implementation": implementation, "policies": policies}},
        "edges": {"e0": edge("$start", "n")},
    }))
}

#[tokio::test(start_paused = true)]
async fn a_node_without_a_timeout_inherits_the_host_maximum() {
    let fx = Fx::new().max_attempt_ms(50);
    let started = tokio::time::Instant::now();
    let driven = fx.run(&one("never", json!({})), json!({})).await;
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    assert_eq!(types(&driven), vec![C::RunInitialized, C::RunFailed]);
    let failure = driven.run.failure.expect("failure");
    assert_eq!(failure.details["errors"]["n"], json!("timeout"));
}

#[tokio::test(start_paused = true)]
async fn an_explicit_timeout_below_the_maximum_wins() {
    let fx = Fx::new().max_attempt_ms(50);
    let started = tokio::time::Instant::now();
    let driven = fx
        .run(&one("never", json!({"timeout_ms": 20})), json!({}))
        .await;
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    assert_eq!(driven.run.status, RunStatus::Failed);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_retryable_within_the_budget() {
    let fx = Fx::new().max_attempt_ms(30);
    let driven = fx
        .run(
            &one(
                "never",
                json!({"retry": {"max_attempts": 2, "backoff_ms": 5}}),
            ),
            json!({}),
        )
        .await;
    assert_eq!(
        types(&driven),
        vec![C::RunInitialized, C::RetryScheduled, C::RunFailed]
    );
    let failed: Vec<(Value, Value)> = all_events(&driven)
        .into_iter()
        .filter(|e| e.event_type == E::NodeFailed)
        .map(|e| (e.payload["reason"].clone(), e.payload["permanent"].clone()))
        .collect();
    assert_eq!(
        failed,
        vec![
            (json!("timeout"), json!(false)),
            (json!("timeout"), json!(true))
        ]
    );
    assert_eq!(fx.log.attempts("n"), vec![1, 2]);
}

#[tokio::test]
async fn a_timeout_above_the_host_maximum_rejects_the_graph_before_anything_runs() {
    let fx = Fx::new().max_attempt_ms(100);
    let graph = doc(json!({
        "nodes": {
            "b": {"implementation": "set", "policies": {"timeout_ms": 101}},
            "c": {"implementation": "set", "policies": {"timeout_ms": 500}},
            "a": {"implementation": "set", "policies": {"timeout_ms": 100}},
        },
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b"), "e2": edge("$start", "c")},
    }));
    let err = run_inline(&graph, json!({}), &fx.nodes, &fx.options())
        .await
        .expect_err("incompatible");
    assert_eq!(err.error.kind, ErrorKind::IncompatibleExecutionPolicy);
    assert_eq!(
        err.error.node_id.as_deref(),
        Some("b"),
        "the first offender by id"
    );
    assert_eq!(err.error.details["timeout_ms"], json!(101));
    assert_eq!(err.error.details["max_attempt_elapsed_ms"], json!(100));
    assert!(err.checkpoints.is_empty());
    assert!(fx.log.all().is_empty());

    let rtg = fx.compile(&graph);
    assert!(check_execution_policy(&rtg, 500).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_sibling_is_aborted_while_the_other_completes() {
    let mut fx = Fx::new().max_attempt_ms(1_000);
    let (started, dropped) = hanging(&mut fx);
    let graph = doc(json!({
        "fields": {"x": field("integer")},
        "nodes": {
            "slow": {"implementation": "hang", "policies": {"timeout_ms": 10}},
            "quick": set(json!({"x": 1})),
        },
        "edges": {"e0": edge("$start", "slow"), "e1": edge("$start", "quick")},
    }));
    let rtg = fx.compile(&graph);
    let init = fx.start(&rtg, json!({}));
    let failed = fx.moment(&rtg, &init.run).await;
    assert!(started.load(Ordering::SeqCst));
    eventually(&dropped, "the timed-out attempt being aborted").await;
    assert_eq!(failed.checkpoint_type, C::RunFailed);
    assert_eq!(fx.log.count("quick"), 1);
    assert_eq!(state(&failed.run, "x"), None);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_advance_future_aborts_in_flight_node_work() {
    let mut fx = Fx::new().max_attempt_ms(60_000);
    let (started, dropped) = hanging(&mut fx);
    let rtg = fx.compile(&one("hang", json!({})));
    let init = fx.start(&rtg, json!({}));
    let advance = propose_advance(&rtg, &init.run, &fx.nodes, &fx.config);
    let outcome = tokio::time::timeout(Duration::from_millis(10), advance).await;
    assert!(outcome.is_err(), "the caller gave up");
    assert!(started.load(Ordering::SeqCst));
    eventually(&dropped, "the orphaned attempt being aborted").await;
}

#[tokio::test(start_paused = true)]
async fn any_panic_payload_is_normalized_into_a_retryable_failure() {
    let mut fx = Fx::new();
    let log = fx.log.clone();
    register(
        &mut fx.nodes,
        &log,
        "odd_panic",
        docket_core::node::FnNode::new(|_, _, _| std::panic::panic_any(42_u8)),
    );
    let rtg = fx.compile(&one("odd_panic", json!({"retry": {"max_attempts": 2}})));
    let init = fx.start(&rtg, json!({}));
    let Proposal::Moment(park) = fx.advance(&rtg, &init.run).await else {
        panic!("a moment");
    };
    assert_eq!(park.checkpoint_type, C::RetryScheduled);
    assert_eq!(
        park.events[0].payload["reason"],
        json!("panic: non-string panic payload")
    );
}

#[tokio::test(start_paused = true)]
async fn a_fast_node_finishes_long_before_its_deadline() {
    let fx = Fx::new().max_attempt_ms(60_000);
    let started = tokio::time::Instant::now();
    let driven = fx
        .run(
            &doc(json!({
                "fields": {"x": field("integer")},
                "nodes": {"n": node("set", json!({"values": {"x": 1}}))},
                "edges": {"e0": edge("$start", "n")},
            })),
            json!({}),
        )
        .await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert!(started.elapsed() < Duration::from_millis(1));
}
