//! `Moment::yield_for` (`docs/runs-and-moments.md`, “Yielding at a drain budget”; scenario 175 of
//! `docs/scenarios.md`).

mod support;

use docket_core::graph::GraphDocument;
use docket_core::model::CheckpointType as C;
use docket_core::runtime::{Disposition, ParkKind, ParkReason, YieldError};
use serde_json::json;
use support::{doc, edge, field, node, set, Fx};

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

#[tokio::test]
async fn yield_narrows_a_continuing_moment_and_rebuilds_its_envelope() {
    let fx = Fx::new();
    let rtg = fx.compile(&chain_graph());
    let init = fx.start(&rtg, json!({}));
    let moment = fx.moment(&rtg, &init.run).await;
    assert_eq!(moment.disposition, Disposition::Continue);
    let yielded = moment.yield_for(ParkReason::DrainBudget).expect("yield");
    assert_eq!(
        yielded.disposition,
        Disposition::Park {
            kind: ParkKind::Immediate,
            reason: ParkReason::DrainBudget
        }
    );
    let mut envelope = moment.checkpoint_metadata.clone();
    envelope.insert("wake_disposition".into(), json!("immediate"));
    envelope.insert("park_reason".into(), json!("drain_budget"));
    assert_eq!(yielded.checkpoint_metadata, envelope);
    assert_eq!(yielded.events.last().map(|e| &e.metadata), Some(&envelope));
    // Everything else is preserved.
    assert_eq!(yielded.run, moment.run);
    assert_eq!(yielded.checkpoint_type, C::StepCommitted);
    assert_eq!(yielded.proposed_at, moment.proposed_at);
    assert_eq!(yielded.pending_attempts, moment.pending_attempts);
    let strip = |m: &docket_core::runtime::Moment| {
        m.events
            .iter()
            .map(|e| (e.seq, e.event_type, e.timestamp, e.payload.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&yielded), strip(&moment));
}

#[tokio::test]
async fn yield_keeps_the_interrupt_requested_type_of_a_continuing_barrier() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"approved": field("boolean"), "x": field("integer")},
        "nodes": {
            "ask": node("approval", json!({"field": "approved"})),
            "work": set(json!({"x": 1})),
            "more": set(json!({"x": 2})),
        },
        "edges": {"e0": edge("$start", "ask"), "e1": edge("$start", "work"), "e2": edge("work", "more")},
    }));
    let rtg = fx.compile(&graph);
    let init = fx.start(&rtg, json!({}));
    let moment = fx.moment(&rtg, &init.run).await;
    assert_eq!(moment.checkpoint_type, C::InterruptRequested);
    assert_eq!(moment.disposition, Disposition::Continue, "more still runs");
    let yielded = moment.yield_for(ParkReason::DrainBudget).expect("yield");
    assert_eq!(yielded.checkpoint_type, C::InterruptRequested);
    assert_eq!(
        yielded.checkpoint_metadata.get("checkpoint_type"),
        Some(&json!("interrupt_requested"))
    );
}

#[tokio::test]
async fn yield_refuses_terminal_and_retry_parks() {
    let fx = Fx::new();
    let rtg = fx.compile(&flaky_graph(10));
    let init = fx.start(&rtg, json!({}));
    let retry = fx.moment(&rtg, &init.run).await;
    assert_eq!(retry.checkpoint_type, C::RetryScheduled);
    assert!(matches!(
        retry.yield_for(ParkReason::DrainBudget),
        Err(YieldError::NotContinue(Disposition::Park {
            reason: ParkReason::RetryBackoff,
            ..
        }))
    ));
    fx.clock.advance_millis(10);
    let step = fx.moment(&rtg, &retry.run).await;
    let done = fx.moment(&rtg, &step.run).await;
    assert_eq!(done.checkpoint_type, C::RunCompleted);
    assert!(matches!(
        done.yield_for(ParkReason::DrainBudget),
        Err(YieldError::NotContinue(Disposition::Park {
            kind: ParkKind::Terminal,
            ..
        }))
    ));
}

#[tokio::test]
async fn yield_rejects_malformed_moments() {
    let fx = Fx::new();
    let rtg = fx.compile(&chain_graph());
    let init = fx.start(&rtg, json!({}));
    let moment = fx.moment(&rtg, &init.run).await;

    let mut missing = moment.clone();
    missing.events.pop();
    let mut duplicated = moment.clone();
    duplicated
        .events
        .push(moment.events.last().cloned().expect("checkpoint"));
    let mut misplaced = moment.clone();
    misplaced.events.swap(0, moment.events.len() - 1);
    let mut mismatched = moment.clone();
    mismatched
        .checkpoint_metadata
        .insert("graph_step".into(), json!(99));
    let mut empty = moment.clone();
    empty.events.clear();
    for (name, bad) in [
        ("missing", missing),
        ("duplicated", duplicated),
        ("misplaced", misplaced),
        ("mismatched", mismatched),
        ("empty", empty),
    ] {
        assert!(
            matches!(
                bad.yield_for(ParkReason::DrainBudget),
                Err(YieldError::MalformedMoment(_))
            ),
            "{name}"
        );
    }
}
