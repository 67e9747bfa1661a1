//! Topology, cycle and orphan passes: reachability through barriers, cascades that must not
//! happen, cycle bounds, and ids in paths.

mod compiler_support;

use compiler_support::{codes as codes_of, diagnose, edited, find, publish, TestContracts};
use docket_core::graph::{
    codes, compile_for_publication, verify, CompileOptions, EdgeDecl, FieldDecl, GraphDocument,
    NodeDecl, OutputDecl, FINISH, START,
};
use serde_json::json;

fn has(diagnostics: &[docket_core::graph::Diagnostic], code: &str) -> bool {
    diagnostics.iter().any(|d| d.code == code)
}

/// `$start → a`, `$start → b`, `[a, b] → c`, `c → $finish`.
fn barrier_graph() -> GraphDocument {
    GraphDocument::builder("join")
        .node("a", "test.noop")
        .node("b", "test.noop")
        .node("c", "test.noop")
        .edge("to_a", START, "a")
        .edge("to_b", START, "b")
        .edge("join", ["a", "b"], "c")
        .edge("done", "c", FINISH)
        .build()
        .expect("doc")
}

#[test]
fn a_barrier_target_is_reachable_when_all_its_sources_are() {
    assert_eq!(diagnose(&barrier_graph()), vec![]);
}

#[test]
fn a_barrier_target_is_unreachable_when_one_source_is() {
    let mut doc = barrier_graph();
    doc.edges.remove("to_b");
    doc.edges.insert("b_from_c".into(), EdgeDecl::new("c", "b"));
    let diagnostics = diagnose(&doc);
    find(&diagnostics, codes::UNREACHABLE_NODE, "/nodes/b", Some("b"));
    find(&diagnostics, codes::UNREACHABLE_NODE, "/nodes/c", Some("c"));
    assert!(!diagnostics.iter().any(|d| d.path == "/nodes/a"));
}

#[test]
fn without_an_entrypoint_nodes_are_not_each_reported_unreachable() {
    let diagnostics = diagnose(&edited(|d| {
        d.edges.remove("begin");
    }));
    assert!(has(&diagnostics, codes::NO_ENTRYPOINT));
    assert!(
        !has(&diagnostics, codes::UNREACHABLE_NODE),
        "{diagnostics:?}"
    );
}

#[test]
fn edges_with_unknown_endpoints_do_not_cascade_into_topology_findings() {
    let diagnostics = diagnose(&edited(|d| {
        d.edges
            .insert("end".into(), EdgeDecl::new("greet", "ghost"));
        d.edges
            .insert("other".into(), EdgeDecl::new("greet", FINISH));
    }));
    assert_eq!(codes_of(&diagnostics), vec![codes::UNKNOWN_EDGE_TARGET]);
}

#[test]
fn without_a_terminal_edge_nodes_are_not_each_reported_as_dead_ends() {
    let diagnostics = diagnose(&edited(|d| {
        d.edges.remove("end");
    }));
    assert_eq!(codes_of(&diagnostics), vec![codes::NO_TERMINAL_EDGE]);
}

#[test]
fn a_node_before_a_barrier_that_finishes_is_not_a_dead_end() {
    let mut doc = barrier_graph();
    doc.edges.remove("done");
    doc.edges
        .insert("a_done".into(), EdgeDecl::new("a", FINISH));
    let diagnostics = diagnose(&doc);
    find(&diagnostics, codes::DEAD_END_NODE, "/nodes/b", Some("b"));
    find(&diagnostics, codes::DEAD_END_NODE, "/nodes/c", Some("c"));
    assert!(!diagnostics.iter().any(|d| d.path == "/nodes/a"));
}

fn cycle_graph(guarded: bool) -> GraphDocument {
    let back = EdgeDecl::new("check", "work");
    let back = if guarded {
        back.with_guard(json!({"op": "equals", "ref": "greeting", "value": "again"}))
    } else {
        back
    };
    GraphDocument::builder("loop")
        .field("greeting", FieldDecl::new(json!({"type": "string"})))
        .output("greeting", OutputDecl::new())
        .node("work", "test.noop")
        .node("check", "test.noop")
        .edge("begin", START, "work")
        .edge("to_check", "work", "check")
        .edge_decl("back", back)
        .edge("done", "check", FINISH)
        .build()
        .expect("doc")
}

