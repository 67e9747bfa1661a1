//! The JSON wire format (`docs/graphs.md`, “The authored document”), the builder, and reading bad
//! documents: typed errors or diagnostics, never panics.

mod compiler_support;

use compiler_support::{diagnose, find};
use docket_core::graph::{
    canonical_bytes, codes, graph_hash, parse_document, parse_document_value, DocumentError,
    EdgeDecl, FieldDecl, GraphDocument, InputDecl, NodeDecl, OutputDecl, FINISH, START,
};
use docket_core::model::{GraphId, GraphRef};
use docket_core::store::rules::graph::{decode_stored, encode_for_save};
use serde_json::json;

/// A document using every member of the wire format.
fn rich_document() -> GraphDocument {
    GraphDocument::builder("rich")
        .name("Rich")
        .description("uses every member")
        .input(
            "amount",
            InputDecl::new(json!({"type": "integer", "min": 0}))
                .with_required()
                .with_default(10)
                .with_label("Amount"),
        )
        .field(
            "log",
            FieldDecl::new(json!({"type": "list", "item": {"type": "string"}}))
                .with_reducer(json!({"type": "append", "unique": true}))
                .with_default(json!(null))
                .with_label("Log"),
        )
        .output(
            "total",
            OutputDecl::of("amount").with_schema(json!({"type": "integer"})),
        )
        .node(
            "a",
            NodeDecl::new("test.set")
                .with_config("field", "log")
                .with_policy("timeout_ms", 500)
                .with_branch("route", ["a_to_b"])
                .with_label("A"),
        )
        .node("b", "test.noop")
        .edge("begin", START, "a")
        .edge_decl(
            "a_to_b",
            EdgeDecl::new("a", "b")
                .with_guard(json!({"op": "exists", "ref": {"$path": ["amount"]}}))
                .with_label("onwards"),
        )
        .edge("join", ["b", "a"], FINISH)
        .policy("max_supersteps", 12)
        .metadata(
            "owner",
            json!({"team": "ops", "tags": [1, 2.5, null, true]}),
        )
        .build()
        .expect("doc")
}

#[test]
fn the_wire_format_round_trips_to_an_equal_document_and_identical_bytes() {
    let doc = rich_document();
    let text = doc.to_json_pretty();
    let back = GraphDocument::from_json(&text).expect("reads back");
    assert_eq!(back, doc);
    assert_eq!(canonical_bytes(&back), canonical_bytes(&doc));
    let canonical = String::from_utf8(canonical_bytes(&doc)).expect("utf-8");
    assert_eq!(
        GraphDocument::from_json(&canonical).expect("canonical reads"),
        doc
    );
    assert_eq!(parse_document(&text).expect("ingests"), doc);
}

#[test]
fn a_null_default_survives_the_round_trip_and_storage() {
    let doc = rich_document();
    assert_eq!(doc.fields["log"].default, Some(json!(null)));
    let back = GraphDocument::from_value(doc.to_value()).expect("reads back");
    assert_eq!(back.fields["log"].default, Some(json!(null)));
    let graph_ref = GraphRef {
        graph_id: GraphId::new("rich").expect("id"),
        graph_hash: graph_hash(&doc),
    };
    let bytes = encode_for_save(&graph_ref, &doc).expect("encodes");
    assert_eq!(decode_stored(&graph_ref, &bytes).expect("decodes"), doc);
}

#[test]
fn the_builder_and_hand_written_json_give_the_same_document() {
    let built = GraphDocument::builder("approval")
        .input(
            "amount",
            InputDecl::new(json!({"type": "integer"})).with_required(),
        )
        .field("approved", FieldDecl::new(json!({"type": "boolean"})))
        .output("approved", OutputDecl::new())
        .node(
            "ask",
            NodeDecl::new("std.approval").with_config("field", "approved"),
        )
        .edge("start", START, "ask")
        .edge("end", "ask", FINISH)
        .build()
        .expect("doc");
    let written = GraphDocument::from_json(
        r#"{
          "schema_version": 1,
          "id": "approval",
          "inputs": { "amount": { "schema": { "type": "integer" }, "required": true } },
          "fields": { "approved": { "schema": { "type": "boolean" } } },
          "outputs": { "approved": {} },
          "nodes": { "ask": { "implementation": "std.approval", "config": { "field": "approved" } } },
          "edges": {
            "start": { "from": "$start", "to": "ask" },
            "end": { "from": "ask", "to": "$finish" }
          }
        }"#,
    )
    .expect("reads");
    assert_eq!(built, written);
    assert_eq!(graph_hash(&built), graph_hash(&written));
}

