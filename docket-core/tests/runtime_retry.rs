//! Retry parking (`docs/runs-and-moments.md`, “Retry park”; scenario 182 of `docs/scenarios.md`).

mod support;

use docket_core::graph::GraphDocument;
use docket_core::inline::resume_inline;
use docket_core::model::{CheckpointType as C, EventType as E, PendingWriteKind, RunStatus};
use docket_core::runtime::{resolve_interrupt, Disposition, Mutation, ParkKind, ParkReason};
use serde_json::{json, Value};
use support::{at, doc, edge, event_types, field, node, set, state, types, Fx};

fn flaky(fail_times: u64, backoff_ms: u64, values: Value) -> Value {
    json!({
        "implementation": "flaky",
        "config": {"fail_times": fail_times, "values": values},
        "policies": {"retry": {"max_attempts": 3, "backoff_ms": backoff_ms}},
    })
}

/// `flaky` (fails `fail_times`) and `steady` run in one superstep from `$start`.
fn siblings(fail_times: u64) -> GraphDocument {
    doc(json!({
        "fields": {"f": field("integer"), "s": field("integer")},
        "outputs": {"f": {}, "s": {}},
        "nodes": {"flaky": flaky(fail_times, 100, json!({"f": 1})), "steady": set(json!({"s": 2}))},
        "edges": {"e0": edge("$start", "flaky"), "e1": edge("$start", "steady")},
    }))
}

#[tokio::test]
async fn sibling_results_park_invisibly_until_the_barrier_and_run_once() {
    let fx = Fx::new();
    let rtg = fx.compile(&siblings(1));
    let init = fx.start(&rtg, json!({}));
    let park = fx.moment(&rtg, &init.run).await;
    assert_eq!(park.checkpoint_type, C::RetryScheduled);
    assert_eq!(
        state(&park.run, "s"),
        None,
        "a parked write is not a channel value"
    );
    assert_eq!(park.run.pending_writes.len(), 1);
    assert_eq!(park.run.pending_writes[0].node_id, "steady");
    assert!(matches!(
        &park.run.pending_writes[0].write,
        PendingWriteKind::Update { value } if value.get("s") == Some(&json!(2))
    ));
    assert_eq!(park.pending_attempts.len(), 1);
    assert_eq!(park.pending_attempts[0].kind, "update");
    assert_eq!(
        park.checkpoint_metadata["node_attempts"],
        json!([
            {"task_id": "run_1:0:flaky", "node_id": "flaky", "attempt": 1,
             "idempotency_key": "run_1:0:flaky:1", "outcome": "failed",
             "next_scheduled_attempt": 2},
            {"task_id": "run_1:0:steady", "node_id": "steady", "attempt": 1,
             "idempotency_key": "run_1:0:steady:1", "outcome": "pending_update",
             "next_scheduled_attempt": null},
        ])
    );

    fx.clock.advance_millis(100);
    let barrier = fx.moment(&rtg, &park.run).await;
    assert_eq!(barrier.checkpoint_type, C::StepCommitted);
    let completed: Vec<(String, Value)> = barrier
        .events
        .iter()
        .filter(|e| e.event_type == E::NodeCompleted)
        .map(|e| {
            (
                e.node_id.clone().unwrap_or_default(),
                e.payload["attempt"].clone(),
            )
        })
        .collect();
    assert_eq!(
        completed,
        vec![
            ("flaky".to_owned(), json!(2)),
            ("steady".to_owned(), json!(1))
        ]
    );
    assert_eq!(state(&barrier.run, "s"), Some(json!(2)));
    assert_eq!(state(&barrier.run, "f"), Some(json!(1)));
    assert!(barrier.run.pending_writes.is_empty() && barrier.run.active_tasks.is_empty());
    assert_eq!(fx.log.count("steady"), 1);
}

