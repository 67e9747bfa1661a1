//! The inline driver (`docs/runs-and-moments.md`, “The processless driver”; scenario 192 of
//! `docs/scenarios.md`) and the drain-level scenarios it shares with the worker (scenarios 16–17 of
//! `docs/scenarios.md`).

mod support;

use docket_core::inline::{run_inline, step_inline, InlineOptions, Stop};
use docket_core::model::{validate_durable, CheckpointType as C, RunId, RunStatus};
use docket_core::runtime::{ErrorKind, Phase};
use serde_json::{json, Value};
use support::{doc, edge, field, node, output, set, types, Fx};

fn pipeline() -> docket_core::graph::GraphDocument {
    doc(json!({
        "inputs": {"n": {"schema": {"type": "integer", "min": 0}, "required": true}},
        "fields": {"a": field("integer"), "b": field("integer")},
        "outputs": {"a": {}, "b": {}, "n": {}},
        "nodes": {
            "x": set(json!({"a": 1})),
            "y": {"implementation": "flaky", "config": {"fail_times": 1, "values": {"b": 2}},
                  "policies": {"retry": {"max_attempts": 2, "backoff_ms": 10}}},
        },
        "edges": {"e0": edge("$start", "x"), "e1": edge("x", "y")},
    }))
}

fn endless() -> docket_core::graph::GraphDocument {
    doc(json!({
        "fields": {"n": field("integer")},
        "nodes": {"inc": node("increment", json!({"field": "n"}))},
        "edges": {"e0": edge("$start", "inc"), "again": edge("inc", "inc")},
    }))
}

#[tokio::test]
async fn a_precompiled_runtime_graph_is_accepted() {
    let fx = Fx::new();
    let rtg = fx.compile(&pipeline());
    let driven = run_inline(&rtg, json!({"n": 4}), &fx.nodes, &fx.options())
        .await
        .expect("inline");
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(output(&driven.run, "n"), json!(4));
    assert_eq!(driven.run.graph_hash, rtg.graph_hash);
}

#[tokio::test]
async fn every_checkpoint_is_durable_and_restorable_with_monotonic_seqs() {
    let fx = Fx::new();
    let graph = pipeline();
    let driven = fx.run(&graph, json!({"n": 1})).await;
    let mut last_seq = 0;
    for checkpoint in &driven.checkpoints {
        assert!(checkpoint.seq > last_seq);
        last_seq = checkpoint.seq;
        validate_durable(&checkpoint.run).expect("durable");
        if checkpoint.run.status.is_terminal() {
            continue;
        }
        let again = Fx::new();
        again.clock.advance_millis(10);
        let restored = docket_core::inline::resume_inline(
            &graph,
            &checkpoint.run,
            &again.nodes,
            &again.options(),
        )
        .await
        .expect("restorable");
        assert_eq!(
            restored.run.output, driven.run.output,
            "from seq {}",
            checkpoint.seq
        );
    }
}

#[tokio::test]
async fn run_ids_and_metadata_are_honored() {
    let fx = Fx::new();
    let options = fx
        .options()
        .with_run_id(RunId::new("order-42").expect("id"))
        .with_metadata(json!({"source": "test"}).as_object().cloned().expect("map"));
    let driven = run_inline(&pipeline(), json!({"n": 1}), &fx.nodes, &options)
        .await
        .expect("inline");
    assert_eq!(driven.run.id.as_str(), "order-42");
    assert_eq!(driven.run.metadata["source"], json!("test"));
    assert!(driven
        .checkpoints
        .iter()
        .all(|c| c.run.id.as_str() == "order-42"));
    assert!(fx
        .log
        .all()
        .iter()
        .all(|c| c.idempotency_key.starts_with("order-42:")));
}

