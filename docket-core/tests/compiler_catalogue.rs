//! One named test per code of the diagnostic catalogue (`docs/graphs.md`, “Diagnostic catalogue”):
//! each builds the smallest input that triggers the code and checks code, severity, path and public
//! id. The last test proves the table covers the whole catalogue.

mod compiler_support;

use std::collections::BTreeSet;

use compiler_support::{diagnose, edited, find, publish, valid_graph};
use docket_core::graph::lower::lower;
use docket_core::graph::runtime_graph::RuntimeOutput;
use docket_core::graph::{
    check_runtime, codes, graph_hash, parse_document, Diagnostic, EdgeDecl, EdgeFrom, FieldDecl,
    InputDecl, NodeDecl, OutputDecl, Severity, FINISH, START,
};
use serde_json::json;

macro_rules! catalogue {
    ($($name:ident: $code:ident at $path:expr $(, id $id:expr)? => $diagnostics:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let diagnostics: Vec<Diagnostic> = $diagnostics;
                let found = find(&diagnostics, codes::$code, &$path, None $(.or(Some($id)))?);
                let severity = if codes::ERRORS.contains(&codes::$code) {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                assert_eq!(found.severity, severity, "{found:#?}");
                assert!(!found.message.is_empty());
                assert!(found.public_id.is_some(), "every diagnostic names an element: {found:#?}");
            }
        )*

        #[test]
        fn every_catalogue_code_has_a_named_case() {
            let covered: BTreeSet<&str> = [$(codes::$code),*].into_iter().collect();
            let catalogue: BTreeSet<&str> =
                codes::ERRORS.iter().chain(codes::WARNINGS).copied().collect();
            assert_eq!(covered, catalogue);
        }
    };
}

fn long_id() -> String {
    "n".repeat(256)
}

