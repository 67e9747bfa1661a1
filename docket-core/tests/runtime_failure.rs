//! Failures and retries (`docs/runs-and-moments.md`, “Executing a superstep”;
//! `docs/runs-and-moments.md`, “Settlement”; `docs/runs-and-moments.md`, “Terminal moments”;
//! scenario 183 of `docs/scenarios.md`).

mod support;

use docket_core::graph::GraphDocument;
use docket_core::model::{CheckpointType as C, EventType as E, RunStatus};
use docket_core::node::NodeRegistry;
use docket_core::runtime::{plan, propose_advance, ErrorKind, Plan};
use serde_json::{json, Value};
use support::{all_events, doc, edge, event_types, field, node, set, state, types, Fx};

/// One node `n` (with `policies`) running `implementation` with `config` from `$start`.
fn single(implementation: &str, config: Value, policies: Value) -> GraphDocument {
    doc(json!({
        "inputs": {"inp": field("integer")},
        "fields": {"x": field("integer"), "approved": field("boolean")},
        "nodes": {"n": {"implementation": implementation, "config": config, "policies": policies}},
        "edges": {"e0": edge("$start", "n")},
    }))
}

fn retry(max_attempts: u64, backoff_ms: u64) -> Value {
    json!({"retry": {"max_attempts": max_attempts, "backoff_ms": backoff_ms}})
}

#[tokio::test]
async fn a_permanent_failure_commits_no_writes_of_the_superstep() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("integer")},
        "nodes": {"bad": node("fail", json!({"reason": "broken"})), "good": set(json!({"x": 1}))},
        "edges": {"e0": edge("$start", "bad"), "e1": edge("$start", "good")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(types(&driven), vec![C::RunInitialized, C::RunFailed]);
    let run = &driven.run;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(state(run, "x"), None);
    assert_eq!(run.step, 0);
    let failure = run.failure.as_ref().expect("failure");
    assert_eq!(failure.code, "node_failed");
    assert_eq!(failure.node_id.as_deref(), Some("bad"));
    assert_eq!(
        Value::Object(failure.details.clone()),
        json!({"nodes": ["bad"], "errors": {"bad": "broken"}})
    );
    let last = &driven.checkpoints[1];
    assert_eq!(
        event_types(&last.events),
        vec![E::NodeFailed, E::RunFailed, E::CheckpointCommitted]
    );
    assert_eq!(
        last.events[0].payload,
        json!({"attempt": 1, "reason": "broken", "permanent": true})
            .as_object()
            .cloned()
            .expect("map")
    );
    let run_failed = &last.events[1];
    assert_eq!(run_failed.node_id.as_deref(), Some("bad"));
    assert_eq!(run_failed.payload["reason"], json!("node_failed"));
    assert_eq!(run_failed.payload["message"], json!(failure.message));
    assert_eq!(run_failed.payload["nodes"], json!(["bad"]));
    assert_eq!(run_failed.payload["errors"], json!({"bad": "broken"}));
    assert!(run.finished_at.is_some() && run.finished_at == run.updated_at);
}

