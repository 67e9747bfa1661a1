//! Determinism of the pure core (`docs/runs-and-moments.md`, “Determinism”): the same committed run
//! and the same attempt results give byte-identical moments, whatever the scripted outcomes.

mod support;

use docket_core::graph::RuntimeGraph;
use docket_core::model::{Interrupt, Run, Timestamp};
use docket_core::runtime::{
    plan, settle, AttemptOutcome, AttemptResult, Moment, Plan, SequentialIds,
};
use proptest::prelude::*;
use serde_json::json;
use support::{at, doc, edge, field, set, Fx};

fn graph() -> RuntimeGraph {
    let fx = Fx::new();
    let retry = json!({"retry": {"max_attempts": 3, "backoff_ms": 5}});
    fx.compile(&doc(json!({
        "inputs": {"seed": field("integer")},
        "fields": {
            "total": {"schema": {"type": "integer"}, "reducer": "sum"},
            "log": {"schema": {"type": "list"}, "reducer": "append"},
            "ok": field("boolean"),
        },
        "outputs": {"total": {}, "log": {}},
        "nodes": {
            "a": {"implementation": "set", "policies": retry},
            "b": {"implementation": "set", "policies": retry},
            "c": {"implementation": "set", "policies": retry},
            "d": set(json!({})),
        },
        "edges": {
            "e0": edge("$start", "a"), "e1": edge("$start", "b"), "e2": edge("$start", "c"),
            "j": {"from": ["a", "b"], "to": "d"},
            "loop": {"from": "c", "to": "c", "guard": {"op": "not", "of": {"op": "changed", "field": "ok"}}},
        },
    })))
}

/// The scripted outcome of an attempt.
fn outcome(choice: u8, value: i64) -> AttemptOutcome {
    match choice % 8 {
        0..=3 => AttemptOutcome::Update(
            json!({"total": value, "log": [value]})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
        4 => AttemptOutcome::Update(json!({"ok": true}).as_object().cloned().unwrap_or_default()),
        5 => AttemptOutcome::retryable(format!("flaky {value}")),
        6 => AttemptOutcome::Interrupt(Interrupt::new("ok")),
        _ => AttemptOutcome::permanent("broken"),
    }
}

fn bytes(moment: &Moment) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    (
        serde_json::to_vec(&moment.run).unwrap_or_default(),
        serde_json::to_vec(&moment.events).unwrap_or_default(),
        serde_json::to_vec(&moment.checkpoint_metadata).unwrap_or_default(),
    )
}

/// Plans and settles `run` twice with independent id generators; asserts identity; returns the
/// first moment (or `None` when there is nothing to settle).
fn step_twice(
    rtg: &RuntimeGraph,
    run: &Run,
    now: Timestamp,
    script: &mut impl Iterator<Item = (u8, i64)>,
) -> Option<Moment> {
    let planned = plan(rtg, run, now, None).expect("plan");
    assert_eq!(
        planned,
        plan(rtg, run, now, None).expect("plan"),
        "planning is pure"
    );
    let results: Vec<AttemptResult> = match &planned {
        Plan::Dispatch(superstep) => superstep
            .activations
            .iter()
            .map(|a| {
                let (choice, value) = script.next().unwrap_or((0, 1));
                AttemptResult::of(a, outcome(choice, value))
            })
            .collect(),
        Plan::Complete | Plan::Fail(_) => Vec::new(),
        Plan::Wait { .. } | Plan::Terminal | Plan::Park { .. } => return None,
    };
    let first = settle(rtg, run, &planned, &results, now, &SequentialIds::new()).expect("settle");
    let second = settle(rtg, run, &planned, &results, now, &SequentialIds::new()).expect("settle");
    assert_eq!(bytes(&first), bytes(&second));
    assert_eq!(first, second);
    Some(first)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn plan_and_settle_are_deterministic(
        seed in -5_i64..5,
        script in proptest::collection::vec((any::<u8>(), -100_i64..100), 1..40),
    ) {
        let rtg = graph();
        let fx = Fx::new();
        let mut run = fx.start(&rtg, json!({"seed": seed})).run;
        let mut script = script.into_iter();
        let mut now = at(0);
        for _ in 0..12 {
            if let Plan::Park { resume_at, .. } = plan(&rtg, &run, now, None).expect("plan") {
                now = resume_at;
            }
            let Some(moment) = step_twice(&rtg, &run, now, &mut script) else { break };
            docket_core::model::validate_durable(&moment.run).expect("durable");
            prop_assert_eq!(moment.run.checkpoint_seq, run.checkpoint_seq + 1);
            run = moment.run;
        }
    }
}
