//! Shared fixtures for the compiler tests: a node registry stand-in with a few
//! implementations (some with config defaults), a small valid graph, and assertions on
//! diagnostics.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use docket_core::graph::{
    compile_for_publication, verify, CompileOptions, Diagnostic, FieldDecl, GraphDocument,
    InputDecl, NodeContracts, NodeDecl, OutputDecl, FINISH, START,
};
use serde_json::{json, Value};

/// Test registry. Implementations:
///
/// * `test.greet`: `{greeting: string = <greet default>, loud: boolean = false}` (closed);
/// * `test.counter`: `{step: integer ≥ 1 = 1, field: string}` (closed);
/// * `test.set`: open object with a required string `field`;
/// * `test.noop`: any map;
/// * `test.scalar`: a string schema (not a config schema);
/// * `test.broken`: a malformed schema;
/// * `test.bad_default`: `{limit: integer = "ten"}` (its default fails its own schema).
pub struct TestContracts {
    greet_default: Value,
    calls: Mutex<BTreeMap<String, usize>>,
}

impl TestContracts {
    /// The registry with `test.greet` defaulting its greeting to `"hello"`.
    pub fn new() -> Self {
        Self::with_greeting("hello")
    }

    /// The registry with another default greeting (a new release of `test.greet`).
    pub fn with_greeting(greeting: &str) -> Self {
        TestContracts {
            greet_default: json!(greeting),
            calls: Mutex::new(BTreeMap::new()),
        }
    }

    /// How many times the compiler asked for `implementation`'s schema.
    pub fn calls(&self, implementation: &str) -> usize {
        self.calls
            .lock()
            .expect("test mutex")
            .get(implementation)
            .copied()
            .unwrap_or(0)
    }
}

impl NodeContracts for TestContracts {
    fn config_schema(&self, implementation: &str) -> Option<Value> {
        *self
            .calls
            .lock()
            .expect("test mutex")
            .entry(implementation.to_owned())
            .or_default() += 1;
        Some(match implementation {
            "test.greet" => json!({"type": "object", "fields": {
                "greeting": {"type": "string", "default": self.greet_default},
                "loud": {"type": "boolean", "default": false}
            }}),
            "test.counter" => json!({"type": "object", "fields": {
                "step": {"type": "integer", "min": 1, "default": 1},
                "field": {"type": "string"}
            }}),
            "test.set" => json!({"type": "object", "open": true, "fields": {
                "field": {"type": "string", "required": true}
            }}),
            "test.noop" => json!({"type": "map"}),
            "test.scalar" => json!({"type": "string"}),
            "test.broken" => json!({"type": "nope"}),
            "test.bad_default" => json!({"type": "object", "fields": {
                "limit": {"type": "integer", "default": "ten"}
            }}),
            _ => return None,
        })
    }
}

/// A small graph that compiles without any diagnostic:
/// `$start → greet → $finish`, input `name`, field `greeting` projected as an output.
pub fn valid_graph() -> GraphDocument {
    GraphDocument::builder("hello")
        .input("name", InputDecl::new(json!({"type": "string"})))
        .field("greeting", FieldDecl::new(json!({"type": "string"})))
        .output("greeting", OutputDecl::new())
        .node("greet", NodeDecl::new("test.greet"))
        .edge("begin", START, "greet")
        .edge("end", "greet", FINISH)
        .build()
        .expect("no conflicting declarations")
}

/// `valid_graph` after `edit`.
pub fn edited(edit: impl FnOnce(&mut GraphDocument)) -> GraphDocument {
    let mut doc = valid_graph();
    edit(&mut doc);
    doc
}

/// Every diagnostic of `doc` under the test registry and default options.
pub fn diagnose(doc: &GraphDocument) -> Vec<Diagnostic> {
    verify(doc, &TestContracts::new(), CompileOptions::default())
}

/// `doc` compiled for publication under the test registry.
pub fn publish(
    doc: &GraphDocument,
) -> Result<docket_core::graph::Compiled, docket_core::graph::CompileError> {
    compile_for_publication(doc, &TestContracts::new(), CompileOptions::default())
}

/// The codes of `diagnostics`, in order.
pub fn codes(diagnostics: &[Diagnostic]) -> Vec<&str> {
    diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// Asserts that `diagnostics` hold `code` at `path` (with `public_id` when given) and returns
/// that diagnostic.
pub fn find<'a>(
    diagnostics: &'a [Diagnostic],
    code: &str,
    path: &str,
    public_id: Option<&str>,
) -> &'a Diagnostic {
    let found = diagnostics
        .iter()
        .find(|d| d.code == code && d.path == path)
        .unwrap_or_else(|| panic!("expected {code} at {path:?}, got {diagnostics:#?}"));
    if let Some(id) = public_id {
        assert_eq!(found.public_id.as_deref(), Some(id), "{found:#?}");
    }
    found
}
