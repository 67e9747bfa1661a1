//! Document, field, output, node and edge passes beyond "the code exists": the rules' edges
//! and what does *not* produce a diagnostic.

mod compiler_support;

use compiler_support::{
    codes as codes_of, diagnose, edited, find, publish, valid_graph, TestContracts,
};
use docket_core::graph::{
    codes, verify, CompileOptions, Diagnostic, EdgeDecl, FieldDecl, GraphDocument, InputDecl,
    NodeDecl, OutputDecl, Severity, FINISH, START,
};
use serde_json::json;

fn with_field(schema: serde_json::Value, reducer: &str) -> Vec<Diagnostic> {
    diagnose(&edited(|d| {
        d.fields.insert(
            "greeting".into(),
            FieldDecl::new(schema).with_reducer(reducer),
        );
    }))
}

fn has(diagnostics: &[Diagnostic], code: &str) -> bool {
    diagnostics.iter().any(|d| d.code == code)
}

#[test]
fn the_fixture_graph_compiles_without_any_diagnostic() {
    assert_eq!(diagnose(&valid_graph()), vec![]);
    assert!(publish(&valid_graph()).is_ok());
}

#[test]
fn an_empty_graph_is_valid() {
    let doc = GraphDocument::builder("empty").build().expect("doc");
    let compiled = publish(&doc).expect("an empty graph compiles");
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    assert!(compiled.runtime.nodes.is_empty() && compiled.runtime.channels.is_empty());
}

#[test]
fn a_start_to_finish_edge_alone_compiles() {
    let doc = GraphDocument::builder("direct")
        .edge("through", START, FINISH)
        .build()
        .expect("doc");
    assert_eq!(diagnose(&doc), vec![]);
}

#[test]
fn warnings_do_not_block_compilation() {
    let doc = edited(|d| {
        d.fields
            .insert("unused".into(), FieldDecl::new(json!({"type": "integer"})));
    });
    let compiled = publish(&doc).expect("warnings only");
    assert_eq!(codes_of(&compiled.warnings), vec![codes::ORPHANED_FIELD]);
    assert_eq!(compiled.warnings[0].severity, Severity::Warning);
}

#[test]
fn every_pass_runs_and_every_error_is_reported_at_once() {
    let doc = edited(|d| {
        d.schema_version = 3;
        d.nodes
            .insert("greet".into(), NodeDecl::new("test.missing"));
        d.edges
            .insert("end".into(), EdgeDecl::new("greet", "ghost"));
        d.outputs.insert("total".into(), OutputDecl::of("nothing"));
    });
    let error = publish(&doc).expect_err("invalid");
    for code in [
        codes::UNSUPPORTED_SCHEMA_VERSION,
        codes::NODE_MODULE_NOT_LOADED,
        codes::UNKNOWN_EDGE_TARGET,
        codes::UNKNOWN_OUTPUT_SOURCE,
    ] {
        assert!(error.has_code(code), "{code} missing from {error}");
    }
}

#[test]
fn diagnostics_come_sorted_errors_first_and_identically_on_every_run() {
    let doc = edited(|d| {
        d.fields
            .insert("unused".into(), FieldDecl::new(json!({"type": "integer"})));
        d.edges.insert("zz".into(), EdgeDecl::new("ghost", FINISH));
        d.nodes.insert("$x".into(), NodeDecl::new("test.noop"));
    });
    let first = diagnose(&doc);
    assert_eq!(first, diagnose(&doc));
    let severities: Vec<Severity> = first.iter().map(|d| d.severity).collect();
    let mut sorted = severities.clone();
    sorted.sort();
    assert_eq!(severities, sorted);
    let error_paths: Vec<&str> = first
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.path.as_str())
        .collect();
    let mut sorted_paths = error_paths.clone();
    sorted_paths.sort_unstable();
    assert_eq!(error_paths, sorted_paths);
}

#[test]
fn reducers_accept_the_schema_types_they_can_fold() {
    for (schema, reducer) in [
        (json!({"type": "list"}), "append"),
        (json!({"type": "list", "item": {"type": "string"}}), "union"),
        (json!({"type": "integer"}), "sum"),
        (json!({"type": "float"}), "sum"),
        (json!({"type": "map"}), "merge"),
        (json!({"type": "object", "open": true}), "merge"),
        (json!({"type": "boolean"}), "first_value"),
    ] {
        let diagnostics = with_field(schema.clone(), reducer);
        assert!(
            !has(&diagnostics, codes::REDUCER_SCHEMA_MISMATCH),
            "{reducer} over {schema}: {diagnostics:?}"
        );
    }
}

#[test]
fn reducers_reject_schema_types_they_cannot_fold() {
    for (schema, reducer) in [
        (json!({"type": "map"}), "append"),
        (json!({"type": "string"}), "union"),
        (json!({"type": "string"}), "sum"),
        (json!({"type": "list"}), "merge"),
    ] {
        let diagnostics = with_field(schema.clone(), reducer);
        find(
            &diagnostics,
            codes::REDUCER_SCHEMA_MISMATCH,
            "/fields/greeting/reducer",
            Some("greeting"),
        );
    }
}

