//! Interrupts through the inline driver (`docs/runs-and-moments.md`, “Interrupts and cancellation”;
//! scenario 186 of `docs/scenarios.md`).

mod support;

use docket_core::graph::GraphDocument;
use docket_core::inline::{resolve_interrupt_inline, resume_inline, Stop};
use docket_core::model::{CheckpointType as C, EventType as E, InterruptStatus, RunStatus};
use docket_core::runtime::ErrorKind;
use serde_json::{json, Value};
use support::{doc, edge, field, node, output, set, state, types, Fx};

fn approval(config: Value) -> GraphDocument {
    doc(json!({
        "fields": {"approved": field("boolean"), "decision": field("boolean"), "count": field("integer")},
        "outputs": {"decision": {}},
        "nodes": {"ask": node("approval", config)},
        "edges": {"e0": edge("$start", "ask"), "e1": edge("ask", "$finish")},
    }))
}

fn basic() -> GraphDocument {
    approval(json!({"field": "approved", "output": "decision"}))
}

#[tokio::test]
async fn an_interrupting_node_pauses_as_waiting_in_the_same_checkpoint() {
    let fx = Fx::new();
    let paused = fx.run(&basic(), json!({})).await;
    assert_eq!(paused.stop, Stop::Waiting);
    assert_eq!(
        types(&paused),
        vec![C::RunInitialized, C::InterruptRequested]
    );
    let checkpoint = &paused.checkpoints[1];
    assert_eq!(checkpoint.run.status, RunStatus::Waiting);
    let interrupt = &paused.run.interrupts["interrupt_1"];
    assert_eq!(interrupt.node_id, "ask");
    assert_eq!(interrupt.status, InterruptStatus::Open);
    assert_eq!(interrupt.resume_channel, "approved");
    assert_eq!(interrupt.created_at, support::at(0));
    assert!(paused.run.pending_nodes.contains("ask"));
    assert_eq!(paused.run.step, 1);
    assert!(
        !checkpoint
            .events
            .iter()
            .any(|e| e.event_type == E::NodeCompleted),
        "an interrupting node is not completed"
    );
}

