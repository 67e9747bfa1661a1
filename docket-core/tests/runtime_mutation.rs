//! Signal mutations (`docs/runs-and-moments.md`, “Interrupts and cancellation”; scenario 187 of
//! `docs/scenarios.md`): `resolve_interrupt` and `cancel_run`.

mod support;

use docket_core::graph::{GraphDocument, RuntimeGraph};
use docket_core::model::{
    CheckpointType as C, EventType as E, Failure, Run, RunStatus, TimerKind, TimerState, ValueMap,
};
use docket_core::runtime::{
    cancel_run, resolve_interrupt, Disposition, ErrorKind, Moment, Mutation, ParkKind, ParkReason,
};
use serde_json::json;
use support::{at, doc, edge, event_types, field, node, Fx};

fn graph() -> GraphDocument {
    doc(json!({
        "fields": {"approved": field("boolean"), "f": field("integer")},
        "nodes": {
            "ask": node("approval", json!({"field": "approved"})),
            "work": {"implementation": "flaky", "config": {"fail_times": 5},
                     "policies": {"retry": {"max_attempts": 9, "backoff_ms": 1000}}},
            "prep": node("set", json!({})),
        },
        "edges": {"e0": edge("$start", "ask"), "e1": edge("$start", "prep"), "e2": edge("prep", "work")},
    }))
}

/// A waiting run with open interrupt `interrupt_1`.
async fn waiting(fx: &Fx) -> (RuntimeGraph, Run) {
    let g = doc(json!({
        "fields": {"approved": field("boolean")},
        "nodes": {"ask": node("approval", json!({"field": "approved"}))},
        "edges": {"e0": edge("$start", "ask")},
    }));
    let rtg = fx.compile(&g);
    let init = fx.start(&rtg, json!({}));
    let barrier = fx.moment(&rtg, &init.run).await;
    assert_eq!(barrier.run.status, RunStatus::Waiting);
    (rtg, barrier.run)
}

/// A running run with open `interrupt_1` and `work` parked behind a 1 s timer.
async fn parked(fx: &Fx) -> (RuntimeGraph, Run) {
    let rtg = fx.compile(&graph());
    let init = fx.start(&rtg, json!({}));
    let step0 = fx.moment(&rtg, &init.run).await;
    let park = fx.moment(&rtg, &step0.run).await;
    assert_eq!(park.checkpoint_type, C::RetryScheduled);
    assert_eq!(
        park.run.open_interrupt_ids(),
        vec!["interrupt_1".to_owned()]
    );
    (rtg, park.run)
}

fn commit(m: Mutation) -> Moment {
    match m {
        Mutation::Commit(moment) => *moment,
        Mutation::Unchanged(run) => panic!("expected a commit, got unchanged {run:?}"),
    }
}

#[tokio::test]
async fn identical_inputs_give_identical_resolution_moments() {
    let fx = Fx::new();
    let (rtg, run) = waiting(&fx).await;
    let a = resolve_interrupt(&rtg, &run, "interrupt_1", json!(true), at(7)).expect("a");
    let b = resolve_interrupt(&rtg, &run, "interrupt_1", json!(true), at(7)).expect("b");
    assert_eq!(a, b);
}

