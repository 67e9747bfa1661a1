//! Graph execution semantics through the inline driver (`docs/runs-and-moments.md`,
//! “Update barrier”; scenarios 185 and 18–19 of `docs/scenarios.md`).

mod support;

use docket_core::graph::GraphDocument;
use docket_core::model::{CheckpointType as C, EventType as E, RunStatus};
use serde_json::{json, Value};
use support::{all_events, doc, edge, field, node, output, set, state, types, Fx};

fn steps_of(fx: &Fx, node_id: &str) -> Vec<u64> {
    fx.log
        .all()
        .into_iter()
        .filter(|c| c.node_id == node_id)
        .map(|c| c.step)
        .collect()
}

#[tokio::test]
async fn a_chain_takes_two_supersteps_and_completes_in_its_own_moment() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"a": field("integer"), "b": field("integer")},
        "outputs": {"a": {}, "b": {}},
        "nodes": {"first": set(json!({"a": 1})), "second": set(json!({"b": 2}))},
        "edges": {"e0": edge("$start", "first"), "e1": edge("first", "second"), "e2": edge("second", "$finish")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(
        types(&driven),
        vec![
            C::RunInitialized,
            C::StepCommitted,
            C::StepCommitted,
            C::RunCompleted
        ]
    );
    assert_eq!(driven.run.step, 2);
    assert_eq!(output(&driven.run, "a"), json!(1));
    assert_eq!(output(&driven.run, "b"), json!(2));
    let completed = &driven.checkpoints[3].events[0];
    assert_eq!(completed.event_type, E::RunCompleted);
    assert_eq!(completed.payload["outputs"], json!(["a", "b"]));
    let finish = all_events(&driven)
        .into_iter()
        .find(|e| {
            e.event_type == E::EdgeTriggered && e.payload.get("to") == Some(&json!("$finish"))
        })
        .expect("the $finish edge is recorded as a fact");
    assert_eq!(finish.payload["edge_id"], json!("e2"));
}

#[tokio::test]
async fn unwritten_outputs_project_null_even_with_a_default() {
    let fx = Fx::new();
    let graph = doc(json!({
        "inputs": {"given": field("string"), "skipped": {"schema": {"type": "string"}, "default": "d"}},
        "fields": {"never": {"schema": {"type": "integer"}, "default": 7}, "x": field("integer")},
        "outputs": {"never": {}, "given": {}, "skipped": {}, "renamed": {"source": "x"}},
        "nodes": {"n": set(json!({"x": 3}))},
        "edges": {"e0": edge("$start", "n")},
    }));
    let driven = fx.run(&graph, json!({"given": "g"})).await;
    assert_eq!(
        driven.run.output,
        Some(
            json!({"never": null, "given": "g", "skipped": null, "renamed": 3})
                .as_object()
                .cloned()
                .expect("map")
        )
    );
    let snapshot = &fx.log.snapshots("n")[0];
    assert_eq!(snapshot["never"], json!(7), "snapshots do see defaults");
    assert_eq!(snapshot["skipped"], json!("d"));
}

#[tokio::test]
async fn fan_out_runs_every_target_in_the_next_superstep() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"l": field("integer"), "r": field("integer")},
        "nodes": {"root": set(json!({})), "left": set(json!({"l": 1})), "right": set(json!({"r": 1}))},
        "edges": {"e0": edge("$start", "root"), "e1": edge("root", "left"), "e2": edge("root", "right")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(steps_of(&fx, "left"), vec![1]);
    assert_eq!(steps_of(&fx, "right"), vec![1]);
    assert_eq!(driven.run.step, 2);
}

