//! The acceptance test of the moment loop: one graph with fan-out, a barrier join, a guarded
//! cycle bounded by `max_supersteps`, a flaky node under a retry policy and an approval
//! interrupt, driven through the inline driver.

mod support;

use docket_core::inline::{resolve_interrupt_inline, Stop};
use docket_core::model::{CheckpointType as C, RunStatus};
use serde_json::json;
use support::{doc, edge, field, node, output, set, types, Fx};

fn acceptance_graph() -> docket_core::graph::GraphDocument {
    doc(json!({
        "id": "acceptance",
        "policies": {"max_supersteps": 10},
        "fields": {
            "visited": {"schema": {"type": "list", "item": {"type": "string"}}, "reducer": "append"},
            "counter": field("integer"),
            "approved": field("boolean"),
            "decision": field("boolean"),
        },
        "outputs": {"visited": {}, "counter": {}, "decision": {}},
        "nodes": {
            "split": set(json!({"visited": "split"})),
            "left": set(json!({"visited": "left"})),
            "right": {
                "implementation": "flaky",
                "config": {"fail_times": 2, "values": {"visited": "right"}},
                "policies": {"retry": {"max_attempts": 3, "backoff_ms": 100}},
            },
            "join": set(json!({"visited": "join"})),
            "loop": node("increment", json!({"field": "counter"})),
            "approve": node("approval", json!({"field": "approved", "output": "decision"})),
        },
        "edges": {
            "e0": edge("$start", "split"),
            "e1": edge("split", "left"),
            "e2": edge("split", "right"),
            "e3": {"from": ["left", "right"], "to": "join"},
            "e4": edge("join", "loop"),
            "e5": {"from": "loop", "to": "loop",
                   "guard": {"op": "not", "of": {"op": "equals", "ref": "counter", "value": 3}}},
            "e6": {"from": "loop", "to": "approve",
                   "guard": {"op": "equals", "ref": "counter", "value": 3}},
            "e7": edge("approve", "$finish"),
        },
    }))
}

#[tokio::test]
async fn fan_out_barrier_cycle_retry_and_approval_run_to_completion() {
    let fx = Fx::new();
    let graph = acceptance_graph();
    let paused = fx.run(&graph, json!({})).await;

    assert_eq!(paused.stop, Stop::Waiting);
    assert_eq!(
        types(&paused),
        vec![
            C::RunInitialized,
            C::StepCommitted,      // split
            C::RetryScheduled,     // right attempt 1 failed, left parked
            C::RetryScheduled,     // right attempt 2 failed
            C::StepCommitted,      // left + right, barrier fires
            C::StepCommitted,      // join
            C::StepCommitted,      // loop: counter 1
            C::StepCommitted,      // loop: counter 2
            C::StepCommitted,      // loop: counter 3
            C::InterruptRequested, // approve
        ]
    );
    assert_eq!(paused.run.status, RunStatus::Waiting);
    assert_eq!(fx.sleeper.calls(), vec![100, 100]);
    assert_eq!(fx.log.attempts("right"), vec![1, 2, 3]);
    assert_eq!(
        fx.log.attempts("left"),
        vec![1],
        "a parked sibling never re-runs"
    );
    assert_eq!(fx.log.count("loop"), 3);
    let open = paused.run.open_interrupt_ids();
    assert_eq!(open, vec!["interrupt_1".to_owned()]);

    let done = resolve_interrupt_inline(
        &graph,
        &paused.run,
        &open[0],
        json!(true),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect("resolution drives to completion");
    assert_eq!(done.stop, Stop::Terminal);
    assert_eq!(
        types(&done),
        vec![C::InterruptResolved, C::StepCommitted, C::RunCompleted]
    );
    assert_eq!(done.run.status, RunStatus::Done);
    assert_eq!(
        output(&done.run, "visited"),
        json!(["split", "left", "right", "join"])
    );
    assert_eq!(output(&done.run, "counter"), json!(3));
    assert_eq!(output(&done.run, "decision"), json!(true));
    assert_eq!(done.run.step, 8);
    assert_eq!(done.run.checkpoint_seq, 13);
    let seqs: Vec<u64> = paused
        .checkpoints
        .iter()
        .chain(done.checkpoints.iter())
        .map(|c| c.seq)
        .collect();
    assert_eq!(seqs, (1..=13).collect::<Vec<u64>>());
}
