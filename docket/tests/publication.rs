//! Publishing through the facade (scenarios 59 and 62 of `docs/scenarios.md`): what reaches the
//! store is the effective document, node config defaults materialized, and a graph whose
//! materialized defaults fail their own schema reaches the store not at all.

mod support;

use serde_json::{json, Value};

use docket::core::graph::codes;
use docket::core::model::{GraphId, GraphVersionQuery, OwnerScope, ValueMap};
use docket::core::node::{FnNode, NodeOutcome, NodeRegistry};
use docket::core::store::GraphStore;
use docket::engine::WorkerConfig;
use docket::{DocketError, TestingMode};

use support::Fx;

/// One `std.increment` node configured with its field only; `by` defaults to 1.
fn counter() -> Value {
    json!({
        "schema_version": 1, "id": "counter",
        "fields": {"n": {"schema": {"type": "integer"}, "default": 0}},
        "outputs": {"n": {}},
        "nodes": {"inc": {"implementation": "std.increment", "config": {"field": "n"}}},
        "edges": {
            "begin": {"from": "$start", "to": "inc"},
            "end": {"from": "inc", "to": "$finish"}
        }
    })
}

#[tokio::test]
async fn the_stored_document_carries_the_materialized_config_defaults() {
    let fx = Fx::manual();
    let graph_ref = fx
        .docket
        .save_graph_json(&counter().to_string())
        .await
        .expect("publish");
    let stored = fx.docket.fetch_graph(&graph_ref).await.expect("stored");
    let config = &stored.nodes.get("inc").expect("the node is stored").config;
    assert_eq!(
        config.get("field"),
        Some(&json!("n")),
        "authored value kept"
    );
    let by = config.get("by").and_then(Value::as_f64);
    assert_eq!(by, Some(1.0), "the schema default is in the stored config");

    // Authoring the default explicitly is the same content, hence the same address.
    let mut explicit = counter();
    explicit["nodes"]["inc"]["config"]["by"] = config["by"].clone();
    let again = fx
        .docket
        .save_graph_json(&explicit.to_string())
        .await
        .expect("publish again");
    assert_eq!(again, graph_ref);
}

#[tokio::test]
async fn a_default_that_fails_its_own_schema_stores_nothing() {
    let nodes = NodeRegistry::new()
        .with(
            "test.bad_default",
            FnNode::new(|_, _, _| NodeOutcome::Update(ValueMap::new())).with_config_schema(
                json!({"type": "object", "fields": {
                    "limit": {"type": "integer", "default": "ten"}
                }}),
            ),
        )
        .expect("registered");
    let fx = Fx::with(TestingMode::Manual, nodes, WorkerConfig::default());
    let doc = json!({
        "schema_version": 1, "id": "limits",
        "nodes": {"cap": {"implementation": "test.bad_default"}},
        "edges": {
            "s": {"from": "$start", "to": "cap"},
            "f": {"from": "cap", "to": "$finish"}
        }
    });
    let error = fx
        .docket
        .save_graph_json(&doc.to_string())
        .await
        .expect_err("the materialized default is invalid");
    let DocketError::InvalidGraph { diagnostics } = &error else {
        panic!("expected InvalidGraph, got {error}");
    };
    assert!(
        diagnostics
            .iter()
            .any(|d| d.code == codes::INVALID_NODE_CONFIG && d.path == "/nodes/cap/config"),
        "{diagnostics:?}"
    );

    let graph_id = GraphId::new("limits").expect("id");
    let versions = fx
        .store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &graph_id,
            &GraphVersionQuery {
                limit: 10,
                before: None,
            },
        )
        .await
        .expect("list");
    assert!(versions.versions.is_empty(), "stored: {versions:?}");
}

#[tokio::test]
async fn publishing_an_unbounded_cycle_reports_the_compiler_warning() {
    // The host ceiling bounds runs, not the graph: the warning is still shown to the
    // publisher, and the stored version is the same as without it.
    let fx = Fx::manual();
    let published = fx
        .docket
        .publish_graph_json(&support::graphs::endless(None).to_string())
        .await
        .expect("a warning does not block publication");
    let codes_found: Vec<&str> = published.warnings.iter().map(|d| d.code.as_str()).collect();
    assert!(
        codes_found.contains(&codes::UNBOUNDED_CYCLE),
        "{:?}",
        published.warnings
    );
    let bounded = fx
        .docket
        .publish_graph_json(&support::graphs::endless(Some(5)).to_string())
        .await
        .expect("publish");
    assert!(
        bounded
            .warnings
            .iter()
            .all(|d| d.code != codes::UNBOUNDED_CYCLE),
        "{:?}",
        bounded.warnings
    );
}