#[tokio::test]
async fn plain_fan_in_is_or_and_runs_the_target_once_per_step() {
    let fx = Fx::new();
    let graph = doc(json!({
        "nodes": {"a": set(json!({})), "b": set(json!({})), "c": set(json!({}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("$start", "b"), "e2": edge("a", "c"), "e3": edge("b", "c")},
    }));
    fx.run(&graph, json!({})).await;
    assert_eq!(steps_of(&fx, "c"), vec![1]);
}

fn diamond() -> GraphDocument {
    // b finishes at step 1, d only at step 2: the join waits for both.
    doc(json!({
        "nodes": {
            "a": set(json!({})), "b": set(json!({})), "c": set(json!({})),
            "d": set(json!({})), "j": set(json!({})),
        },
        "edges": {
            "e0": edge("$start", "a"), "e1": edge("a", "b"), "e2": edge("a", "c"),
            "e3": edge("c", "d"), "join": {"from": ["d", "b"], "to": "j"},
        },
    }))
}

#[tokio::test]
async fn a_multi_source_edge_waits_for_all_sources_and_remembers_completions() {
    let fx = Fx::new();
    let driven = fx.run(&diamond(), json!({})).await;
    assert_eq!(steps_of(&fx, "j"), vec![3]);
    // After b's barrier the join remembered b; after d's it fired and reset.
    let after_b = &driven.checkpoints[2].run.channels["edge:join"];
    assert_eq!(after_b.barrier_seen, vec!["b".to_owned()]);
    assert_eq!(after_b.version, 0);
    let after_d = &driven.checkpoints[3].run.channels["edge:join"];
    assert!(after_d.barrier_seen.is_empty());
    assert_eq!(after_d.version, 1);
}

#[tokio::test]
async fn barrier_completions_are_sticky_across_a_cycle_and_fire_once_per_round() {
    // `a` loops twice and is done before `b` completes: its completion is remembered and the
    // join fires exactly once, when `b` completes.
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"n": field("integer")},
        "nodes": {
            "a": node("increment", json!({"field": "n"})),
            "b0": set(json!({})), "b1": set(json!({})), "b": set(json!({})),
            "j": set(json!({})),
        },
        "edges": {
            "e0": edge("$start", "a"), "e1": edge("$start", "b0"),
            "e2": edge("b0", "b1"), "e3": edge("b1", "b"),
            "again": {"from": "a", "to": "a", "guard": {"op": "not", "of": {"op": "equals", "ref": "n", "value": 2}}},
            "join": {"from": ["a", "b"], "to": "j"},
        },
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(steps_of(&fx, "a"), vec![0, 1]);
    assert_eq!(
        driven.checkpoints[2].run.channels["edge:join"].barrier_seen,
        vec!["a".to_owned()],
        "a's repeated completions count once and stick"
    );
    assert_eq!(steps_of(&fx, "b"), vec![2]);
    assert_eq!(steps_of(&fx, "j"), vec![3], "fires once, when b completes");
    assert!(driven.run.channels["edge:join"].barrier_seen.is_empty());
}

#[tokio::test]
async fn a_fired_barrier_with_a_false_guard_still_resets() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"go": field("boolean")},
        "nodes": {"a": set(json!({"go": false})), "b": set(json!({})), "j": set(json!({}))},
        "edges": {
            "e0": edge("$start", "a"), "e1": edge("$start", "b"),
            "join": {"from": ["a", "b"], "to": "j", "guard": {"op": "equals", "ref": "go", "value": true}},
        },
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(fx.log.count("j"), 0);
    let join = &driven.run.channels["edge:join"];
    assert!(
        join.barrier_seen.is_empty(),
        "bookkeeping happens before the guard"
    );
    assert_eq!(join.version, 0);
}

#[tokio::test]
async fn last_value_conflicts_resolve_to_the_last_writer_in_node_order() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("string")},
        "outputs": {"x": {}},
        "nodes": {"beta": set(json!({"x": "beta"})), "alpha": set(json!({"x": "alpha"}))},
        "edges": {"e0": edge("$start", "beta"), "e1": edge("$start", "alpha")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(output(&driven.run, "x"), json!("beta"));
    let updated = all_events(&driven)
        .into_iter()
        .find(|e| e.event_type == E::ChannelUpdated && e.channel_id.as_deref() == Some("state:x"))
        .expect("channel fact");
    assert_eq!(updated.payload["writers"], json!(["alpha", "beta"]));
}

