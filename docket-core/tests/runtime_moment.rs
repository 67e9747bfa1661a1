//! Moments (scenarios 174 and 176–181 of `docs/scenarios.md`): initialization, one commit boundary
//! per advance, retry moments, checkpoint facts, uncommitted parks, waiting barriers, discarded
//! moments. Yield (scenario 175) lives in `runtime_yield.rs`.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use docket_core::graph::GraphDocument;
use docket_core::inline::run_inline;
use docket_core::model::{
    ChannelState, CheckpointType as C, EventType as E, Run, RunId, RunStatus, ValueMap,
};
use docket_core::runtime::{
    build_initial_run, propose_init, Disposition, Initialization, ParkKind, ParkReason, Proposal,
};
use serde_json::{json, Value};
use support::{at, doc, edge, event_types, field, node, set, Fx};

fn greeting_graph() -> GraphDocument {
    doc(json!({
        "inputs": {
            "name": {"schema": {"type": "string"}, "required": true},
            "tier": {"schema": {"type": "string"}, "default": "standard"},
        },
        "fields": {"greeting": field("string")},
        "outputs": {"greeting": {}},
        "nodes": {"greet": set(json!({"greeting": "hello"}))},
        "edges": {
            "e0": {"from": "$start", "to": "greet", "guard": {"op": "changed", "field": "name"}},
            "e1": {"from": "$start", "to": "greet", "guard": {"op": "changed", "field": "tier"}},
            "e2": edge("greet", "$finish"),
        },
    }))
}

fn chain_graph() -> GraphDocument {
    doc(json!({
        "fields": {"a": field("integer"), "b": field("integer")},
        "outputs": {"a": {}, "b": {}},
        "nodes": {"first": set(json!({"a": 1})), "second": set(json!({"b": 2}))},
        "edges": {"e0": edge("$start", "first"), "e1": edge("first", "second")},
    }))
}

fn flaky_graph(backoff_ms: u64) -> GraphDocument {
    doc(json!({
        "fields": {"done": field("boolean")},
        "outputs": {"done": {}},
        "nodes": {"a": {
            "implementation": "flaky",
            "config": {"fail_times": 1, "values": {"done": true}},
            "policies": {"retry": {"max_attempts": 2, "backoff_ms": backoff_ms}},
        }},
        "edges": {"e0": edge("$start", "a")},
    }))
}

fn approval_graph() -> GraphDocument {
    doc(json!({
        "fields": {"approved": field("boolean")},
        "outputs": {"approved": {}},
        "nodes": {"ask": node("approval", json!({"field": "approved"}))},
        "edges": {"e0": edge("$start", "ask")},
    }))
}

fn map(v: Value) -> ValueMap {
    v.as_object().cloned().expect("map")
}

// --- scenario 174 --------------------------------------------------------------------------------

#[test]
fn propose_init_matches_the_host_owned_initialization_exactly() {
    let fx = Fx::new();
    let rtg = fx.compile(&greeting_graph());
    let created = build_initial_run(
        &rtg,
        map(json!({"name": "ada"})),
        None,
        map(json!({"origin": "test"})),
        fx.config.ids(),
    )
    .expect("build");
    assert_eq!(created.status, RunStatus::Created);
    assert_eq!(created.id.as_str(), "run_1");
    let Initialization::Moment(moment) = propose_init(&rtg, &created, at(0)).expect("init") else {
        panic!("fresh run initializes");
    };

    let mut expected = Run::new_created(
        RunId::new("run_1").expect("id"),
        rtg.graph_id.clone(),
        rtg.graph_hash.clone(),
        map(json!({"name": "ada"})),
        map(json!({"origin": "test"})),
    );
    expected.status = RunStatus::Running;
    expected.started_at = Some(at(0));
    expected.updated_at = Some(at(0));
    expected.channels = BTreeMap::from([
        (
            "edge:e0".to_owned(),
            ChannelState {
                channel_id: "edge:e0".into(),
                value: json!(true),
                version: 1,
                barrier_seen: vec![],
            },
        ),
        (
            "input:name".to_owned(),
            ChannelState {
                channel_id: "input:name".into(),
                value: json!("ada"),
                version: 1,
                barrier_seen: vec![],
            },
        ),
    ]);
    expected.changed_channels = BTreeSet::from(["input:name".to_owned(), "edge:e0".to_owned()]);
    expected.checkpoint_seq = 1;
    expected.event_seq = 4;
    assert_eq!(
        moment.run, expected,
        "the defaulted input is not materialized"
    );

    assert_eq!(
        event_types(&moment.events),
        vec![
            E::RunInitialized,
            E::ChannelUpdated,
            E::EdgeTriggered,
            E::CheckpointCommitted
        ]
    );
    assert_eq!(moment.events[0].payload, map(json!({"inputs": ["name"]})));
    assert_eq!(moment.events[1].channel_id.as_deref(), Some("input:name"));
    assert_eq!(moment.events[1].payload, map(json!({"version": 1})));
    assert_eq!(moment.events[2].payload, map(json!({"edge_id": "e0"})));
    assert_eq!(moment.checkpoint_type, C::RunInitialized);
    assert_eq!(moment.disposition, Disposition::Continue);
    assert_eq!(moment.proposed_at, at(0));
    assert_eq!(
        moment.checkpoint_metadata,
        map(json!({
            "checkpoint_seq": 1, "checkpoint_type": "run_initialized", "graph_step": 0,
            "wake_disposition": "continue", "park_reason": null,
            "active_superstep": null, "node_attempts": [],
        }))
    );
    assert!(fx.log.all().is_empty(), "initialization runs no node");
}

