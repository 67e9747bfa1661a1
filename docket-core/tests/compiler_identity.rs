//! Effective document and identity (`docs/graphs.md`, “Effective document and content hash”;
//! scenarios 59–62 of `docs/scenarios.md`): defaults are materialized at publication only, so a
//! published graph never changes when an implementation's defaults do.

mod compiler_support;

use compiler_support::{valid_graph, TestContracts};
use docket_core::graph::{
    canonical_bytes, codes, compile_effective, compile_for_publication, graph_hash, verify,
    CompileOptions, GraphDocument, NodeDecl, FINISH, START,
};
use serde_json::json;

const OPTIONS: CompileOptions = CompileOptions {
    max_supersteps: None,
};

#[test]
fn publication_materializes_config_defaults_into_the_effective_document() {
    let compiled =
        compile_for_publication(&valid_graph(), &TestContracts::new(), OPTIONS).expect("compiles");
    let config = &compiled.effective.nodes["greet"].config;
    assert_eq!(config["greeting"], json!("hello"));
    assert_eq!(config["loud"], json!(false));
    assert_eq!(
        compiled.runtime.node("greet").expect("node").config,
        *config
    );
    assert_eq!(compiled.runtime.graph_hash, graph_hash(&compiled.effective));
    assert_ne!(graph_hash(&compiled.effective), graph_hash(&valid_graph()));
}

#[test]
fn a_different_default_gives_a_different_hash() {
    let hello =
        compile_for_publication(&valid_graph(), &TestContracts::new(), OPTIONS).expect("compiles");
    let hi = compile_for_publication(&valid_graph(), &TestContracts::with_greeting("hi"), OPTIONS)
        .expect("compiles");
    assert_ne!(hello.runtime.graph_hash, hi.runtime.graph_hash);
    assert_eq!(hi.effective.nodes["greet"].config["greeting"], json!("hi"));
}

#[test]
fn republishing_under_unchanged_contracts_is_idempotent() {
    let a = compile_for_publication(&valid_graph(), &TestContracts::new(), OPTIONS).expect("a");
    let b = compile_for_publication(&valid_graph(), &TestContracts::new(), OPTIONS).expect("b");
    assert_eq!(canonical_bytes(&a.effective), canonical_bytes(&b.effective));
    assert_eq!(a.runtime, b.runtime);
}

#[test]
fn each_implementation_schema_is_asked_once_per_compile() {
    let doc = GraphDocument::builder("many")
        .node("a", "test.greet")
        .node("b", "test.greet")
        .node("c", "test.counter")
        .node("d", "test.missing")
        .node("e", "test.missing")
        .edge("s", START, "a")
        .build()
        .expect("doc");
    let contracts = TestContracts::new();
    let _ = compile_for_publication(&doc, &contracts, OPTIONS);
    assert_eq!(contracts.calls("test.greet"), 1);
    assert_eq!(contracts.calls("test.counter"), 1);
    assert_eq!(contracts.calls("test.missing"), 1);
    let _ = verify(&doc, &contracts, OPTIONS);
    assert_eq!(contracts.calls("test.greet"), 2);
}

/// The identity test of `docs/graphs.md`, “Effective document and content hash”; scenario 60 of
/// `docs/scenarios.md`: after `test.greet`'s default changes, the published graph compiles to the
/// same hash and config, while republishing the authored graph does not.
#[test]
fn changing_a_default_after_publication_leaves_the_published_graph_unchanged() {
    let authored = valid_graph();
    let published =
        compile_for_publication(&authored, &TestContracts::with_greeting("hello"), OPTIONS)
            .expect("v1 publishes");
    let stored = published.effective.clone();

    let v2 = TestContracts::with_greeting("bonjour");
    let rerun = compile_effective(&stored, &v2, OPTIONS).expect("stored graph compiles");
    assert_eq!(rerun.runtime.graph_hash, published.runtime.graph_hash);
    assert_eq!(rerun.effective, stored);
    assert_eq!(
        rerun.runtime.node("greet").expect("node").config["greeting"],
        json!("hello")
    );
    assert_eq!(rerun.runtime, published.runtime);

    let republished = compile_for_publication(&authored, &v2, OPTIONS).expect("v2 publishes");
    assert_ne!(republished.runtime.graph_hash, published.runtime.graph_hash);
    assert_eq!(
        republished.runtime.node("greet").expect("node").config["greeting"],
        json!("bonjour")
    );
}