#[test]
fn bad_reducer_options_are_invalid_reducers() {
    for reducer in [
        json!({"type": "append", "max_length": 0}),
        json!({"type": "union", "by": []}),
        json!({"type": "merge", "deep": "yes"}),
        json!(7),
    ] {
        let diagnostics = diagnose(&edited(|d| {
            d.fields.insert(
                "greeting".into(),
                FieldDecl::new(json!({"type": "list"})).with_reducer(reducer.clone()),
            );
        }));
        find(
            &diagnostics,
            codes::INVALID_REDUCER,
            "/fields/greeting/reducer",
            None,
        );
    }
}

#[test]
fn a_list_of_scalars_is_not_an_ambiguous_list_write() {
    let diagnostics = with_field(
        json!({"type": "list", "item": {"type": "integer"}}),
        "append",
    );
    assert!(
        !has(&diagnostics, codes::AMBIGUOUS_LIST_WRITE),
        "{diagnostics:?}"
    );
}

#[test]
fn invalid_input_defaults_are_reported_and_null_defaults_are_not_judged() {
    let diagnostics = diagnose(&edited(|d| {
        d.inputs.insert(
            "name".into(),
            InputDecl::new(json!({"type": "string", "min_length": 3})).with_default("ab"),
        );
    }));
    find(
        &diagnostics,
        codes::INVALID_FIELD_DEFAULT,
        "/inputs/name/default",
        Some("name"),
    );
    let null_default = diagnose(&edited(|d| {
        d.fields.insert(
            "greeting".into(),
            FieldDecl::new(json!({"type": "string", "required": true})).with_default(json!(null)),
        );
    }));
    assert_eq!(null_default, vec![]);
}

#[test]
fn a_null_default_lowers_to_the_reducer_zero() {
    let doc = edited(|d| {
        d.fields.insert(
            "greeting".into(),
            FieldDecl::new(json!({"type": "list"}))
                .with_reducer("append")
                .with_default(json!(null)),
        );
    });
    let rtg = publish(&doc).expect("compiles").runtime;
    let Some(docket_core::graph::Channel::Value { default, .. }) = rtg.state_field("greeting")
    else {
        panic!("state channel expected");
    };
    assert_eq!(default, &Some(json!([])));
}

#[test]
fn output_schema_compatibility_follows_the_catalogue_rules() {
    let check = |source: serde_json::Value, output: serde_json::Value| {
        let doc = edited(|d| {
            d.fields.insert("greeting".into(), FieldDecl::new(source));
            d.outputs
                .insert("greeting".into(), OutputDecl::new().with_schema(output));
        });
        has(&diagnose(&doc), codes::INCOMPATIBLE_OUTPUT_SCHEMA)
    };
    let e = |values: serde_json::Value| json!({"type": "enum", "values": values});
    assert!(!check(e(json!(["a"])), e(json!(["a", "b"]))));
    assert!(check(e(json!(["a", "c"])), e(json!(["a", "b"]))));
    let list = |item: Option<serde_json::Value>| match item {
        Some(item) => json!({"type": "list", "item": item}),
        None => json!({"type": "list"}),
    };
    assert!(!check(list(Some(json!({"type": "string"}))), list(None)));
    assert!(check(list(None), list(Some(json!({"type": "string"})))));
    assert!(check(
        list(Some(e(json!([1, 2])))),
        list(Some(e(json!([1]))))
    ));
    assert!(!check(
        json!({"type": "string"}),
        json!({"type": "string", "max_length": 3})
    ));
}

#[test]
fn invalid_output_schemas_are_invalid_schema_at_the_output() {
    let diagnostics = diagnose(&edited(|d| {
        d.outputs.insert(
            "greeting".into(),
            OutputDecl::new().with_schema(json!({"type": 1})),
        );
    }));
    find(
        &diagnostics,
        codes::INVALID_SCHEMA,
        "/outputs/greeting/schema",
        Some("greeting"),
    );
}

#[test]
fn an_output_defaults_its_source_to_its_own_id() {
    let diagnostics = diagnose(&edited(|d| {
        d.outputs.insert("missing".into(), OutputDecl::new());
    }));
    find(
        &diagnostics,
        codes::UNKNOWN_OUTPUT_SOURCE,
        "/outputs/missing",
        Some("missing"),
    );
    let input_output = edited(|d| {
        d.outputs.insert("name".into(), OutputDecl::new());
    });
    assert_eq!(diagnose(&input_output), vec![]);
}

#[test]
fn every_malformed_node_policy_key_is_its_own_diagnostic() {
    let diagnostics = diagnose(&edited(|d| {
        d.nodes.insert(
            "greet".into(),
            NodeDecl::new("test.greet")
                .with_policy("timeout_ms", 0)
                .with_policy("on_error", "skip")
                .with_policy("retry", json!({"jitter": 1, "backoff_ms": -5}))
                .with_policy("owner", "ops"),
        );
    }));
    let policy_paths: Vec<&str> = diagnostics
        .iter()
        .filter(|d| d.code == codes::INVALID_POLICY)
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        policy_paths,
        vec![
            "/nodes/greet/policies/on_error",
            "/nodes/greet/policies/retry/backoff_ms",
            "/nodes/greet/policies/retry/jitter",
            "/nodes/greet/policies/timeout_ms",
        ]
    );
}