#[tokio::test]
async fn a_second_park_lists_only_the_new_failure_and_keeps_the_pending_sibling() {
    let fx = Fx::new();
    let rtg = fx.compile(&siblings(2));
    let init = fx.start(&rtg, json!({}));
    let first = fx.moment(&rtg, &init.run).await;
    fx.clock.advance_millis(100);
    let second = fx.moment(&rtg, &first.run).await;
    assert_eq!(second.checkpoint_type, C::RetryScheduled);
    assert!(second.pending_attempts.is_empty(), "nothing newly parked");
    assert_eq!(
        second.checkpoint_metadata["node_attempts"],
        json!([{"task_id": "run_1:0:flaky", "node_id": "flaky", "attempt": 2,
                "idempotency_key": "run_1:0:flaky:2", "outcome": "failed",
                "next_scheduled_attempt": 3}])
    );
    assert_eq!(
        second.checkpoint_metadata["active_superstep"]["pending_attempts"],
        json!([{"task_id": "run_1:0:steady", "node_id": "steady", "attempted": 1,
                "kind": "update", "idempotency_key": "run_1:0:steady:1"}])
    );
    assert_eq!(
        second.run.active_tasks["run_1:0:flaky"].failures.len(),
        2,
        "the budget is not reset"
    );
}

#[tokio::test]
async fn a_crash_during_backoff_resumes_at_the_parked_attempt_without_rerunning_siblings() {
    let before = Fx::new();
    let graph = siblings(1);
    let rtg = before.compile(&graph);
    let init = before.start(&rtg, json!({}));
    let park = before.moment(&rtg, &init.run).await;

    // A new process: fresh registry and log, same committed run.
    let after = Fx::new();
    after.clock.advance_millis(100);
    let resumed = resume_inline(&graph, &park.run, &after.nodes, &after.options())
        .await
        .expect("resume");
    assert_eq!(resumed.run.status, RunStatus::Done);
    let calls = after.log.all();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].node_id, "flaky");
    assert_eq!(calls[0].attempt, 2);
    assert_eq!(calls[0].idempotency_key, "run_1:0:flaky:2");
    assert_eq!(
        after.log.count("steady"),
        0,
        "the parked sibling is never re-run"
    );
}

#[tokio::test]
async fn a_permanent_failure_after_a_park_discards_the_parked_results() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"f": field("integer"), "s": field("integer")},
        "nodes": {
            "flaky": {"implementation": "flaky",
                      "config": {"fail_times": 1, "then": "fail"},
                      "policies": {"retry": {"max_attempts": 3}}},
            "steady": set(json!({"s": 2})),
        },
        "edges": {"e0": edge("$start", "flaky"), "e1": edge("$start", "steady")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(
        types(&driven),
        vec![C::RunInitialized, C::RetryScheduled, C::RunFailed]
    );
    let run = &driven.run;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(state(run, "s"), None, "parked sibling writes are discarded");
    assert!(run.pending_writes.is_empty() && run.active_tasks.is_empty() && run.timers.is_empty());
    let failure = run.failure.as_ref().expect("failure");
    assert_eq!(failure.code, "node_failed");
    assert_eq!(failure.node_id.as_deref(), Some("flaky"));
}

#[tokio::test]
async fn a_corrupted_pending_write_fails_the_run_through_node_failed() {
    let fx = Fx::new();
    let rtg = fx.compile(&siblings(1));
    let init = fx.start(&rtg, json!({}));
    let mut park = fx.moment(&rtg, &init.run).await.run;
    park.pending_writes[0].write = PendingWriteKind::Update {
        value: json!({"nope": 1}).as_object().cloned().expect("map"),
    };
    fx.clock.advance_millis(100);
    let failed = fx.moment(&rtg, &park).await;
    assert_eq!(failed.checkpoint_type, C::RunFailed);
    assert_eq!(
        event_types(&failed.events),
        vec![E::NodeFailed, E::RunFailed, E::CheckpointCommitted]
    );
    assert_eq!(failed.events[0].node_id.as_deref(), Some("steady"));
    assert_eq!(failed.events[0].payload["permanent"], json!(true));
    assert_eq!(failed.events[0].payload["attempt"], json!(1));
    assert!(failed.events[0].payload["reason"]
        .as_str()
        .is_some_and(|r| r.starts_with("invalid_state_update")));
    assert_eq!(state(&failed.run, "f"), None);
}

#[tokio::test]
async fn the_inline_sleeper_serves_each_backoff_once() {
    let fx = Fx::new();
    let driven = fx.run(&siblings(1), json!({})).await;
    assert_eq!(fx.sleeper.calls(), vec![100]);
    assert_eq!(
        types(&driven),
        vec![
            C::RunInitialized,
            C::RetryScheduled,
            C::StepCommitted,
            C::RunCompleted
        ]
    );
}

