//! Lowering (`docs/graphs.md`, “Lowering and the runtime graph”) and runtime validation of the
//! lowered graph.

mod compiler_support;

use compiler_support::{codes as codes_of, publish, valid_graph};
use docket_core::graph::lower::lower;
use docket_core::graph::{
    check_runtime, codes, graph_hash, Channel, FieldDecl, FieldKind, GraphDocument, InputDecl,
    NodeDecl, OutputDecl, Reducer, RuntimeGraph, FINISH, START,
};
use serde_json::json;

/// `$start → a`, `$start → b`, `[b, a] → c`, `c → $finish`, with an input, two fields and two
/// outputs.
fn join_graph() -> RuntimeGraph {
    let doc = GraphDocument::builder("join")
        .input(
            "limit",
            InputDecl::new(json!({"type": "integer"}))
                .with_required()
                .with_default(3),
        )
        .field(
            "items",
            FieldDecl::new(json!({"type": "list"})).with_reducer("append"),
        )
        .field(
            "note",
            FieldDecl::new(json!({"type": "string"})).with_default("none"),
        )
        .output("items", OutputDecl::new())
        .output("cap", OutputDecl::of("limit"))
        .node("a", "test.noop")
        .node("b", "test.noop")
        .node("c", NodeDecl::new("test.set").with_config("field", "note"))
        .edge("to_a", START, "a")
        .edge("to_b", START, "b")
        .edge("join", ["b", "a"], "c")
        .edge("done", "c", FINISH)
        .build()
        .expect("doc");
    publish(&doc).expect("compiles").runtime
}

#[test]
fn value_channels_carry_schema_reducer_default_and_requiredness() {
    let rtg = join_graph();
    match &rtg.channels["input:limit"] {
        Channel::Value {
            kind,
            reducer,
            default,
            required,
            schema,
            ..
        } => {
            assert_eq!(*kind, FieldKind::Input);
            assert_eq!(*reducer, Reducer::LastValue);
            assert_eq!(default, &Some(json!(3)));
            assert!(*required);
            assert!(schema.is_some());
        }
        other => panic!("{other:?}"),
    }
    match &rtg.channels["state:items"] {
        Channel::Value {
            kind,
            reducer,
            default,
            ..
        } => {
            assert_eq!(*kind, FieldKind::State);
            assert_eq!(reducer.name(), "append");
            assert_eq!(default, &Some(json!([])), "the reducer's zero");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        rtg.state_field("note"),
        Some(Channel::Value { default: Some(d), .. }) if *d == json!("none")
    ));
}

#[test]
fn edges_lower_to_ephemeral_or_barrier_channels_with_sorted_sources() {
    let rtg = join_graph();
    assert_eq!(
        rtg.channels["edge:to_a"],
        Channel::Ephemeral {
            edge_id: "to_a".into()
        }
    );
    assert_eq!(
        rtg.channels["edge:join"],
        Channel::Barrier {
            edge_id: "join".into(),
            sources: vec!["a".into(), "b".into()]
        }
    );
    assert!(rtg.edges["join"].barrier && !rtg.edges["done"].barrier);
    assert_eq!(rtg.edges["to_a"].from, vec![START.to_owned()]);
}

#[test]
fn nodes_subscribe_to_incoming_edges_and_list_outgoing_ones() {
    let rtg = join_graph();
    let a = rtg.node("a").expect("a");
    assert_eq!(a.runtime_id, "node:a");
    assert_eq!(a.subscribe, vec!["edge:to_a".to_owned()]);
    assert_eq!(a.outgoing_edges, vec!["join".to_owned()]);
    let c = rtg.node("c").expect("c");
    assert_eq!(c.subscribe, vec!["edge:join".to_owned()]);
    assert_eq!(c.outgoing_edges, vec!["done".to_owned()]);
    assert_eq!(c.config["field"], json!("note"));
}

