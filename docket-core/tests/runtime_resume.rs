//! Resuming saved runs (`docs/runs-and-moments.md`, “Initialization”; scenario 190 of
//! `docs/scenarios.md`).

mod support;

use docket_core::inline::{resume_inline, Stop};
use docket_core::model::{CheckpointType as C, EventType as E, RunStatus};
use docket_core::runtime::{propose_init, ErrorKind, Initialization};
use serde_json::json;
use support::{at, doc, edge, field, output, set, types, Fx};

fn chain() -> docket_core::graph::GraphDocument {
    doc(json!({
        "fields": {"a": field("integer"), "b": field("integer"), "c": field("integer")},
        "outputs": {"a": {}, "b": {}, "c": {}},
        "nodes": {"x": set(json!({"a": 1})), "y": set(json!({"b": 2})), "z": set(json!({"c": 3}))},
        "edges": {"e0": edge("$start", "x"), "e1": edge("x", "y"), "e2": edge("y", "z")},
    }))
}

#[tokio::test]
async fn resuming_a_mid_flight_run_re_emits_run_initialized_and_finishes() {
    let fx = Fx::new();
    let graph = chain();
    let full = fx.run(&graph, json!({})).await;
    let saved = full.checkpoints[1].run.clone();

    let later = Fx::new();
    later.clock.advance_millis(1_000);
    let resumed = resume_inline(&graph, &saved, &later.nodes, &later.options())
        .await
        .expect("resume");
    assert_eq!(resumed.stop, Stop::Terminal);
    assert_eq!(
        types(&resumed),
        vec![
            C::RunInitialized,
            C::StepCommitted,
            C::StepCommitted,
            C::RunCompleted
        ]
    );
    let reinit = &resumed.checkpoints[0];
    assert_eq!(reinit.seq, saved.checkpoint_seq + 1);
    assert_eq!(reinit.events[0].event_type, E::RunInitialized);
    assert_eq!(reinit.events[0].payload["resumed"], json!(true));
    assert_eq!(resumed.run.output, full.run.output);
    assert_eq!(later.log.order(), vec!["y".to_owned(), "z".to_owned()]);
}

#[tokio::test]
async fn resuming_an_older_checkpoint_re_executes_the_uncommitted_superstep() {
    let fx = Fx::new();
    let graph = chain();
    let full = fx.run(&graph, json!({})).await;
    let older = full.checkpoints[2].run.clone();
    assert_eq!(fx.log.count("z"), 1);
    let resumed = resume_inline(&graph, &older, &fx.nodes, &fx.options())
        .await
        .expect("resume");
    assert_eq!(
        fx.log.count("z"),
        2,
        "the superstep after the checkpoint runs again"
    );
    assert_eq!(output(&resumed.run, "c"), json!(3));
}

#[tokio::test]
async fn resuming_against_another_graph_is_rejected() {
    let fx = Fx::new();
    let full = fx.run(&chain(), json!({})).await;
    let other = doc(json!({"id": "other"}));
    let err = resume_inline(&other, &full.checkpoints[1].run, &fx.nodes, &fx.options())
        .await
        .expect_err("mismatch");
    assert_eq!(err.error.kind, ErrorKind::GraphMismatch);
    assert!(err.checkpoints.is_empty());
}

#[tokio::test]
async fn resuming_a_terminal_run_returns_it_unchanged() {
    let fx = Fx::new();
    let graph = chain();
    let full = fx.run(&graph, json!({})).await;
    let resumed = resume_inline(&graph, &full.run, &fx.nodes, &fx.options())
        .await
        .expect("terminal");
    assert_eq!(resumed.stop, Stop::Terminal);
    assert_eq!(resumed.run, full.run);
    assert!(resumed.checkpoints.is_empty());
}

#[tokio::test]
async fn process_startup_is_not_graph_progress() {
    let fx = Fx::new();
    let graph = chain();
    let full = fx.run(&graph, json!({})).await;
    let saved = full.checkpoints[1].run.clone();
    let rtg = fx.compile(&graph);
    let Initialization::Moment(moment) = propose_init(&rtg, &saved, at(42)).expect("re-init")
    else {
        panic!("a saved run re-initializes");
    };
    let mut expected = saved.clone();
    expected.updated_at = Some(at(42));
    expected.checkpoint_seq += 1;
    expected.event_seq += 2;
    assert_eq!(
        moment.run, expected,
        "only updated_at and the counters change"
    );
    assert_eq!(moment.run.status, RunStatus::Running);
    assert_eq!(moment.events.len(), 2);
}
