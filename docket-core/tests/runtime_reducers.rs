//! Reducer semantics through the barrier (`docs/runs-and-moments.md`, “Update barrier”;
//! `docs/runs-and-moments.md`, “Reducers, schemas, guards and portable values”; scenario 189 of
//! `docs/scenarios.md`).

mod support;

use docket_core::inline::resolve_interrupt_inline;
use docket_core::model::RunStatus;
use serde_json::{json, Value};
use support::{doc, edge, field, node, set, state, Fx};

fn list_of(item: &str) -> Value {
    json!({"type": "list", "item": {"type": item}})
}

#[tokio::test]
async fn append_accumulates_and_list_writes_concatenate() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"log": {"schema": list_of("string"), "reducer": "append"}},
        "nodes": {"a": set(json!({"log": "x"})), "b": set(json!({"log": ["y", "z"]}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("a", "b")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(state(&driven.run, "log"), Some(json!(["x", "y", "z"])));
    assert_eq!(driven.run.channels["state:log"].version, 2);
}

#[tokio::test]
async fn same_step_writes_fold_in_node_order_after_the_prior_value() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"log": {"schema": list_of("integer"), "reducer": "append", "default": [0]}},
        "nodes": {"late": set(json!({"log": [2, 3]})), "early": set(json!({"log": 1}))},
        "edges": {"e0": edge("$start", "late"), "e1": edge("$start", "early")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(state(&driven.run, "log"), Some(json!([0, 1, 2, 3])));
}

#[tokio::test]
async fn accumulating_fields_expose_their_zero_in_snapshots() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {
            "items": {"schema": list_of("string"), "reducer": "append"},
            "tags": {"schema": list_of("string"), "reducer": "union"},
            "total": {"schema": {"type": "integer"}, "reducer": "sum"},
            "meta": {"schema": {"type": "map"}, "reducer": "merge"},
            "plain": field("string"),
        },
        "nodes": {"look": set(json!({}))},
        "edges": {"e0": edge("$start", "look")},
    }));
    fx.run(&graph, json!({})).await;
    let snapshot = &fx.log.snapshots("look")[0];
    assert_eq!(snapshot["items"], json!([]));
    assert_eq!(snapshot["tags"], json!([]));
    assert_eq!(snapshot["total"], json!(0));
    assert_eq!(snapshot["meta"], json!({}));
    assert!(
        !snapshot.contains_key("plain"),
        "no zero, no default: absent"
    );
}

#[tokio::test]
async fn sum_adds_every_write_to_the_committed_total() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"total": {"schema": {"type": "integer"}, "reducer": "sum"}},
        "nodes": {"a": set(json!({"total": 2})), "b": set(json!({"total": 3})), "c": set(json!({"total": 1}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b"), "e2": edge("b", "c")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(state(&driven.run, "total"), Some(json!(6)));
}

#[tokio::test]
async fn merge_folds_maps_shallowly_or_deeply() {
    for (reducer, expected) in [
        (json!("merge"), json!({"a": {"y": 2}, "b": 1})),
        (
            json!({"type": "merge", "deep": true}),
            json!({"a": {"x": 1, "y": 2}, "b": 1}),
        ),
    ] {
        let fx = Fx::new();
        let graph = doc(json!({
            "fields": {"m": {"schema": {"type": "map"}, "reducer": reducer}},
            "nodes": {"one": set(json!({"m": {"a": {"x": 1}, "b": 1}})), "two": set(json!({"m": {"a": {"y": 2}}}))},
            "edges": {"e0": edge("$start", "one"), "e1": edge("one", "two")},
        }));
        let driven = fx.run(&graph, json!({})).await;
        assert_eq!(state(&driven.run, "m"), Some(expected));
    }
}

#[tokio::test]
async fn union_dedupes_with_first_occurrence_winning() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"tags": {"schema": list_of("string"), "reducer": "union"}},
        "nodes": {"a": set(json!({"tags": ["x", "y"]})), "b": set(json!({"tags": ["y", "z", "x"]}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(state(&driven.run, "tags"), Some(json!(["x", "y", "z"])));
}

#[tokio::test]
async fn append_writes_validate_against_the_item_schema() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"log": {"schema": list_of("string"), "reducer": "append"}},
        "nodes": {"bad": set(json!({"log": ["ok", 5]}))},
        "edges": {"e0": edge("$start", "bad")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Failed);
    let reason = driven.run.failure.expect("failure").details["errors"]["bad"].clone();
    assert!(
        reason
            .as_str()
            .is_some_and(|r| r.contains("[1]") && r.contains("expected string")),
        "{reason}"
    );
}

#[tokio::test]
async fn sum_writes_must_be_numbers_and_merge_writes_maps() {
    for (reducer, schema, write) in [
        ("sum", json!({"type": "integer"}), json!(null)),
        ("sum", json!({"type": "integer"}), json!("1")),
        ("merge", json!({"type": "map"}), json!([1])),
    ] {
        let fx = Fx::new();
        let graph = doc(json!({
            "fields": {"f": {"schema": schema, "reducer": reducer}},
            "nodes": {"w": set(json!({"f": write}))},
            "edges": {"e0": edge("$start", "w")},
        }));
        let driven = fx.run(&graph, json!({})).await;
        assert_eq!(driven.run.status, RunStatus::Failed, "{reducer} {write}");
    }
}

#[tokio::test]
async fn interrupt_resolutions_go_through_the_reducer() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"notes": {"schema": list_of("string"), "reducer": "append"}},
        "nodes": {"ask": node("approval", json!({"field": "notes"})), "seed": set(json!({"notes": "seed"}))},
        "edges": {"e0": edge("$start", "ask"), "e1": edge("$start", "seed")},
    }));
    let paused = fx.run(&graph, json!({})).await;
    assert_eq!(state(&paused.run, "notes"), Some(json!(["seed"])));
    let resolved = resolve_interrupt_inline(
        &graph,
        &paused.run,
        "interrupt_1",
        json!("answer"),
        &fx.nodes,
        &fx.options(),
    )
    .await
    .expect("resolve");
    let after = &resolved.checkpoints[0].run.channels["state:notes"];
    assert_eq!(
        after.value,
        json!(["seed", "answer"]),
        "appended, not replaced"
    );
    assert_eq!(after.version, 2);
    assert_eq!(resolved.run.status, RunStatus::Done);
}

#[tokio::test]
async fn first_value_keeps_the_first_write() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"owner": {"schema": {"type": "string"}, "reducer": "first_value"}},
        "nodes": {
            "b": set(json!({"owner": "b"})), "a": set(json!({"owner": "a"})),
            "later": set(json!({"owner": "later"})),
        },
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b"), "e2": edge("a", "later")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(state(&driven.run, "owner"), Some(json!("a")));
    assert_eq!(
        driven.run.channels["state:owner"].version, 2,
        "still a write"
    );
}