#[test]
fn outputs_project_input_or_state_channels_with_the_source_schema() {
    let rtg = join_graph();
    assert_eq!(rtg.outputs["cap"].source_channel, "input:limit");
    assert_eq!(rtg.outputs["items"].source_channel, "state:items");
    assert_eq!(rtg.outputs["items"].runtime_id, "output:items");
    assert_eq!(
        rtg.outputs["cap"].schema.as_ref().map(|s| s.ty.name()),
        Some("integer")
    );
}

#[test]
fn compiled_graphs_pass_runtime_validation() {
    assert_eq!(check_runtime(&join_graph()), vec![]);
    assert_eq!(
        check_runtime(&publish(&valid_graph()).expect("ok").runtime),
        vec![]
    );
}

#[test]
fn runtime_validation_catches_a_wrong_graph_id_and_zero_bound() {
    let mut rtg = join_graph();
    rtg.id = "join@000000000000".into();
    rtg.max_supersteps = Some(0);
    let problems = check_runtime(&rtg);
    assert_eq!(
        codes_of(&problems),
        vec![
            codes::LOWERING_INVARIANT_FAILED,
            codes::LOWERING_INVARIANT_FAILED
        ]
    );
}

#[test]
fn runtime_validation_catches_missing_channels() {
    let mut rtg = join_graph();
    rtg.channels.remove("edge:join");
    rtg.channels.remove("state:items");
    let problems = check_runtime(&rtg);
    let missing: Vec<&str> = problems
        .iter()
        .filter(|d| d.code == codes::MISSING_RUNTIME_CHANNEL)
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        missing,
        vec!["/edges/join", "/nodes/c", "/outputs/items/source"]
    );
}

#[test]
fn runtime_validation_catches_dangling_edges_and_stale_node_wiring() {
    let mut rtg = join_graph();
    rtg.nodes.remove("node:b");
    let problems = check_runtime(&rtg);
    assert!(problems
        .iter()
        .any(|d| d.code == codes::LOWERING_INVARIANT_FAILED && d.path == "/edges/join"));
    assert!(problems
        .iter()
        .any(|d| d.code == codes::LOWERING_INVARIANT_FAILED && d.path == "/edges/to_b"));
}

#[test]
fn runtime_validation_catches_a_barrier_that_does_not_match_its_edge() {
    let mut rtg = join_graph();
    rtg.channels.insert(
        "edge:join".into(),
        Channel::Barrier {
            edge_id: "join".into(),
            sources: vec!["a".into()],
        },
    );
    let problems = check_runtime(&rtg);
    assert_eq!(codes_of(&problems), vec![codes::LOWERING_INVARIANT_FAILED]);
    assert_eq!(problems[0].path, "/edges/join");
}

#[test]
fn runtime_validation_catches_a_node_whose_runtime_id_collides_with_a_channel() {
    let mut rtg = join_graph();
    let mut node = rtg.node("a").expect("a").clone();
    node.runtime_id = "edge:to_a".into();
    rtg.nodes.insert("node:a".into(), node);
    let problems = check_runtime(&rtg);
    assert!(problems
        .iter()
        .any(|d| d.code == codes::RUNTIME_ID_COLLISION));
    assert!(problems
        .iter()
        .any(|d| d.code == codes::LOWERING_INVARIANT_FAILED));
}

#[test]
fn runtime_validation_catches_a_malformed_guard() {
    let mut rtg = join_graph();
    rtg.edges.get_mut("done").expect("edge").guard = Some(json!({"op": 1}));
    let problems = check_runtime(&rtg);
    assert_eq!(codes_of(&problems), vec![codes::LOWERING_INVARIANT_FAILED]);
}

#[test]
fn lowering_an_unvalidated_document_reports_instead_of_panicking() {
    let doc = GraphDocument::from_json(
        r#"{"schema_version": 1, "id": "bad id",
            "fields": {"f": {"schema": {"type": 5}, "reducer": "median"}},
            "nodes": {"a": {}},
            "edges": {"e": {"from": ["ghost"], "to": "$nowhere"}},
            "policies": {"max_supersteps": -1}}"#,
    )
    .expect("well-formed");
    let problems = lower(&doc, &graph_hash(&doc), None).expect_err("inconsistent");
    assert!(problems.iter().all(|d| d.is_error()));
    assert!(!problems.is_empty());
}