#[test]
fn a_two_node_cycle_is_one_unbounded_cycle_warning() {
    let diagnostics = diagnose(&cycle_graph(true));
    assert_eq!(codes_of(&diagnostics), vec![codes::UNBOUNDED_CYCLE]);
    find(
        &diagnostics,
        codes::UNBOUNDED_CYCLE,
        "/nodes/check",
        Some("check"),
    );
}

#[test]
fn a_bounded_guarded_cycle_has_no_warning() {
    let mut doc = cycle_graph(true);
    doc.policies.insert("max_supersteps".into(), json!(20));
    assert_eq!(diagnose(&doc), vec![]);
}

#[test]
fn the_host_bound_makes_a_cycle_bounded() {
    let diagnostics = verify(
        &cycle_graph(false),
        &TestContracts::new(),
        CompileOptions {
            max_supersteps: Some(8),
        },
    );
    assert_eq!(codes_of(&diagnostics), vec![codes::UNGUARDED_CYCLE]);
}

#[test]
fn fields_mentioned_by_config_guards_or_outputs_are_not_orphaned() {
    let doc = edited(|d| {
        for id in ["in_config", "in_guard", "projected"] {
            d.fields
                .insert(id.into(), FieldDecl::new(json!({"type": "integer"})));
        }
        d.nodes.insert(
            "greet".into(),
            NodeDecl::new("test.set")
                .with_config("field", "greeting")
                .with_config("targets", json!([{"name": "in_config"}])),
        );
        d.edges.insert(
            "end".into(),
            EdgeDecl::new("greet", FINISH)
                .with_guard(json!({"op": "version_at_least", "field": "in_guard", "version": 1})),
        );
        d.outputs
            .insert("total".into(), OutputDecl::of("projected"));
    });
    assert_eq!(diagnose(&doc), vec![]);
}

#[test]
fn a_reserved_graph_id_is_reported() {
    let diagnostics = diagnose(&edited(|d| d.id = "$graph".into()));
    find(&diagnostics, codes::RESERVED_ID, "/id", Some("$graph"));
}

#[test]
fn ids_with_slashes_are_escaped_in_paths() {
    let diagnostics = diagnose(&edited(|d| {
        d.fields
            .insert("a/b".into(), FieldDecl::new(json!({"type": "integer"})));
    }));
    find(
        &diagnostics,
        codes::INVALID_PUBLIC_ID,
        "/fields/a~1b",
        Some("a/b"),
    );
}

#[test]
fn compile_errors_render_every_error() {
    let doc = edited(|d| {
        d.edges.remove("begin");
        d.nodes
            .insert("greet".into(), NodeDecl::new("test.missing"));
    });
    let error = compile_for_publication(&doc, &TestContracts::new(), CompileOptions::default())
        .expect_err("invalid");
    let text = error.to_string();
    assert!(
        text.contains("no_entrypoint") && text.contains("node_module_not_loaded"),
        "{text}"
    );
}

#[test]
fn dollar_prefixed_branch_group_names_are_reserved() {
    let diagnostics = diagnose(&edited(|d| {
        d.nodes.insert(
            "greet".into(),
            NodeDecl::new("test.greet").with_branch("$route", Vec::<String>::new()),
        );
    }));
    find(
        &diagnostics,
        codes::RESERVED_ID,
        "/nodes/greet/branches/$route",
        Some("greet"),
    );
}

#[test]
fn a_ten_thousand_node_cycle_is_analysed_without_overflowing_the_stack() {
    const N: usize = 10_000;
    let mut builder = GraphDocument::builder("long").edge("begin", START, "n0");
    for i in 0..N {
        builder = builder.node(format!("n{i}"), "test.noop");
        if i + 1 < N {
            builder = builder.edge(format!("e{i}"), format!("n{i}"), format!("n{}", i + 1));
        }
    }
    let doc = builder
        .edge("back", format!("n{}", N - 1), "n0")
        .edge("end", format!("n{}", N - 1), FINISH)
        .build()
        .expect("doc");
    let compiled = publish(&doc).expect("a long cycle compiles");
    assert_eq!(codes_of(&compiled.warnings), vec![codes::UNBOUNDED_CYCLE]);
    assert_eq!(compiled.runtime.nodes.len(), N);
}