#[test]
fn a_zero_host_max_supersteps_is_an_invalid_policy() {
    let diagnostics = verify(
        &valid_graph(),
        &TestContracts::new(),
        CompileOptions {
            max_supersteps: Some(0),
        },
    );
    find(
        &diagnostics,
        codes::INVALID_POLICY,
        "/policies/max_supersteps",
        None,
    );
}

#[test]
fn non_durable_values_are_found_in_metadata_policies_and_defaults() {
    let mut deep = json!(1);
    for _ in 0..70 {
        deep = json!([deep]);
    }
    let diagnostics = diagnose(&edited(|d| {
        d.metadata.insert("deep".into(), deep.clone());
        d.policies.insert("extra".into(), json!({"$secret": true}));
        d.fields.insert(
            "greeting".into(),
            FieldDecl::new(json!({"type": "map"})).with_default(json!({"a": {"$b": 1}})),
        );
        d.edges
            .get_mut("end")
            .expect("edge")
            .metadata
            .insert("$note".into(), json!("x"));
    }));
    let paths: Vec<&str> = diagnostics
        .iter()
        .filter(|d| d.code == codes::NON_DURABLE_GRAPH_VALUE)
        .map(|d| d.path.as_str())
        .collect();
    assert!(paths.contains(&"/policies/extra/$secret"), "{paths:?}");
    assert!(
        paths.contains(&"/fields/greeting/default/a/$b"),
        "{paths:?}"
    );
    assert!(paths.contains(&"/edges/end/metadata/$note"), "{paths:?}");
    assert!(
        paths.iter().any(|p| p.starts_with("/metadata/deep")),
        "{paths:?}"
    );
}

#[test]
fn guards_may_use_the_reserved_path_key() {
    let doc = edited(|d| {
        d.edges.insert(
            "end".into(),
            EdgeDecl::new("greet", FINISH)
                .with_guard(json!({"op": "exists", "ref": {"$path": ["name", "first"]}})),
        );
    });
    assert_eq!(diagnose(&doc), vec![]);
}

#[test]
fn well_formed_implementation_names_are_accepted() {
    use docket_core::graph::validate::implementation_name_ok;
    for ok in [
        "std.set",
        "billing::charge",
        "acme/approve-v2",
        "_private",
        "x",
    ] {
        assert!(implementation_name_ok(ok), "{ok}");
    }
    let too_long = "a".repeat(256);
    for bad in ["", " std.set", "std set", ".hidden", "é", too_long.as_str()] {
        assert!(!implementation_name_ok(bad), "{bad}");
    }
}

#[test]
fn an_empty_implementation_name_is_unsupported_and_never_looked_up() {
    let contracts = TestContracts::new();
    let doc = edited(|d| {
        d.nodes.insert("greet".into(), NodeDecl::new(""));
    });
    let diagnostics = verify(&doc, &contracts, CompileOptions::default());
    find(
        &diagnostics,
        codes::UNSUPPORTED_NODE_IMPLEMENTATION,
        "/nodes/greet/implementation",
        Some("greet"),
    );
    assert_eq!(contracts.calls(""), 0);
}

#[test]
fn a_config_schema_that_is_not_a_map_schema_is_invalid() {
    let diagnostics = diagnose(&edited(|d| {
        d.nodes.insert("greet".into(), NodeDecl::new("test.scalar"));
    }));
    find(
        &diagnostics,
        codes::INVALID_NODE_CONFIG_SCHEMA,
        "/nodes/greet/implementation",
        Some("greet"),
    );
    assert!(!has(&diagnostics, codes::INVALID_NODE_CONFIG));
}

#[test]
fn start_and_finish_inside_source_lists_are_invalid_endpoints() {
    let diagnostics = diagnose(&edited(|d| {
        d.edges
            .insert("a".into(), EdgeDecl::new([START, "greet"], FINISH));
        d.edges
            .insert("b".into(), EdgeDecl::new(["greet", FINISH], FINISH));
    }));
    find(
        &diagnostics,
        codes::INVALID_START_ENDPOINT,
        "/edges/a/from/0",
        Some("a"),
    );
    find(
        &diagnostics,
        codes::INVALID_FINISH_ENDPOINT,
        "/edges/b/from/1",
        Some("b"),
    );
}

#[test]
fn guards_over_inputs_are_known_fields() {
    let doc = edited(|d| {
        d.edges.insert(
            "end".into(),
            EdgeDecl::new("greet", FINISH).with_guard(json!({"op": "any", "of": [
                {"op": "changed", "field": "name"},
                {"op": "equals", "ref": "greeting", "value": {"$path": ["name"]}}
            ]})),
        );
    });
    assert_eq!(diagnose(&doc), vec![]);
}