#[tokio::test]
async fn several_permanent_failures_name_no_single_node() {
    let fx = Fx::new();
    let graph = doc(json!({
        "nodes": {"a": node("fail", json!({"reason": "x"})), "b": node("fail", json!({"reason": "y"}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    let failure = driven.run.failure.clone().expect("failure");
    assert_eq!(failure.node_id, None);
    assert_eq!(failure.details["nodes"], json!(["a", "b"]));
    assert_eq!(failure.details["errors"], json!({"a": "x", "b": "y"}));
}

#[tokio::test]
async fn retryable_siblings_of_a_permanent_failure_are_reported_but_not_parked() {
    let fx = Fx::new();
    let graph = doc(json!({
        "nodes": {
            "bad": node("fail", json!({})),
            "flaky": {"implementation": "flaky", "config": {"fail_times": 1},
                      "policies": {"retry": {"max_attempts": 2}}},
        },
        "edges": {"e0": edge("$start", "bad"), "e1": edge("$start", "flaky")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    let last = driven.checkpoints.last().expect("checkpoint");
    assert_eq!(last.checkpoint_type, C::RunFailed);
    let failed: Vec<(Option<String>, Value)> = last
        .events
        .iter()
        .filter(|e| e.event_type == E::NodeFailed)
        .map(|e| (e.node_id.clone(), e.payload["permanent"].clone()))
        .collect();
    assert_eq!(
        failed,
        vec![
            (Some("flaky".to_owned()), json!(false)),
            (Some("bad".to_owned()), json!(true))
        ]
    );
    assert!(driven.run.active_tasks.is_empty());
}

#[tokio::test]
async fn a_panicking_node_is_a_retryable_attempt_failure() {
    let fx = Fx::new();
    let driven = fx
        .run(&single("panic", json!({}), retry(2, 5)), json!({}))
        .await;
    assert_eq!(
        types(&driven),
        vec![C::RunInitialized, C::RetryScheduled, C::RunFailed]
    );
    let reasons: Vec<Value> = all_events(&driven)
        .into_iter()
        .filter(|e| e.event_type == E::NodeFailed)
        .map(|e| e.payload["reason"].clone())
        .collect();
    assert_eq!(
        reasons,
        vec![json!("panic: node exploded"), json!("panic: node exploded")]
    );
    assert_eq!(fx.log.attempts("n"), vec![1, 2]);
}

#[tokio::test]
async fn reserved_and_invalid_returns_fail_permanently_on_the_first_attempt() {
    for (implementation, config, reason) in [
        ("await", json!({}), "unsupported_await"),
        ("command", json!({}), "unsupported_command"),
        ("raw", json!({"outcome": [1, 2]}), "invalid_node_return"),
    ] {
        let fx = Fx::new();
        let driven = fx
            .run(&single(implementation, config, retry(5, 0)), json!({}))
            .await;
        assert_eq!(
            types(&driven),
            vec![C::RunInitialized, C::RunFailed],
            "{implementation}"
        );
        let failure = driven.run.failure.clone().expect("failure");
        assert!(
            failure.details["errors"]["n"]
                .as_str()
                .is_some_and(|r| r.starts_with(reason)),
            "{implementation}: {failure:?}"
        );
        assert_eq!(fx.log.attempts("n"), vec![1], "{implementation}");
    }
}

#[tokio::test]
async fn unknown_read_only_schema_invalid_and_non_portable_writes_fail_the_superstep() {
    for (outcome, expected) in [
        (json!({"nope": 1}), "unknown field \"nope\""),
        (
            json!({"inp": 1}),
            "field \"inp\" is a run input and read-only",
        ),
        (
            json!({"x": "seven"}),
            "field \"x\": /: expected integer, found string",
        ),
        (json!({"x": {"dollar:ref": 1}}), "update is not portable"),
    ] {
        let fx = Fx::new();
        let driven = fx
            .run(
                &single("raw", json!({"outcome": outcome}), retry(3, 0)),
                json!({}),
            )
            .await;
        assert_eq!(driven.run.status, RunStatus::Failed, "{outcome}");
        let failure = driven.run.failure.clone().expect("failure");
        let reason = failure.details["errors"]["n"].as_str().unwrap_or_default();
        assert!(reason.starts_with("invalid_state_update: "), "{reason}");
        assert!(reason.contains(expected), "{outcome}: {reason}");
        assert_eq!(
            fx.log.attempts("n"),
            vec![1],
            "invalid writes are never retried"
        );
        assert_eq!(state(&driven.run, "x"), None);
        let run_failed = &driven.checkpoints[1].events[1];
        assert_eq!(run_failed.payload["reason"], json!("node_failed"));
        assert_eq!(run_failed.payload["nodes"], json!(["n"]));
    }
}

#[tokio::test]
async fn invalid_interrupts_fail_permanently() {
    let fx = Fx::new();
    let driven = fx
        .run(
            &single("approval", json!({"field": "missing"}), json!({})),
            json!({}),
        )
        .await;
    let failure = driven.run.failure.clone().expect("failure");
    let reason = failure.details["errors"]["n"].as_str().unwrap_or_default();
    assert!(reason.starts_with("invalid_interrupt: "), "{reason}");
    assert!(reason.contains("resume_channel \"missing\""), "{reason}");

    let fx = Fx::new();
    let driven = fx
        .run(
            &single("approval", json!({"field": "inp"}), json!({})),
            json!({}),
        )
        .await;
    assert_eq!(
        driven.run.status,
        RunStatus::Failed,
        "an input is not a resume field"
    );

    let fx = Fx::new();
    let driven = fx
        .run(
            &single(
                "approval",
                json!({"field": "approved", "schema": {"type": "teapot"}}),
                json!({}),
            ),
            json!({}),
        )
        .await;
    assert_eq!(driven.run.status, RunStatus::Failed, "a malformed schema");
}

#[tokio::test]
async fn a_node_supplied_interrupt_id_must_be_new() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"a": field("boolean"), "b": field("boolean")},
        "nodes": {
            "one": node("approval", json!({"field": "a", "id": "same"})),
            "two": node("approval", json!({"field": "b", "id": "same"})),
        },
        "edges": {"e0": edge("$start", "one"), "e1": edge("$start", "two")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    let failure = driven.run.failure.expect("two requests cannot share an id");
    assert_eq!(failure.node_id.as_deref(), Some("two"));
    assert!(failure.details["errors"]["two"]
        .as_str()
        .is_some_and(|r| r.contains("already exists")));
}

#[tokio::test]
async fn a_flaky_node_succeeds_within_its_budget_and_the_sleeper_gets_each_backoff() {
    let fx = Fx::new();
    let graph = single(
        "flaky",
        json!({"fail_times": 2, "values": {"x": 1}}),
        retry(3, 25),
    );
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(state(&driven.run, "x"), Some(json!(1)));
    assert_eq!(fx.log.attempts("n"), vec![1, 2, 3]);
    assert_eq!(fx.sleeper.calls(), vec![25, 25]);
}

#[tokio::test]
async fn exhausting_the_retry_budget_is_a_permanent_failure() {
    let fx = Fx::new();
    let graph = single("flaky", json!({"fail_times": 3}), retry(3, 0));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(
        types(&driven),
        vec![
            C::RunInitialized,
            C::RetryScheduled,
            C::RetryScheduled,
            C::RunFailed
        ]
    );
    let permanence: Vec<Value> = all_events(&driven)
        .into_iter()
        .filter(|e| e.event_type == E::NodeFailed)
        .map(|e| e.payload["permanent"].clone())
        .collect();
    assert_eq!(permanence, vec![json!(false), json!(false), json!(true)]);
    assert_eq!(fx.sleeper.calls(), vec![0, 0]);
    let failure = driven.run.failure.clone().expect("failure");
    assert_eq!(failure.details["errors"]["n"], json!("flaky"));
}

#[tokio::test]
async fn without_a_retry_policy_a_retryable_error_fails_at_once() {
    let fx = Fx::new();
    let driven = fx
        .run(
            &single("flaky", json!({"fail_times": 1}), json!({})),
            json!({}),
        )
        .await;
    assert_eq!(types(&driven), vec![C::RunInitialized, C::RunFailed]);
}

#[tokio::test]
async fn invalid_runtime_policies_fail_the_run_at_plan_time() {
    for (policies, needle) in [
        (json!({"retry": {"max_attempts": 0}}), "max_attempts"),
        (json!({"on_error": "route"}), "on_error"),
        (json!({"timeout_ms": -1}), "timeout_ms"),
    ] {
        let fx = Fx::new();
        let mut rtg = fx.compile(&single("set", json!({}), json!({})));
        let runtime_node = rtg.nodes.get_mut("node:n").expect("node");
        runtime_node.policies = policies.as_object().cloned().expect("map");
        let init = fx.start(&rtg, json!({}));
        let failed = fx.moment(&rtg, &init.run).await;
        assert_eq!(failed.checkpoint_type, C::RunFailed);
        let failure = failed.run.failure.clone().expect("failure");
        assert_eq!(failure.code, "invalid_policy");
        assert_eq!(failure.node_id.as_deref(), Some("n"));
        assert!(failure.message.contains(needle), "{}", failure.message);
        assert_eq!(
            event_types(&failed.events),
            vec![E::RunFailed, E::CheckpointCommitted]
        );
        assert!(fx.log.all().is_empty(), "nothing ran");
    }
}

#[tokio::test]
async fn an_active_task_naming_an_unknown_node_fails_the_run_as_invalid_run() {
    let fx = Fx::new();
    let graph = single("flaky", json!({"fail_times": 1}), retry(2, 0));
    let mut rtg = fx.compile(&graph);
    let init = fx.start(&rtg, json!({}));
    let park = fx.moment(&rtg, &init.run).await;
    rtg.nodes.remove("node:n");
    match plan(&rtg, &park.run, fx.config.now(), None).expect("plan") {
        Plan::Fail(failure) => {
            assert_eq!(failure.code, "invalid_run");
            assert_eq!(failure.node_id.as_deref(), Some("n"));
        }
        other => panic!("expected a plan-time failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_malformed_guard_at_a_barrier_fails_the_run_with_only_run_failed() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("integer")},
        "nodes": {"a": set(json!({"x": 1})), "b": set(json!({}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("a", "b")},
    }));
    let mut rtg = fx.compile(&graph);
    rtg.edges.get_mut("e1").expect("edge").guard = Some(json!({"op": "between"}));
    let init = fx.start(&rtg, json!({}));
    let failed = fx.moment(&rtg, &init.run).await;
    assert_eq!(failed.checkpoint_type, C::RunFailed);
    assert_eq!(
        event_types(&failed.events),
        vec![E::RunFailed, E::CheckpointCommitted]
    );
    let failure = failed.run.failure.clone().expect("failure");
    assert_eq!(failure.code, "guard_evaluation_failed");
    assert_eq!(failure.details["edge_id"], json!("e1"));
    assert_eq!(
        state(&failed.run, "x"),
        None,
        "the barrier's writes are discarded"
    );
}

#[tokio::test]
async fn an_unregistered_implementation_is_a_host_error_not_a_run_failure() {
    let fx = Fx::new();
    let rtg = fx.compile(&single("set", json!({}), json!({})));
    let init = fx.start(&rtg, json!({}));
    let err = propose_advance(&rtg, &init.run, &NodeRegistry::new(), &fx.config)
        .await
        .expect_err("no implementation");
    assert_eq!(err.kind, ErrorKind::RuntimeUnavailable);
    assert_eq!(err.node_id.as_deref(), Some("n"));
}