#[tokio::test]
async fn a_resolution_commits_three_facts_with_one_timestamp() {
    let fx = Fx::new();
    let (rtg, run) = waiting(&fx).await;
    let moment =
        commit(resolve_interrupt(&rtg, &run, "interrupt_1", json!(true), at(7)).expect("resolve"));
    assert_eq!(
        event_types(&moment.events),
        vec![
            E::InterruptResolved,
            E::ChannelUpdated,
            E::CheckpointCommitted
        ]
    );
    assert!(moment.events.iter().all(|e| e.timestamp == at(7)));
    assert_eq!(moment.events[0].node_id.as_deref(), Some("ask"));
    assert_eq!(
        moment.events[0].payload,
        json!({"interrupt_id": "interrupt_1", "resume_channel": "approved"})
            .as_object()
            .cloned()
            .expect("map")
    );
    assert_eq!(
        moment.events[1].channel_id.as_deref(),
        Some("state:approved")
    );
    assert_eq!(moment.events[1].payload["writers"], json!(["ask"]));
    assert_eq!(moment.checkpoint_type, C::InterruptResolved);
    assert_eq!(moment.run.status, RunStatus::Running);
    assert_eq!(moment.run.updated_at, Some(at(7)));
    assert_eq!(moment.run.step, run.step, "signals never advance the step");
    assert_eq!(moment.run.checkpoint_seq, run.checkpoint_seq + 1);
    assert!(moment.run.changed_channels.contains("state:approved"));
    assert!(
        run.changed_channels.is_subset(&moment.run.changed_channels),
        "the resolved field is added to the existing changed set"
    );
    assert_eq!(moment.run.channels["state:approved"].value, json!(true));
    assert_eq!(moment.run.channels["state:approved"].version, 1);
    assert_eq!(
        moment.disposition,
        Disposition::Park {
            kind: ParkKind::Immediate,
            reason: ParkReason::InterruptResolved
        }
    );
}

#[tokio::test]
async fn not_found_and_already_resolved_are_distinct() {
    let fx = Fx::new();
    let (rtg, run) = waiting(&fx).await;
    let err = resolve_interrupt(&rtg, &run, "missing", json!(true), at(1)).expect_err("missing");
    assert_eq!(err.kind, ErrorKind::NotFound);
    let resolved =
        commit(resolve_interrupt(&rtg, &run, "interrupt_1", json!(true), at(1)).expect("ok"));
    let err = resolve_interrupt(&rtg, &resolved.run, "interrupt_1", json!(true), at(2))
        .expect_err("again");
    assert_eq!(err.kind, ErrorKind::AlreadyResolved);
}

#[tokio::test]
async fn a_terminal_run_is_checked_before_the_interrupt_lookup() {
    let fx = Fx::new();
    let (rtg, run) = waiting(&fx).await;
    let cancelled = commit(cancel_run(&run, at(1)).expect("cancel")).run;
    for id in ["interrupt_1", "missing"] {
        let err =
            resolve_interrupt(&rtg, &cancelled, id, json!(true), at(2)).expect_err("inactive");
        assert_eq!(err.kind, ErrorKind::InactiveRun, "{id}");
    }
}

#[tokio::test]
async fn created_runs_are_rejected_by_both_signals() {
    let fx = Fx::new();
    let (rtg, _) = waiting(&fx).await;
    let created = docket_core::runtime::build_initial_run(
        &rtg,
        ValueMap::new(),
        None,
        ValueMap::new(),
        fx.config.ids(),
    )
    .expect("build");
    let err = resolve_interrupt(&rtg, &created, "x", json!(1), at(0)).expect_err("created");
    assert_eq!(err.kind, ErrorKind::InvalidRun);
    let err = cancel_run(&created, at(0)).expect_err("created");
    assert_eq!(err.kind, ErrorKind::InvalidRun);
}

#[tokio::test]
async fn a_resolution_parks_until_the_earliest_future_deadline_of_a_parked_superstep() {
    let fx = Fx::new();
    let (rtg, run) = parked(&fx).await;
    let moment =
        commit(resolve_interrupt(&rtg, &run, "interrupt_1", json!(true), at(0)).expect("resolve"));
    assert_eq!(
        moment.disposition,
        Disposition::Park {
            kind: ParkKind::At(at(1000)),
            reason: ParkReason::InterruptResolved
        }
    );
    assert_eq!(moment.checkpoint_metadata["wake_disposition"], json!("at"));
    assert_eq!(
        moment.run.active_tasks, run.active_tasks,
        "the parked attempt is untouched"
    );
}