#[tokio::test]
async fn max_steps_counts_committed_non_retry_moments() {
    let mut fx = Fx::new();
    fx.max_steps = Some(3);
    let driven = fx.run(&endless(), json!({})).await;
    assert_eq!(driven.stop, Stop::MaxSteps);
    assert_eq!(
        types(&driven),
        vec![
            C::RunInitialized,
            C::StepCommitted,
            C::StepCommitted,
            C::StepCommitted
        ]
    );
    assert_eq!(driven.run.status, RunStatus::Running);

    let mut fx = Fx::new();
    fx.max_steps = Some(1);
    let driven = fx.run(&pipeline(), json!({"n": 1})).await;
    assert_eq!(types(&driven), vec![C::RunInitialized, C::StepCommitted]);
    let mut fx = Fx::new();
    fx.max_steps = Some(2);
    let driven = fx.run(&pipeline(), json!({"n": 1})).await;
    assert_eq!(
        types(&driven),
        vec![
            C::RunInitialized,
            C::StepCommitted,
            C::RetryScheduled,
            C::StepCommitted
        ],
        "the retry park is not counted"
    );
}

#[tokio::test]
async fn an_invalid_graph_is_a_typed_error_with_diagnostics() {
    let fx = Fx::new();
    let graph = doc(json!({
        "nodes": {"a": set(json!({}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("a", "ghost")},
    }));
    let err = run_inline(&graph, json!({}), &fx.nodes, &fx.options())
        .await
        .expect_err("invalid graph");
    assert_eq!(err.error.kind, ErrorKind::InvalidGraph);
    assert_eq!(err.error.phase, Phase::Compile);
    let diagnostics = err.error.details["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(diagnostics
        .iter()
        .any(|d| d["code"] == json!("unknown_edge_target")));
    assert!(err.checkpoints.is_empty());
    assert!(fx.log.all().is_empty());
}

#[tokio::test]
async fn invalid_inputs_fail_before_any_checkpoint_with_every_reason() {
    let fx = Fx::new();
    let err = run_inline(
        &pipeline(),
        json!({"n": -1, "extra": true, "$bad": 1}),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect_err("invalid input");
    assert_eq!(err.error.kind, ErrorKind::InvalidInput);
    assert_eq!(err.error.phase, Phase::Init);
    let reasons = err.error.reasons();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons
        .iter()
        .any(|r| r.contains("unknown input \"extra\"")));
    assert!(reasons.iter().any(|r| r.contains("\"$bad\" is reserved")));
    assert!(reasons.iter().any(|r| r.contains("input \"n\"")));
    assert!(err.checkpoints.is_empty());
    assert!(fx.log.all().is_empty());

    for (input, needle) in [
        (json!({}), "required input \"n\" is missing"),
        (json!({"n": "four"}), "expected integer"),
        (json!({"n": {"deep": {"$ref": 1}}}), "not portable"),
        (json!([1]), "expected a map"),
    ] {
        let err = run_inline(&pipeline(), input.clone(), &fx.nodes, &fx.options())
            .await
            .expect_err("invalid");
        assert_eq!(err.error.kind, ErrorKind::InvalidInput, "{input}");
        assert!(
            err.error.reasons().iter().any(|r| r.contains(needle)),
            "{input}: {:?}",
            err.error.reasons()
        );
    }
}

#[tokio::test]
async fn a_required_input_with_a_default_may_be_omitted() {
    let fx = Fx::new();
    let graph = doc(json!({
        "inputs": {"n": {"schema": {"type": "integer"}, "required": true, "default": 3}},
        "nodes": {"a": set(json!({}))},
        "edges": {"e0": edge("$start", "a")},
    }));
    let driven = fx.run(&graph, json!(null)).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(fx.log.snapshots("a")[0]["n"], json!(3));
}

#[tokio::test]
async fn a_malformed_start_guard_aborts_the_start_without_a_run() {
    let fx = Fx::new();
    let mut rtg = fx.compile(&pipeline());
    rtg.edges.get_mut("e0").expect("edge").guard = Some(json!({"op": "nope"}));
    let err = run_inline(&rtg, json!({"n": 1}), &fx.nodes, &fx.options())
        .await
        .expect_err("guard");
    assert_eq!(err.error.kind, ErrorKind::GuardEvaluationFailed);
    assert_eq!(err.error.phase, Phase::Init);
    assert_eq!(err.error.details["edge_id"], json!("e0"));
    assert!(err.checkpoints.is_empty());
}

#[tokio::test]
async fn step_inline_advances_exactly_one_committed_transition() {
    let fx = Fx::new();
    let graph = pipeline();
    let rtg = fx.compile(&graph);
    let mut run = fx.start(&rtg, json!({"n": 1})).run;
    let mut seen = Vec::new();
    loop {
        let stepped = step_inline(&graph, &run, &fx.nodes, &fx.options())
            .await
            .expect("step");
        if stepped.stop != Stop::Stepped {
            assert_eq!(stepped.stop, Stop::Terminal);
            assert!(stepped.checkpoints.is_empty());
            break;
        }
        assert_eq!(stepped.checkpoints.len(), 1);
        assert_eq!(stepped.run.checkpoint_seq, run.checkpoint_seq + 1);
        seen.push(stepped.checkpoints[0].checkpoint_type);
        run = stepped.run;
    }
    assert_eq!(
        seen,
        vec![
            C::StepCommitted,
            C::RetryScheduled,
            C::StepCommitted,
            C::RunCompleted
        ]
    );
    assert_eq!(
        fx.sleeper.calls(),
        vec![10],
        "the not-yet-due retry was served by sleeping"
    );
}

#[tokio::test]
async fn step_inline_on_a_waiting_run_commits_nothing() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"ok": field("boolean")},
        "nodes": {"ask": node("approval", json!({"field": "ok"}))},
        "edges": {"e0": edge("$start", "ask")},
    }));
    let paused = fx.run(&graph, json!({})).await;
    let stepped = step_inline(&graph, &paused.run, &fx.nodes, &fx.options())
        .await
        .expect("step");
    assert_eq!(stepped.stop, Stop::Waiting);
    assert!(stepped.checkpoints.is_empty());
    assert_eq!(stepped.run, paused.run);
}