#[test]
fn effective_compilation_never_injects_defaults() {
    let authored = valid_graph();
    let compiled = compile_effective(&authored, &TestContracts::new(), OPTIONS).expect("compiles");
    assert!(compiled.effective.nodes["greet"].config.is_empty());
    assert_eq!(compiled.runtime.graph_hash, graph_hash(&authored));
}

#[test]
fn explicit_config_wins_over_changing_defaults() {
    let mut authored = valid_graph();
    authored.nodes.insert(
        "greet".into(),
        NodeDecl::new("test.greet").with_config("greeting", "yo"),
    );
    let first = compile_for_publication(&authored, &TestContracts::with_greeting("hello"), OPTIONS)
        .expect("compiles");
    let second = compile_for_publication(&authored, &TestContracts::with_greeting("hi"), OPTIONS)
        .expect("compiles");
    assert_eq!(first.runtime.graph_hash, second.runtime.graph_hash);
    assert_eq!(
        first.effective.nodes["greet"].config["greeting"],
        json!("yo")
    );
}

#[test]
fn an_explicit_null_config_value_is_not_replaced_by_the_default() {
    let mut authored = valid_graph();
    authored.nodes.insert(
        "greet".into(),
        NodeDecl::new("test.greet").with_config("greeting", json!(null)),
    );
    let compiled = compile_for_publication(&authored, &TestContracts::new(), OPTIONS)
        .expect("null is valid for an optional field");
    assert_eq!(
        compiled.effective.nodes["greet"].config["greeting"],
        json!(null)
    );
}

#[test]
fn invalid_materialized_defaults_fail_publication() {
    let authored = GraphDocument::builder("limits")
        .node("cap", "test.bad_default")
        .edge("s", START, "cap")
        .edge("f", "cap", FINISH)
        .build()
        .expect("doc");
    let error = compile_for_publication(&authored, &TestContracts::new(), OPTIONS)
        .expect_err("the default fails its own schema");
    assert!(error.has_code(codes::INVALID_NODE_CONFIG), "{error}");
    let found = error
        .errors()
        .find(|d| d.code == codes::INVALID_NODE_CONFIG)
        .expect("diagnostic");
    assert_eq!(found.path, "/nodes/cap/config");
    // The unmaterialized document is fine: the failure comes from the inserted default.
    assert!(compile_effective(&authored, &TestContracts::new(), OPTIONS).is_ok());
}

#[test]
fn verify_judges_the_materialized_document_like_publication() {
    let authored = GraphDocument::builder("limits")
        .node("cap", "test.bad_default")
        .edge("s", START, "cap")
        .edge("f", "cap", FINISH)
        .build()
        .expect("doc");
    let diagnostics = verify(&authored, &TestContracts::new(), OPTIONS);
    assert!(diagnostics
        .iter()
        .any(|d| d.code == codes::INVALID_NODE_CONFIG));
}

#[test]
fn any_content_change_such_as_a_label_changes_the_hash() {
    let base = graph_hash(&valid_graph());
    let mut labelled = valid_graph();
    labelled.edges.get_mut("end").expect("edge").label = Some("done".into());
    assert_ne!(graph_hash(&labelled), base);
    let mut tagged = valid_graph();
    tagged.metadata.insert("owner".into(), json!("ops"));
    assert_ne!(graph_hash(&tagged), base);
}

#[test]
fn the_runtime_graph_id_is_graph_id_at_the_hash_prefix() {
    let compiled =
        compile_for_publication(&valid_graph(), &TestContracts::new(), OPTIONS).expect("compiles");
    let hash = compiled.runtime.graph_hash.as_str().to_owned();
    assert_eq!(hash.len(), 64);
    assert!(hash
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(compiled.runtime.id, format!("hello@{}", &hash[..12]));
}

#[test]
fn the_graph_bound_wins_over_the_host_bound_which_applies_otherwise() {
    let host = CompileOptions {
        max_supersteps: Some(50),
    };
    let unbounded =
        compile_for_publication(&valid_graph(), &TestContracts::new(), OPTIONS).expect("compiles");
    assert_eq!(unbounded.runtime.max_supersteps, None);
    let hosted =
        compile_for_publication(&valid_graph(), &TestContracts::new(), host).expect("compiles");
    assert_eq!(hosted.runtime.max_supersteps, Some(50));
    // The host bound is not part of the document, so it does not change the identity.
    assert_eq!(hosted.runtime.graph_hash, unbounded.runtime.graph_hash);
    let mut bounded = valid_graph();
    bounded.policies.insert("max_supersteps".into(), json!(7));
    let own = compile_for_publication(&bounded, &TestContracts::new(), host).expect("compiles");
    assert_eq!(own.runtime.max_supersteps, Some(7));
}
