//! Checkpoint order and identity (`docs/runs-and-moments.md`, “Activations and identity”;
//! `docs/runs-and-moments.md`, “Determinism”; scenario 188 of `docs/scenarios.md`).

mod support;

use docket_core::model::value::snapshot_hash;
use docket_core::model::{CheckpointType as C, RunStatus};
use docket_core::runtime::{plan, Disposition, Plan};
use serde_json::json;
use support::{at, doc, edge, field, node, set, types, Fx};

fn graph() -> docket_core::graph::GraphDocument {
    doc(json!({
        "inputs": {"q": field("string")},
        "fields": {"a": field("integer"), "b": field("integer"), "c": field("integer")},
        "nodes": {"x": set(json!({"a": 1})), "y": set(json!({"b": 2})), "z": set(json!({"c": 3}))},
        "edges": {"e0": edge("$start", "x"), "e1": edge("$start", "y"), "e2": edge("x", "z")},
    }))
}

#[tokio::test]
async fn run_initialized_commits_before_any_node_runs() {
    let fx = Fx::new();
    let rtg = fx.compile(&graph());
    let init = fx.start(&rtg, json!({"q": "?"}));
    assert_eq!(init.checkpoint_type, C::RunInitialized);
    assert!(fx.log.all().is_empty());
    fx.moment(&rtg, &init.run).await;
    assert_eq!(fx.log.order(), vec!["x".to_owned(), "y".to_owned()]);
}

#[tokio::test]
async fn checkpoints_arrive_in_commit_order_and_completion_comes_last() {
    let fx = Fx::new();
    let driven = fx.run(&graph(), json!({})).await;
    assert_eq!(
        types(&driven),
        vec![
            C::RunInitialized,
            C::StepCommitted,
            C::StepCommitted,
            C::RunCompleted
        ]
    );
    for (i, checkpoint) in driven.checkpoints.iter().enumerate() {
        assert_eq!(checkpoint.seq, i as u64 + 1);
        assert_eq!(checkpoint.run.checkpoint_seq, checkpoint.seq);
        assert_eq!(
            checkpoint.run.event_seq,
            checkpoint.events.last().map(|e| e.seq).unwrap_or_default()
        );
    }
    // The barrier that leaves nothing to do still continues: completion is detected by the
    // next plan, in its own moment.
    let last_barrier = &driven.checkpoints[2];
    assert_eq!(last_barrier.run.status, RunStatus::Running);
    assert_eq!(last_barrier.metadata["wake_disposition"], json!("continue"));
    assert_eq!(driven.checkpoints[3].run.step, last_barrier.run.step);
}

#[tokio::test]
async fn re_planning_an_uncommitted_superstep_gives_byte_identical_identities() {
    let fx = Fx::new();
    let rtg = fx.compile(&graph());
    let init = fx.start(&rtg, json!({"q": "?"}));
    let first = plan(&rtg, &init.run, at(0), None).expect("plan");
    let later = plan(&rtg, &init.run, at(86_400_000), None).expect("plan");
    assert_eq!(first, later, "a fresh plan depends on committed state only");
    let Plan::Dispatch(superstep) = first else {
        panic!("dispatch");
    };
    let ids: Vec<(&str, &str)> = superstep
        .activations
        .iter()
        .map(|a| (a.task_id.as_str(), a.idempotency_key.as_str()))
        .collect();
    assert_eq!(
        ids,
        vec![("run_1:0:x", "run_1:0:x:1"), ("run_1:0:y", "run_1:0:y:1")]
    );
    let hash = snapshot_hash(&superstep.activations[0].snapshot);
    assert!(superstep.activations.iter().all(|a| a.input_hash == hash));
    assert_eq!(hash.len(), 64);
    assert_eq!(superstep.activations[0].snapshot["q"], json!("?"));
}

#[tokio::test]
async fn completion_is_never_proposed_while_work_or_interrupts_remain() {
    let fx = Fx::new();
    let g = doc(json!({
        "fields": {"ok": field("boolean")},
        "nodes": {"ask": node("approval", json!({"field": "ok"}))},
        "edges": {"e0": edge("$start", "ask")},
    }));
    let rtg = fx.compile(&g);
    let init = fx.start(&rtg, json!({}));
    assert!(matches!(
        plan(&rtg, &init.run, at(0), None),
        Ok(Plan::Dispatch(_))
    ));
    let barrier = fx.moment(&rtg, &init.run).await;
    assert!(matches!(
        plan(&rtg, &barrier.run, at(0), None),
        Ok(Plan::Wait { .. })
    ));
    assert_ne!(barrier.disposition, Disposition::Continue);
}