#[test]
fn propose_init_of_a_terminal_run_proposes_nothing() {
    let fx = Fx::new();
    let rtg = fx.compile(&greeting_graph());
    let mut run = fx.start(&rtg, json!({"name": "ada"})).run;
    run.status = RunStatus::Done;
    run.output = Some(ValueMap::new());
    run.finished_at = run.updated_at;
    assert_eq!(
        propose_init(&rtg, &run, at(5)).expect("terminal"),
        Initialization::Terminal(Box::new(run))
    );
}

// --- scenario 176 --------------------------------------------------------------------------------

#[tokio::test]
async fn propose_advance_drives_a_multi_step_graph_to_inline_parity() {
    let manual = Fx::new();
    let rtg = manual.compile(&chain_graph());
    let init = manual.start(&rtg, json!({}));
    let mut moments = vec![init.clone()];
    let mut run = init.run;
    loop {
        match manual.advance(&rtg, &run).await {
            Proposal::Moment(m) => {
                run = m.run.clone();
                let terminal = matches!(
                    m.disposition,
                    Disposition::Park {
                        kind: ParkKind::Terminal,
                        ..
                    }
                );
                moments.push(*m);
                if terminal {
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let seqs: Vec<u64> = moments.iter().map(|m| m.run.checkpoint_seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);

    let inline = Fx::new();
    let driven = run_inline(&chain_graph(), json!({}), &inline.nodes, &inline.options())
        .await
        .expect("inline");
    assert_eq!(driven.checkpoints.len(), moments.len());
    for (checkpoint, moment) in driven.checkpoints.iter().zip(&moments) {
        assert_eq!(checkpoint.run, moment.run);
        assert_eq!(checkpoint.events, moment.events);
        assert_eq!(checkpoint.checkpoint_type, moment.checkpoint_type);
    }
}

// --- scenario 177 --------------------------------------------------------------------------------

#[tokio::test]
async fn a_retryable_failure_proposes_a_retry_moment_that_stays_running() {
    let fx = Fx::new();
    let rtg = fx.compile(&flaky_graph(500));
    let init = fx.start(&rtg, json!({}));
    let retry = fx.moment(&rtg, &init.run).await;

    assert_eq!(retry.checkpoint_type, C::RetryScheduled);
    assert_eq!(retry.run.status, RunStatus::Running);
    assert_eq!(retry.run.step, 0);
    let task = &retry.run.active_tasks["run_1:0:a"];
    assert_eq!(task.attempt, 2);
    assert_eq!(task.idempotency_key, "run_1:0:a:2");
    assert_eq!(task.failures.len(), 1);
    assert_eq!(task.failures[0].reason, "flaky");
    assert_eq!(retry.run.timers["run_1:0:a"].fires_at, at(500));
    assert_eq!(
        retry.disposition,
        Disposition::Park {
            kind: ParkKind::At(at(500)),
            reason: ParkReason::RetryBackoff
        }
    );
    assert_eq!(
        retry.checkpoint_metadata,
        map(json!({
            "checkpoint_seq": 2, "checkpoint_type": "retry_scheduled", "graph_step": 0,
            "wake_disposition": "at", "park_reason": "retry_backoff",
            "active_superstep": {
                "graph_step": 0,
                "tasks": [{"task_id": "run_1:0:a", "node_id": "a", "scheduled_attempt": 2,
                           "idempotency_key": "run_1:0:a:2"}],
                "pending_attempts": [],
            },
            "node_attempts": [{"task_id": "run_1:0:a", "node_id": "a", "attempt": 1,
                               "idempotency_key": "run_1:0:a:1", "outcome": "failed",
                               "next_scheduled_attempt": 2}],
        }))
    );
    assert_eq!(
        event_types(&retry.events),
        vec![E::NodeFailed, E::CheckpointCommitted]
    );
    assert_eq!(
        retry.events[0].payload,
        map(json!({"attempt": 1, "reason": "flaky", "permanent": false}))
    );

    fx.clock.advance_millis(500);
    let step = fx.moment(&rtg, &retry.run).await;
    assert_eq!(step.checkpoint_type, C::StepCommitted);
    assert_eq!(
        step.checkpoint_metadata.get("node_attempts"),
        Some(
            &json!([{"task_id": "run_1:0:a", "node_id": "a", "attempt": 2,
                      "idempotency_key": "run_1:0:a:2", "outcome": "completed",
                      "next_scheduled_attempt": null}])
        )
    );
    let done = fx.moment(&rtg, &step.run).await;
    assert_eq!(done.checkpoint_type, C::RunCompleted);
    assert_eq!(fx.log.attempts("a"), vec![1, 2]);
}

// --- scenario 178 --------------------------------------------------------------------------------

#[tokio::test]
async fn every_moment_appends_exactly_one_checkpoint_fact_after_its_runtime_facts() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("integer")},
        "outputs": {"x": {}},
        "nodes": {"only": set(json!({"x": 1}))},
        "edges": {"e0": edge("$start", "only")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    let checkpoint_seqs: Vec<u64> = driven.checkpoints.iter().map(|c| c.seq).collect();
    assert_eq!(checkpoint_seqs, vec![1, 2, 3]);
    let mut expected_seq = 0;
    for checkpoint in &driven.checkpoints {
        let last = checkpoint.events.last().expect("events");
        assert_eq!(last.event_type, E::CheckpointCommitted);
        assert_eq!(last.metadata, checkpoint.metadata);
        assert_eq!(last.step, checkpoint.run.step);
        assert_eq!(
            checkpoint
                .events
                .iter()
                .filter(|e| e.event_type == E::CheckpointCommitted)
                .count(),
            1
        );
        for event in &checkpoint.events {
            expected_seq += 1;
            assert_eq!(event.seq, expected_seq, "global event seqs are contiguous");
            assert_eq!(event.timestamp, checkpoint.created_at);
        }
        assert_eq!(checkpoint.run.event_seq, expected_seq);
    }
}

// --- scenario 179 --------------------------------------------------------------------------------

#[tokio::test]
async fn an_active_superstep_with_no_attempt_due_parks_uncommitted() {
    let fx = Fx::new();
    let rtg = fx.compile(&flaky_graph(60_000));
    let init = fx.start(&rtg, json!({}));
    let retry = fx.moment(&rtg, &init.run).await;
    match fx.advance(&rtg, &retry.run).await {
        Proposal::Park {
            run,
            resume_at,
            wait_ms,
        } => {
            assert_eq!(*run, retry.run, "nothing to commit");
            assert_eq!(resume_at, at(60_000));
            assert_eq!(wait_ms, 60_000);
        }
        other => panic!("expected an uncommitted park, got {other:?}"),
    }
    assert_eq!(fx.log.attempts("a"), vec![1], "no attempt ran");

    let floored = fx.config.clone().with_resume_floor(Some(at(60_000)));
    let proposal = docket_core::runtime::propose_advance(&rtg, &retry.run, &fx.nodes, &floored)
        .await
        .expect("advance");
    let Proposal::Moment(step) = proposal else {
        panic!("the floor makes the attempt due");
    };
    assert_eq!(step.checkpoint_type, C::StepCommitted);
    assert_eq!(step.disposition, Disposition::Continue);
    assert_eq!(
        step.run.updated_at,
        Some(at(0)),
        "settled on the real clock"
    );
}

// --- scenario 180 --------------------------------------------------------------------------------

#[tokio::test]
async fn a_waiting_barrier_parks_externally_and_then_reports_its_interrupts() {
    let fx = Fx::new();
    let rtg = fx.compile(&approval_graph());
    let init = fx.start(&rtg, json!({}));
    let barrier = fx.moment(&rtg, &init.run).await;
    assert_eq!(barrier.checkpoint_type, C::InterruptRequested);
    assert_eq!(barrier.run.status, RunStatus::Waiting);
    assert_eq!(
        barrier.disposition,
        Disposition::Park {
            kind: ParkKind::External,
            reason: ParkReason::AwaitingInterrupts
        }
    );
    assert_eq!(
        event_types(&barrier.events),
        vec![E::InterruptRequested, E::CheckpointCommitted]
    );
    assert_eq!(
        barrier.events[0].payload,
        map(json!({"attempt": 1, "interrupt_id": "interrupt_1", "resume_channel": "approved"}))
    );
    match fx.advance(&rtg, &barrier.run).await {
        Proposal::Wait { run, interrupt_ids } => {
            assert_eq!(*run, barrier.run);
            assert_eq!(interrupt_ids, vec!["interrupt_1".to_owned()]);
        }
        other => panic!("expected a wait, got {other:?}"),
    }
}

// --- scenario 181 --------------------------------------------------------------------------------

#[tokio::test]
async fn a_discarded_moment_leaves_the_committed_run_untouched_and_replans_identically() {
    let fx = Fx::new();
    let rtg = fx.compile(&chain_graph());
    let init = fx.start(&rtg, json!({}));
    let committed = init.run.clone();
    let first = fx.moment(&rtg, &committed).await;
    assert_eq!(
        committed, init.run,
        "proposing never mutates the committed run"
    );
    // The first proposal is discarded (e.g. a lost fence); the next attempt starts over from
    // the committed run and proposes the very same moment.
    drop(first.clone());
    let second = fx.moment(&rtg, &committed).await;
    assert_eq!(first, second);
    assert_eq!(
        fx.log.attempts("first"),
        vec![1, 1],
        "attempts are replayed"
    );
}