#[tokio::test]
async fn a_resolution_writes_the_resume_field_and_re_executes_the_node() {
    let fx = Fx::new();
    let graph = basic();
    let paused = fx.run(&graph, json!({})).await;
    let done = resolve_interrupt_inline(
        &graph,
        &paused.run,
        "interrupt_1",
        json!(true),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect("resolve");
    assert_eq!(
        types(&done),
        vec![C::InterruptResolved, C::StepCommitted, C::RunCompleted]
    );
    assert_eq!(output(&done.run, "decision"), json!(true));
    assert_eq!(fx.log.count("ask"), 2);
    assert_eq!(fx.log.snapshots("ask")[1]["approved"], json!(true));
    let resolved = &done.run.interrupts["interrupt_1"];
    assert_eq!(resolved.status, InterruptStatus::Resolved);
    assert_eq!(resolved.resolved_at, Some(support::at(0)));
    assert!(done.run.pending_nodes.is_empty());
}

#[tokio::test]
async fn node_chosen_ids_and_schemas_are_kept() {
    let fx = Fx::new();
    let graph = approval(
        json!({"field": "approved", "id": "manager-ok", "schema": {"type": "boolean", "required": true}}),
    );
    let paused = fx.run(&graph, json!({})).await;
    let interrupt = &paused.run.interrupts["manager-ok"];
    assert_eq!(
        interrupt.schema,
        Some(json!({"type": "boolean", "required": true}))
    );
    assert_eq!(
        paused.run.open_interrupt_ids(),
        vec!["manager-ok".to_owned()]
    );
}

#[tokio::test]
async fn schema_invalid_and_non_portable_resolutions_are_rejected() {
    let fx = Fx::new();
    let graph =
        approval(json!({"field": "approved", "schema": {"type": "boolean", "required": true}}));
    let paused = fx.run(&graph, json!({})).await;
    for (value, needle) in [
        (json!("yes"), "expected boolean"),
        (json!(null), "is required"),
        (json!({"$x": 1}), "reserved"),
    ] {
        let err = resolve_interrupt_inline(
            &graph,
            &paused.run,
            "interrupt_1",
            value.clone(),
            &fx.nodes,
            &fx.options(),
        )
        .await
        .expect_err("invalid resolution");
        assert_eq!(err.error.kind, ErrorKind::InvalidInput, "{value}");
        assert!(
            err.error.message.contains(needle),
            "{value}: {}",
            err.error.message
        );
        assert!(err.checkpoints.is_empty());
    }
}

#[tokio::test]
async fn a_resolution_must_also_be_a_valid_write_of_the_resume_field() {
    let fx = Fx::new();
    let graph = approval(json!({"field": "count"}));
    let paused = fx.run(&graph, json!({})).await;
    let err = resolve_interrupt_inline(
        &graph,
        &paused.run,
        "interrupt_1",
        json!("many"),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect_err("not an integer");
    assert_eq!(err.error.kind, ErrorKind::InvalidInput);
    assert_eq!(err.error.node_id.as_deref(), Some("ask"));
    assert!(!err.error.reasons().is_empty());
}

#[tokio::test]
async fn unknown_ids_and_completed_runs_are_rejected() {
    let fx = Fx::new();
    let graph = basic();
    let paused = fx.run(&graph, json!({})).await;
    let err = resolve_interrupt_inline(
        &graph,
        &paused.run,
        "nope",
        json!(true),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect_err("unknown");
    assert_eq!(err.error.kind, ErrorKind::NotFound);
    let done = resolve_interrupt_inline(
        &graph,
        &paused.run,
        "interrupt_1",
        json!(true),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect("resolve");
    let err = resolve_interrupt_inline(
        &graph,
        &done.run,
        "interrupt_1",
        json!(true),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect_err("completed");
    assert_eq!(err.error.kind, ErrorKind::InactiveRun);
}

#[tokio::test]
async fn a_waiting_run_resumes_via_resume_inline_and_stays_waiting() {
    let fx = Fx::new();
    let graph = basic();
    let paused = fx.run(&graph, json!({})).await;
    let resumed = resume_inline(&graph, &paused.run, &fx.nodes, &fx.options())
        .await
        .expect("resume");
    assert_eq!(resumed.stop, Stop::Waiting);
    assert_eq!(types(&resumed), vec![C::RunInitialized]);
    let event = &resumed.checkpoints[0].events[0];
    assert_eq!(event.payload["resumed"], json!(true));
    assert_eq!(resumed.run.status, RunStatus::Waiting);
    assert_eq!(fx.log.count("ask"), 1, "re-initialization runs nothing");
    let done = resolve_interrupt_inline(
        &graph,
        &resumed.run,
        "interrupt_1",
        json!(false),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect("resolve after resume");
    assert_eq!(output(&done.run, "decision"), json!(false));
}

#[tokio::test]
async fn an_interrupt_with_other_runnable_work_keeps_the_run_running() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"approved": field("boolean"), "x": field("integer")},
        "nodes": {
            "ask": node("approval", json!({"field": "approved"})),
            "a": set(json!({"x": 1})), "b": set(json!({"x": 2})),
        },
        "edges": {"e0": edge("$start", "ask"), "e1": edge("$start", "a"), "e2": edge("a", "b")},
    }));
    let paused = fx.run(&graph, json!({})).await;
    assert_eq!(
        types(&paused),
        vec![C::RunInitialized, C::InterruptRequested, C::StepCommitted]
    );
    assert_eq!(paused.checkpoints[1].run.status, RunStatus::Running);
    assert_eq!(
        paused.run.status,
        RunStatus::Waiting,
        "waits once b is done"
    );
    assert_eq!(state(&paused.run, "x"), Some(json!(2)));
    assert_eq!(
        paused.checkpoints[2].checkpoint_type,
        C::StepCommitted,
        "a barrier without new interrupts that leaves only open ones"
    );
}