#[tokio::test]
async fn change_tracking_is_write_based() {
    // `again` rewrites the same value: the version still bumps and `changed` still fires.
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"x": field("integer"), "hits": field("integer")},
        "outputs": {"hits": {}},
        "nodes": {
            "first": set(json!({"x": 1})),
            "again": set(json!({"x": 1})),
            "count": node("increment", json!({"field": "hits"})),
        },
        "edges": {
            "e0": edge("$start", "first"), "e1": edge("first", "again"),
            "e2": {"from": "again", "to": "count", "guard": {"op": "changed", "field": "x"}},
        },
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.channels["state:x"].version, 2);
    assert_eq!(output(&driven.run, "hits"), json!(1));
}

fn routing() -> GraphDocument {
    doc(json!({
        "inputs": {"order": {"schema": {"type": "map"}, "required": true}},
        "fields": {"path": field("string")},
        "outputs": {"path": {}},
        "nodes": {"route": set(json!({})), "premium": set(json!({"path": "premium"})), "standard": set(json!({"path": "standard"}))},
        "edges": {
            "e0": edge("$start", "route"),
            "to_premium": {"from": "route", "to": "premium",
                "guard": {"op": "equals", "ref": {"$path": ["order", "tier"]}, "value": "premium"}},
            "to_standard": {"from": "route", "to": "standard",
                "guard": {"op": "not", "of": {"op": "equals", "ref": {"$path": ["order", "tier"]}, "value": "premium"}}},
        },
    }))
}

#[tokio::test]
async fn guards_pick_the_premium_or_standard_path() {
    for (tier, expected) in [("premium", "premium"), ("basic", "standard")] {
        let fx = Fx::new();
        let driven = fx.run(&routing(), json!({"order": {"tier": tier}})).await;
        assert_eq!(output(&driven.run, "path"), json!(expected), "{tier}");
        assert_eq!(
            fx.log.count(if expected == "premium" {
                "standard"
            } else {
                "premium"
            }),
            0
        );
    }
}

#[tokio::test]
async fn a_missing_guard_path_is_false_not_an_error() {
    let fx = Fx::new();
    let driven = fx.run(&routing(), json!({"order": {"items": []}})).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(output(&driven.run, "path"), json!("standard"));
    let fx = Fx::new();
    let graph = doc(json!({
        "inputs": {"order": field("map")},
        "nodes": {"a": set(json!({})), "b": set(json!({}))},
        "edges": {
            "e0": edge("$start", "a"),
            "e1": {"from": "a", "to": "b", "guard": {"op": "exists", "ref": {"$path": ["order", "items", 5]}}},
        },
    }));
    let driven = fx.run(&graph, json!({"order": {"items": [1]}})).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(fx.log.count("b"), 0);
}

#[tokio::test]
async fn start_edges_fire_on_provided_inputs_only() {
    let fx = Fx::new();
    let graph = doc(json!({
        "inputs": {"a": field("string"), "b": field("string")},
        "nodes": {"on_a": set(json!({})), "on_b": set(json!({}))},
        "edges": {
            "e0": {"from": "$start", "to": "on_a", "guard": {"op": "changed", "field": "a"}},
            "e1": {"from": "$start", "to": "on_b", "guard": {"op": "changed", "field": "b"}},
            "e2": edge("$start", "$finish"),
        },
    }));
    let driven = fx.run(&graph, json!({"a": "x"})).await;
    assert_eq!(fx.log.order(), vec!["on_a".to_owned()]);
    // Kept on purpose: a $start → $finish edge bumps a channel no node subscribes to.
    assert_eq!(driven.checkpoints[0].run.channels["edge:e2"].version, 1);
}