#[test]
fn the_builder_ignores_identical_redeclarations_and_rejects_conflicting_ones() {
    let same = GraphDocument::builder("g")
        .node("a", "test.noop")
        .node("a", "test.noop")
        .build()
        .expect("identical redeclaration is a no-op");
    assert_eq!(same.nodes.len(), 1);
    let conflict = GraphDocument::builder("g")
        .edge("e", START, "a")
        .edge("e", START, "b")
        .field("f", FieldDecl::new(json!({"type": "string"})))
        .field("f", FieldDecl::new(json!({"type": "integer"})))
        .build()
        .expect_err("conflicting redeclaration");
    assert_eq!((conflict.collection, conflict.id.as_str()), ("edges", "e"));
}

#[test]
fn from_json_gives_typed_errors_for_malformed_text() {
    for text in [
        "",
        "{",
        "[]",
        "null",
        r#"{"schema_version": 1}"#,
        r#"{"schema_version": 1, "id": "g", "colour": "red"}"#,
        r#"{"schema_version": 1, "id": "g", "nodes": {"a": {"kind": "x"}}}"#,
        r#"{"schema_version": 1, "id": "g", "edges": {"e": {"from": 5, "to": "a"}}}"#,
        r#"{"schema_version": -1, "id": "g"}"#,
        "{\"schema_version\": 1, \"id\": \"g\"} trailing",
    ] {
        match GraphDocument::from_json(text) {
            Err(DocumentError::Malformed { line, .. }) => assert!(line >= 1, "{text}"),
            Err(other) => panic!("{text}: {other}"),
            Ok(doc) => panic!("{text} parsed as {doc:?}"),
        }
    }
}

#[test]
fn ingest_reports_each_structural_problem_with_its_path() {
    let diagnostics = parse_document(
        r#"{"schema_version": 1, "id": "g", "colour": "red", "description": [],
            "policies": 3,
            "fields": {"f": {"schema": {"type": "string"}, "kind": "state"}},
            "outputs": {"o": {"source": 1}},
            "edges": {"e": {"from": "a"}, "ok": {"from": "a", "to": "b"}}}"#,
    )
    .expect_err("invalid");
    find(&diagnostics, codes::INVALID_DOCUMENT, "/colour", Some("g"));
    find(
        &diagnostics,
        codes::INVALID_DOCUMENT,
        "/description",
        Some("g"),
    );
    find(
        &diagnostics,
        codes::INVALID_DOCUMENT,
        "/policies",
        Some("g"),
    );
    find(&diagnostics, codes::INVALID_FIELD, "/fields/f", Some("f"));
    find(&diagnostics, codes::INVALID_RECORD, "/outputs/o", Some("o"));
    find(&diagnostics, codes::INVALID_RECORD, "/edges/e", Some("e"));
    assert_eq!(diagnostics.len(), 6, "{diagnostics:#?}");
}

#[test]
fn ingest_checks_the_version_before_anything_else() {
    for version in [json!(2), json!("1"), json!(1.5), json!(null)] {
        let diagnostics = parse_document_value(json!({
            "schema_version": version, "id": 7, "unknown": true
        }))
        .expect_err("unsupported");
        assert_eq!(diagnostics.len(), 1);
        find(
            &diagnostics,
            codes::UNSUPPORTED_SCHEMA_VERSION,
            "/schema_version",
            None,
        );
    }
    let missing = parse_document_value(json!({"id": "g"})).expect_err("missing version");
    find(&missing, codes::INVALID_DOCUMENT, "/schema_version", None);
}