#[tokio::test]
async fn a_resolution_wakes_immediately_when_any_parked_task_is_due_or_untimed() {
    let fx = Fx::new();
    let (rtg, run) = parked(&fx).await;
    // Due: the deadline has passed.
    let due =
        commit(resolve_interrupt(&rtg, &run, "interrupt_1", json!(true), at(1000)).expect("due"));
    assert_eq!(
        due.disposition,
        Disposition::Park {
            kind: ParkKind::Immediate,
            reason: ParkReason::InterruptResolved
        }
    );
    // Untimed: a task without a timer is always due.
    let mut untimed = run.clone();
    untimed.timers.clear();
    let moment = commit(
        resolve_interrupt(&rtg, &untimed, "interrupt_1", json!(true), at(0)).expect("untimed"),
    );
    assert!(matches!(
        moment.disposition,
        Disposition::Park {
            kind: ParkKind::Immediate,
            ..
        }
    ));
    // One of two tasks due is enough.
    let mut mixed = run.clone();
    let mut extra = mixed.active_tasks.values().next().cloned().expect("task");
    extra.node_id = "zz".into();
    extra.task_id = format!("{}:{}:zz", mixed.id, mixed.step);
    mixed.timers.insert(
        extra.task_id.clone(),
        TimerState {
            kind: TimerKind::Retry,
            fires_at: at(-1),
        },
    );
    mixed.active_tasks.insert(extra.task_id.clone(), extra);
    let moment =
        commit(resolve_interrupt(&rtg, &mixed, "interrupt_1", json!(true), at(0)).expect("mixed"));
    assert!(matches!(
        moment.disposition,
        Disposition::Park {
            kind: ParkKind::Immediate,
            ..
        }
    ));
}

#[tokio::test]
async fn cancel_absorbs_a_parked_superstep() {
    let fx = Fx::new();
    let (_, run) = parked(&fx).await;
    let moment = commit(cancel_run(&run, at(5)).expect("cancel"));
    assert_eq!(moment.checkpoint_type, C::RunCancelled);
    assert_eq!(moment.run.status, RunStatus::Cancelled);
    assert!(moment.run.active_tasks.is_empty() && moment.run.timers.is_empty());
    assert!(moment.run.pending_writes.is_empty());
    assert_eq!(moment.run.finished_at, Some(at(5)));
    assert_eq!(moment.run.updated_at, Some(at(5)));
    assert_eq!(
        event_types(&moment.events),
        vec![E::RunCancelled, E::CheckpointCommitted]
    );
    assert!(moment.events[0].payload.is_empty());
    assert_eq!(
        moment.disposition,
        Disposition::Park {
            kind: ParkKind::Terminal,
            reason: ParkReason::RunCancelled
        }
    );
    assert!(docket_core::model::validate_durable(&moment.run).is_ok());
}

#[tokio::test]
async fn cancelling_a_waiting_run_commits_and_repeating_it_changes_nothing() {
    let fx = Fx::new();
    let (_, run) = waiting(&fx).await;
    let cancelled = commit(cancel_run(&run, at(3)).expect("cancel")).run;
    match cancel_run(&cancelled, at(9)).expect("again") {
        Mutation::Unchanged(same) => {
            assert_eq!(
                serde_json::to_vec(&*same).expect("json"),
                serde_json::to_vec(&cancelled).expect("json"),
                "byte for byte"
            );
        }
        Mutation::Commit(m) => panic!("a repeated cancel must not commit: {m:?}"),
    }
}

#[tokio::test]
async fn done_and_failed_runs_cannot_be_cancelled() {
    let fx = Fx::new();
    let (_, run) = waiting(&fx).await;
    let mut done = run.clone();
    done.status = RunStatus::Done;
    done.output = Some(ValueMap::new());
    done.finished_at = done.updated_at;
    let mut failed = run.clone();
    failed.status = RunStatus::Failed;
    failed.failure = Some(Failure {
        code: "node_failed".into(),
        message: "x".into(),
        node_id: None,
        details: ValueMap::new(),
    });
    for terminal in [done, failed] {
        let err = cancel_run(&terminal, at(1)).expect_err("inactive");
        assert_eq!(err.kind, ErrorKind::InactiveRun);
    }
}

#[tokio::test]
async fn a_resolution_on_another_graph_is_a_graph_mismatch() {
    let fx = Fx::new();
    let (_, run) = waiting(&fx).await;
    let other = fx.compile(&graph());
    let err =
        resolve_interrupt(&other, &run, "interrupt_1", json!(true), at(1)).expect_err("mismatch");
    assert_eq!(err.kind, ErrorKind::GraphMismatch);
}