#[tokio::test]
async fn heterogeneous_backoffs_park_at_the_earliest_deadline_and_retry_only_the_due_task() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"a": field("integer"), "b": field("integer")},
        "outputs": {"a": {}, "b": {}},
        "nodes": {"fast": flaky(1, 10, json!({"a": 1})), "slow": flaky(1, 50, json!({"b": 2}))},
        "edges": {"e0": edge("$start", "fast"), "e1": edge("$start", "slow")},
    }));
    let rtg = fx.compile(&graph);
    let init = fx.start(&rtg, json!({}));
    let first = fx.moment(&rtg, &init.run).await;
    assert_eq!(
        first.disposition,
        Disposition::Park {
            kind: ParkKind::At(at(10)),
            reason: ParkReason::RetryBackoff
        }
    );
    fx.clock.advance_millis(10);
    let second = fx.moment(&rtg, &first.run).await;
    assert_eq!(second.checkpoint_type, C::RetryScheduled);
    assert_eq!(
        event_types(&second.events),
        vec![E::CheckpointCommitted],
        "a park caused only by partial dispatch has no runtime facts"
    );
    assert_eq!(
        second.disposition,
        Disposition::Park {
            kind: ParkKind::At(at(50)),
            reason: ParkReason::RetryBackoff
        }
    );
    assert_eq!(fx.log.attempts("fast"), vec![1, 2]);
    assert_eq!(fx.log.attempts("slow"), vec![1], "only the due task ran");
    assert_eq!(second.pending_attempts.len(), 1);
    assert_eq!(second.pending_attempts[0].node_id, "fast");

    fx.clock.advance_millis(40);
    let barrier = fx.moment(&rtg, &second.run).await;
    assert_eq!(barrier.checkpoint_type, C::StepCommitted);
    assert_eq!(state(&barrier.run, "a"), Some(json!(1)));
    assert_eq!(state(&barrier.run, "b"), Some(json!(2)));

    let inline = Fx::new();
    inline.run(&graph, json!({})).await;
    assert_eq!(inline.sleeper.calls(), vec![10, 40]);
}

#[tokio::test]
async fn an_interrupt_resolved_mid_park_does_not_change_the_parked_snapshot() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"approved": field("boolean"), "p": field("integer"), "f": field("integer")},
        "nodes": {
            "ask": node("approval", json!({"field": "approved"})),
            "prep": set(json!({"p": 1})),
            "work": flaky(1, 100, json!({"f": 1})),
        },
        "edges": {"e0": edge("$start", "ask"), "e1": edge("$start", "prep"), "e2": edge("prep", "work")},
    }));
    let rtg = fx.compile(&graph);
    let init = fx.start(&rtg, json!({}));
    let step0 = fx.moment(&rtg, &init.run).await;
    assert_eq!(step0.checkpoint_type, C::InterruptRequested);
    assert_eq!(
        step0.run.status,
        RunStatus::Running,
        "work is still runnable"
    );
    let park = fx.moment(&rtg, &step0.run).await;
    assert_eq!(park.checkpoint_type, C::RetryScheduled);

    let Mutation::Commit(resolved) =
        resolve_interrupt(&rtg, &park.run, "interrupt_1", json!(true), at(0)).expect("resolve")
    else {
        panic!("resolution commits");
    };
    assert_eq!(
        resolved.disposition,
        Disposition::Park {
            kind: ParkKind::At(at(100)),
            reason: ParkReason::InterruptResolved
        }
    );
    fx.clock.advance_millis(100);
    let barrier = fx.moment(&rtg, &resolved.run).await;
    assert_eq!(barrier.checkpoint_type, C::StepCommitted);
    let snapshots = fx.log.snapshots("work");
    assert_eq!(snapshots.len(), 2);
    assert_eq!(snapshots[0], snapshots[1]);
    assert!(!snapshots[1].contains_key("approved"));
    assert!(
        barrier.run.pending_nodes.contains("ask"),
        "the resolved node still owes a re-run"
    );
    let rerun = fx.moment(&rtg, &barrier.run).await;
    assert_eq!(rerun.checkpoint_type, C::StepCommitted);
    assert_eq!(fx.log.count("ask"), 2);
    assert_eq!(
        fx.log.snapshots("ask")[1].get("approved"),
        Some(&json!(true))
    );
}