#[test]
fn ingest_rejects_non_documents_and_bad_ids() {
    for text in ["not json", "[1]", "\"graph\""] {
        let diagnostics = parse_document(text).expect_err("invalid");
        find(&diagnostics, codes::INVALID_DOCUMENT, "", None);
    }
    let diagnostics = parse_document(r#"{"schema_version": 1, "id": ["g"]}"#).expect_err("invalid");
    find(&diagnostics, codes::INVALID_DOCUMENT, "/id", None);
    let diagnostics = parse_document(r#"{"schema_version": 1}"#).expect_err("invalid");
    find(&diagnostics, codes::INVALID_DOCUMENT, "/id", None);
}

#[test]
fn oversized_ids_are_diagnostics_not_panics() {
    let long = "x".repeat(300);
    let text = json!({
        "schema_version": 1,
        "id": long,
        "nodes": {long.clone(): {"implementation": long.clone()}},
        "edges": {long.clone(): {"from": "$start", "to": long.clone()}}
    })
    .to_string();
    let doc = parse_document(&text).expect("well-formed");
    let diagnostics = diagnose(&doc);
    find(&diagnostics, codes::INVALID_PUBLIC_ID, "/id", Some(&long));
    find(
        &diagnostics,
        codes::INVALID_PUBLIC_ID,
        &format!("/nodes/{long}"),
        Some(&long),
    );
    find(
        &diagnostics,
        codes::INVALID_PUBLIC_ID,
        &format!("/edges/{long}"),
        Some(&long),
    );
    let unsupported = find(
        &diagnostics,
        codes::UNSUPPORTED_NODE_IMPLEMENTATION,
        &format!("/nodes/{long}/implementation"),
        Some(&long),
    );
    assert!(unsupported.message.len() < 200, "messages shorten long ids");
}

#[test]
fn dollar_prefixed_keys_are_reserved_ids_or_non_durable_values() {
    let doc = parse_document(
        r#"{"schema_version": 1, "id": "g",
            "fields": {"$f": {"schema": {"type": "string"}}},
            "metadata": {"$m": 1},
            "nodes": {"a": {"implementation": "test.noop", "config": {"x": [{"$y": 1}]}}},
            "edges": {"s": {"from": "$start", "to": "a"}, "$e": {"from": "a", "to": "$finish"}}}"#,
    )
    .expect("well-formed");
    let diagnostics = diagnose(&doc);
    find(&diagnostics, codes::RESERVED_ID, "/fields/$f", Some("$f"));
    find(&diagnostics, codes::RESERVED_ID, "/edges/$e", Some("$e"));
    find(
        &diagnostics,
        codes::NON_DURABLE_GRAPH_VALUE,
        "/metadata/$m",
        Some("g"),
    );
    find(
        &diagnostics,
        codes::NON_DURABLE_GRAPH_VALUE,
        "/nodes/a/config/x/0/$y",
        Some("a"),
    );
}

#[test]
fn unknown_endpoints_starting_with_dollar_are_unknown_sources_and_targets() {
    let doc = parse_document(
        r#"{"schema_version": 1, "id": "g",
            "nodes": {"a": {"implementation": "test.noop"}},
            "edges": {"s": {"from": "$begin", "to": "a"}, "f": {"from": "a", "to": "$end"}}}"#,
    )
    .expect("well-formed");
    let diagnostics = diagnose(&doc);
    find(
        &diagnostics,
        codes::UNKNOWN_EDGE_SOURCE,
        "/edges/s/from",
        Some("s"),
    );
    find(
        &diagnostics,
        codes::UNKNOWN_EDGE_TARGET,
        "/edges/f/to",
        Some("f"),
    );
}

#[test]
fn a_document_naming_a_key_twice_is_refused_with_the_key_and_its_path() {
    // serde_json alone keeps the last one: `B`, and one node `a` of two.
    for (text, key, path) in [
        (
            r#"{"schema_version": 1, "id": "A", "id": "B"}"#,
            "id",
            "/id",
        ),
        (
            r#"{"schema_version": 1, "id": "g", "nodes": {"a": {"implementation": "std.echo"}, "a": {"implementation": "std.set"}}}"#,
            "a",
            "/nodes/a",
        ),
        (
            r#"{"schema_version": 1, "id": "g", "nodes": {"a": {"implementation": "std.echo", "config": {"x": 1, "x": 2}}}}"#,
            "x",
            "/nodes/a/config/x",
        ),
    ] {
        assert_eq!(
            GraphDocument::from_json(text),
            Err(DocumentError::DuplicateKey {
                key: key.into(),
                path: path.into()
            }),
            "{text}"
        );
        let diagnostics = parse_document(text).expect_err("refused");
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        assert_eq!(diagnostics[0].code, codes::DUPLICATE_KEY);
        assert_eq!(diagnostics[0].path, path);
        assert!(
            diagnostics[0].message.contains(&format!("{key:?}")),
            "{diagnostics:?}"
        );
    }
}