catalogue! {
    // --- document ---
    unsupported_schema_version_when_version_is_not_1: UNSUPPORTED_SCHEMA_VERSION at "/schema_version"
        => diagnose(&edited(|d| d.schema_version = 2));
    invalid_public_id_for_graph_id_with_spaces: INVALID_PUBLIC_ID at "/id", id "my graph"
        => diagnose(&edited(|d| d.id = "my graph".into()));
    invalid_public_id_for_node_id_over_255_bytes: INVALID_PUBLIC_ID at format!("/nodes/{}", long_id()), id &long_id()
        => diagnose(&edited(|d| { d.nodes.insert(long_id(), NodeDecl::new("test.noop")); }));
    reserved_id_for_dollar_prefixed_node_id: RESERVED_ID at "/nodes/$begin", id "$begin"
        => diagnose(&edited(|d| { d.nodes.insert("$begin".into(), NodeDecl::new("test.noop")); }));
    invalid_document_when_name_is_not_a_string: INVALID_DOCUMENT at "/name", id "g"
        => parse_document(r#"{"schema_version": 1, "id": "g", "name": 5}"#).expect_err("invalid");
    duplicate_key_when_a_node_id_appears_twice: DUPLICATE_KEY at "/nodes/a", id "a"
        => parse_document(
            r#"{"schema_version": 1, "id": "g", "nodes": {"a": {"implementation": "x"}, "a": {"implementation": "y"}}}"#,
        ).expect_err("duplicate");
    duplicate_state_id_when_input_and_field_share_an_id: DUPLICATE_STATE_ID at "/fields/greeting", id "greeting"
        => diagnose(&edited(|d| { d.inputs.insert("greeting".into(), InputDecl::new(json!({"type": "string"}))); }));
    invalid_policy_for_zero_graph_max_supersteps: INVALID_POLICY at "/policies/max_supersteps"
        => diagnose(&edited(|d| { d.policies.insert("max_supersteps".into(), json!(0)); }));
    invalid_policy_for_each_bad_node_policy_key: INVALID_POLICY at "/nodes/greet/policies/retry/max_attempts", id "greet"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.greet").with_policy("retry", json!({"max_attempts": 0})));
        }));
    non_durable_graph_value_for_dollar_key_in_config: NON_DURABLE_GRAPH_VALUE at "/nodes/greet/config/$ref", id "greet"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.noop").with_config("$ref", 1));
        }));

    // --- fields ---
    invalid_field_when_an_input_record_has_a_reducer: INVALID_FIELD at "/inputs/x", id "x"
        => parse_document(r#"{"schema_version": 1, "id": "g",
            "inputs": {"x": {"schema": {"type": "integer"}, "reducer": "sum"}}}"#).expect_err("invalid");
    missing_field_schema_when_a_field_has_no_schema: MISSING_FIELD_SCHEMA at "/fields/greeting", id "greeting"
        => diagnose(&edited(|d| { d.fields.get_mut("greeting").expect("field").schema = None; }));
    invalid_schema_for_an_unknown_schema_type: INVALID_SCHEMA at "/fields/greeting/schema", id "greeting"
        => diagnose(&edited(|d| { d.fields.insert("greeting".into(), FieldDecl::new(json!({"type": "text"}))); }));
    invalid_reducer_for_an_unknown_reducer_type: INVALID_REDUCER at "/fields/greeting/reducer", id "greeting"
        => diagnose(&edited(|d| {
            d.fields.insert("greeting".into(), FieldDecl::new(json!({"type": "string"})).with_reducer("median"));
        }));
    reducer_schema_mismatch_for_append_on_a_string: REDUCER_SCHEMA_MISMATCH at "/fields/greeting/reducer", id "greeting"
        => diagnose(&edited(|d| {
            d.fields.insert("greeting".into(), FieldDecl::new(json!({"type": "string"})).with_reducer("append"));
        }));
    invalid_field_default_when_default_fails_schema: INVALID_FIELD_DEFAULT at "/fields/greeting/default", id "greeting"
        => diagnose(&edited(|d| {
            d.fields.insert("greeting".into(), FieldDecl::new(json!({"type": "string"})).with_default(5));
        }));

    // --- outputs ---
    invalid_record_for_an_unknown_node_key: INVALID_RECORD at "/nodes/a", id "a"
        => parse_document(r#"{"schema_version": 1, "id": "g",
            "nodes": {"a": {"implementation": "test.noop", "colour": "red"}}}"#).expect_err("invalid");
    unknown_output_source_for_an_undeclared_source: UNKNOWN_OUTPUT_SOURCE at "/outputs/total/source", id "total"
        => diagnose(&edited(|d| { d.outputs.insert("total".into(), OutputDecl::of("ghost")); }));
    incompatible_output_schema_for_a_different_type: INCOMPATIBLE_OUTPUT_SCHEMA at "/outputs/greeting/schema", id "greeting"
        => diagnose(&edited(|d| {
            d.outputs.insert("greeting".into(), OutputDecl::new().with_schema(json!({"type": "integer"})));
        }));

    // --- nodes ---
    missing_node_implementation_when_none_is_named: MISSING_NODE_IMPLEMENTATION at "/nodes/greet", id "greet"
        => diagnose(&edited(|d| { d.nodes.get_mut("greet").expect("node").implementation = None; }));
    unsupported_node_implementation_for_a_malformed_name: UNSUPPORTED_NODE_IMPLEMENTATION at "/nodes/greet/implementation", id "greet"
        => diagnose(&edited(|d| { d.nodes.insert("greet".into(), NodeDecl::new("not a name!")); }));
    node_module_not_loaded_for_an_unregistered_name: NODE_MODULE_NOT_LOADED at "/nodes/greet/implementation", id "greet"
        => diagnose(&edited(|d| { d.nodes.insert("greet".into(), NodeDecl::new("test.missing")); }));
    invalid_node_config_schema_for_a_malformed_contract: INVALID_NODE_CONFIG_SCHEMA at "/nodes/greet/implementation", id "greet"
        => diagnose(&edited(|d| { d.nodes.insert("greet".into(), NodeDecl::new("test.broken")); }));
    invalid_node_config_when_config_fails_schema: INVALID_NODE_CONFIG at "/nodes/greet/config", id "greet"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.greet").with_config("loud", "yes"));
        }));

    // --- edges ---
    unknown_edge_source_for_an_undeclared_node: UNKNOWN_EDGE_SOURCE at "/edges/extra/from", id "extra"
        => diagnose(&edited(|d| { d.edges.insert("extra".into(), EdgeDecl::new("ghost", "greet")); }));
    unknown_edge_target_for_an_undeclared_node: UNKNOWN_EDGE_TARGET at "/edges/end/to", id "end"
        => diagnose(&edited(|d| { d.edges.insert("end".into(), EdgeDecl::new("greet", "ghost")); }));
    invalid_start_endpoint_when_start_is_a_target: INVALID_START_ENDPOINT at "/edges/back/to", id "back"
        => diagnose(&edited(|d| { d.edges.insert("back".into(), EdgeDecl::new("greet", START)); }));
    invalid_finish_endpoint_when_finish_is_a_source: INVALID_FINISH_ENDPOINT at "/edges/after/from", id "after"
        => diagnose(&edited(|d| { d.edges.insert("after".into(), EdgeDecl::new(FINISH, "greet")); }));
    empty_edge_sources_for_an_empty_source_list: EMPTY_EDGE_SOURCES at "/edges/join/from", id "join"
        => diagnose(&edited(|d| { d.edges.insert("join".into(), EdgeDecl::new(EdgeFrom::Many(vec![]), FINISH)); }));
    duplicate_edge_source_for_a_repeated_source: DUPLICATE_EDGE_SOURCE at "/edges/join/from/1", id "join"
        => diagnose(&edited(|d| { d.edges.insert("join".into(), EdgeDecl::new(["greet", "greet"], FINISH)); }));
    invalid_guard_for_an_unknown_operator: INVALID_GUARD at "/edges/end/guard", id "end"
        => diagnose(&edited(|d| {
            d.edges.insert("end".into(), EdgeDecl::new("greet", FINISH).with_guard(json!({"op": "between"})));
        }));
    invalid_guard_path_for_a_negative_index: INVALID_GUARD_PATH at "/edges/end/guard", id "end"
        => diagnose(&edited(|d| {
            d.edges.insert("end".into(), EdgeDecl::new("greet", FINISH)
                .with_guard(json!({"op": "exists", "ref": {"$path": ["greeting", -1]}})));
        }));
    unknown_guard_field_for_an_undeclared_field: UNKNOWN_GUARD_FIELD at "/edges/end/guard", id "end"
        => diagnose(&edited(|d| {
            d.edges.insert("end".into(), EdgeDecl::new("greet", FINISH)
                .with_guard(json!({"op": "changed", "field": "ghost"})));
        }));

    // --- branches ---
    unknown_branch_edge_for_an_undeclared_edge: UNKNOWN_BRANCH_EDGE at "/nodes/greet/branches/route/0", id "greet"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.greet").with_branch("route", ["ghost"]));
        }));
    branch_edge_source_mismatch_for_an_edge_of_another_node: BRANCH_EDGE_SOURCE_MISMATCH at "/nodes/greet/branches/route/0", id "greet"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.greet").with_branch("route", ["begin"]));
        }));
    duplicate_branch_edge_across_groups: DUPLICATE_BRANCH_EDGE at "/nodes/greet/branches/b/0", id "greet"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.greet")
                .with_branch("a", ["end"]).with_branch("b", ["end"]));
        }));

    // --- topology ---
    no_entrypoint_when_no_edge_leaves_start: NO_ENTRYPOINT at "/edges", id "hello"
        => diagnose(&edited(|d| { d.edges.remove("begin"); }));
    unreachable_node_for_a_node_no_edge_activates: UNREACHABLE_NODE at "/nodes/island", id "island"
        => diagnose(&edited(|d| {
            d.nodes.insert("island".into(), NodeDecl::new("test.noop"));
            d.edges.insert("island_out".into(), EdgeDecl::new("island", FINISH));
        }));

    // --- lowering and runtime validation ---
    runtime_id_collision_when_two_outputs_share_a_runtime_id: RUNTIME_ID_COLLISION at "/outputs/greeting"
        => {
            let mut rtg = publish(&valid_graph()).expect("compiles").runtime;
            let mut copy: RuntimeOutput = rtg.outputs["greeting"].clone();
            copy.id = "copy".into();
            rtg.outputs.insert("copy".into(), copy);
            check_runtime(&rtg)
        };
    missing_runtime_channel_when_lowering_an_output_of_nothing: MISSING_RUNTIME_CHANNEL at "/outputs/total/source"
        => {
            let doc = edited(|d| { d.outputs.insert("total".into(), OutputDecl::of("ghost")); });
            lower(&doc, &graph_hash(&doc), None).expect_err("lowering fails")
        };
    lowering_invariant_failed_when_lowering_a_node_without_implementation: LOWERING_INVARIANT_FAILED at "/nodes/greet/implementation"
        => {
            let doc = edited(|d| { d.nodes.get_mut("greet").expect("node").implementation = None; });
            lower(&doc, &graph_hash(&doc), None).expect_err("lowering fails")
        };

    // --- warnings ---
    ambiguous_list_write_for_append_over_a_list_of_lists: AMBIGUOUS_LIST_WRITE at "/fields/batches/reducer", id "batches"
        => diagnose(&edited(|d| {
            d.fields.insert("batches".into(), FieldDecl::new(json!({"type": "list", "item": {"type": "list"}}))
                .with_reducer("append"));
        }));
    unguarded_branch_edge_for_a_branch_without_guard: UNGUARDED_BRANCH_EDGE at "/nodes/greet/branches/route/0", id "end"
        => diagnose(&edited(|d| {
            d.nodes.insert("greet".into(), NodeDecl::new("test.greet").with_branch("route", ["end"]));
        }));
    unbounded_cycle_for_a_self_loop_without_max_supersteps: UNBOUNDED_CYCLE at "/nodes/greet", id "greet"
        => diagnose(&edited(|d| { d.edges.insert("again".into(), EdgeDecl::new("greet", "greet")); }));
    unguarded_cycle_for_a_bounded_cycle_without_guards: UNGUARDED_CYCLE at "/nodes/greet", id "greet"
        => diagnose(&edited(|d| {
            d.edges.insert("again".into(), EdgeDecl::new("greet", "greet"));
            d.policies.insert("max_supersteps".into(), json!(5));
        }));
    no_terminal_edge_when_nothing_reaches_finish: NO_TERMINAL_EDGE at "/edges", id "hello"
        => diagnose(&edited(|d| { d.edges.remove("end"); }));
    dead_end_node_for_a_reachable_node_that_cannot_finish: DEAD_END_NODE at "/nodes/side", id "side"
        => diagnose(&edited(|d| {
            d.nodes.insert("side".into(), NodeDecl::new("test.noop"));
            d.edges.insert("to_side".into(), EdgeDecl::new("greet", "side"));
        }));
    orphaned_field_for_a_field_nothing_mentions: ORPHANED_FIELD at "/fields/unused", id "unused"
        => diagnose(&edited(|d| { d.fields.insert("unused".into(), FieldDecl::new(json!({"type": "integer"}))); }));
}