#[tokio::test]
async fn an_edge_activation_is_visible_for_one_step_only() {
    let fx = Fx::new();
    let graph = doc(json!({
        "nodes": {"a": set(json!({})), "b": set(json!({})), "c": set(json!({}))},
        "edges": {"e0": edge("$start", "a"), "e1": edge("a", "b"), "e2": edge("b", "c")},
    }));
    let driven = fx.run(&graph, json!({})).await;
    let after_a = &driven.checkpoints[1].run.channels["edge:e1"];
    assert_eq!((after_a.value.clone(), after_a.version), (json!(true), 1));
    let after_b = &driven.checkpoints[2].run.channels["edge:e1"];
    assert_eq!((after_b.value.clone(), after_b.version), (Value::Null, 1));
    assert_eq!(
        driven.checkpoints[1].run.channels["edge:e0"].value,
        Value::Null
    );
}

#[tokio::test]
async fn a_guarded_cycle_terminates_by_quiescence() {
    let fx = Fx::new();
    let graph = doc(json!({
        "fields": {"n": field("integer")},
        "outputs": {"n": {}},
        "nodes": {"inc": node("increment", json!({"field": "n"}))},
        "edges": {
            "e0": edge("$start", "inc"),
            "again": {"from": "inc", "to": "inc", "guard": {"op": "not", "of": {"op": "equals", "ref": "n", "value": 5}}},
        },
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(output(&driven.run, "n"), json!(5));
    assert_eq!(driven.run.step, 5);
}

fn endless() -> GraphDocument {
    doc(json!({
        "fields": {"n": field("integer")},
        "nodes": {"inc": node("increment", json!({"field": "n"}))},
        "edges": {"e0": edge("$start", "inc"), "again": edge("inc", "inc")},
    }))
}

#[tokio::test]
async fn exceeding_the_graph_max_supersteps_fails_with_a_typed_failure() {
    let fx = Fx::new();
    let mut graph = endless();
    graph.policies.insert("max_supersteps".into(), json!(3));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Failed);
    assert_eq!(
        state(&driven.run, "n"),
        Some(json!(3)),
        "limit 3 allows steps 0..2"
    );
    let failure = driven.run.failure.clone().expect("failure");
    assert_eq!(failure.code, "max_supersteps_exceeded");
    assert_eq!(failure.details["limit"], json!(3));
    let last = driven.checkpoints.last().expect("checkpoint");
    assert_eq!(last.checkpoint_type, C::RunFailed);
    assert_eq!(
        last.events[0].payload["reason"],
        json!("max_supersteps_exceeded")
    );
}

#[tokio::test]
async fn a_host_bounds_a_canonically_unbounded_graph() {
    // Scenario 19 of `docs/scenarios.md`: host max_supersteps 1 on a graph without a policy fails
    // the run.
    let fx = Fx::new().host_max_supersteps(1);
    let driven = fx.run(&endless(), json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Failed);
    let failure = driven.run.failure.clone().expect("failure");
    assert_eq!(failure.code, "max_supersteps_exceeded");
    assert_eq!(failure.details["limit"], json!(1));
    assert_eq!(fx.log.count("inc"), 1);
}

#[tokio::test]
async fn a_graph_policy_wins_over_the_host_fallback() {
    // Scenario 18 of `docs/scenarios.md`: the graph's own policy bounds its cycle; the counter
    // reaches 10.
    let fx = Fx::new().host_max_supersteps(2);
    let graph = doc(json!({
        "policies": {"max_supersteps": 20},
        "fields": {"n": field("integer")},
        "outputs": {"n": {}},
        "nodes": {"inc": node("increment", json!({"field": "n"}))},
        "edges": {
            "e0": edge("$start", "inc"),
            "again": {"from": "inc", "to": "inc", "guard": {"op": "not", "of": {"op": "equals", "ref": "n", "value": 10}}},
        },
    }));
    let driven = fx.run(&graph, json!({})).await;
    assert_eq!(driven.run.status, RunStatus::Done);
    assert_eq!(output(&driven.run, "n"), json!(10));
}

#[tokio::test]
async fn an_empty_graph_completes_at_once() {
    let fx = Fx::new();
    let driven = fx.run(&doc(json!({})), json!({})).await;
    assert_eq!(types(&driven), vec![C::RunInitialized, C::RunCompleted]);
    assert_eq!(driven.run.output, Some(Default::default()));
}