#[tokio::test]
async fn a_multi_step_drain_has_one_checkpoint_event_per_commit() {
    // Scenario 16 of `docs/scenarios.md`.
    let fx = Fx::new();
    let driven = fx.run(&pipeline(), json!({"n": 2})).await;
    let seqs: Vec<Value> = driven
        .checkpoints
        .iter()
        .map(|c| c.events.last().expect("event").metadata["checkpoint_seq"].clone())
        .collect();
    let expected: Vec<Value> = (1..=driven.run.checkpoint_seq).map(|s| json!(s)).collect();
    assert_eq!(seqs, expected);
    assert_eq!(output(&driven.run, "b"), json!(2));
}

#[tokio::test]
async fn a_one_node_graph_commits_a_step_then_completion() {
    // Scenario 17 of `docs/scenarios.md`: after initialization the committed moments are
    // step_committed then run_completed, nothing else.
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("integer")},
        "nodes": {"a": set(json!({"x": 1}))},
        "edges": {"e0": edge("$start", "a")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(
        types(&driven)[1..].to_vec(),
        vec![C::StepCommitted, C::RunCompleted]
    );
}

#[tokio::test]
async fn inline_options_default_to_no_step_limit_and_no_run_id() {
    let fx = Fx::new();
    let options = InlineOptions::new(fx.config.clone());
    assert_eq!(options.max_steps, None);
    assert!(options.run_id.is_none());
    let driven = run_inline(
        &pipeline(),
        json!({"n": 0}),
        &fx.nodes,
        &options.with_sleeper(fx.sleeper.clone()),
    )
    .await
    .expect("inline");
    assert_eq!(driven.run.status, RunStatus::Done);
}
