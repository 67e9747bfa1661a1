//! Property tests: the hash depends on content only, the wire format round-trips, and no
//! input — well-formed, half-formed or garbage — makes the compiler panic.

mod compiler_support;

use compiler_support::TestContracts;
use docket_core::graph::lower::lower;
use docket_core::graph::{
    canonical_bytes, check_runtime, compile_effective, compile_for_publication, graph_hash,
    parse_document, parse_document_value, verify, CompileOptions, GraphDocument,
};
use proptest::prelude::*;
use proptest::sample::Index;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------- generators

fn id() -> impl Strategy<Value = String> {
    "[a-d][a-d0-9_]{0,2}"
}

/// Ids as edges see them: mostly declared-looking ids, sometimes endpoints or junk.
fn endpoint() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => id(),
        2 => Just("$start".to_owned()),
        2 => Just("$finish".to_owned()),
        1 => "[ -~]{0,4}",
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1000i64..1000).prop_map(Value::from),
        "[a-z$ ]{0,6}".prop_map(Value::from),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z$]{0,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "min": 0})),
        Just(json!({"type": "list", "item": {"type": "integer"}})),
        Just(json!({"type": "map"})),
        Just(json!({"type": "enum", "values": ["a", "b"]})),
        Just(json!({"type": "nope"})),
    ]
}

fn object(entries: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        entries
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
            .collect(),
    )
}

fn input() -> impl Strategy<Value = Value> {
    (schema(), any::<bool>(), prop::option::of(scalar())).prop_map(|(s, required, default)| {
        object(vec![
            ("schema", Some(s)),
            ("required", Some(Value::Bool(required))),
            ("default", default),
        ])
    })
}

fn field() -> impl Strategy<Value = Value> {
    let reducer = prop::option::of(prop_oneof![
        Just(json!("append")),
        Just(json!("sum")),
        Just(json!({"type": "merge", "deep": true})),
        Just(json!("last_value")),
    ]);
    (
        prop::option::of(schema()),
        reducer,
        prop::option::of(scalar()),
    )
        .prop_map(|(s, reducer, default)| {
            object(vec![
                ("schema", s),
                ("reducer", reducer),
                ("default", default),
            ])
        })
}

fn node() -> impl Strategy<Value = Value> {
    let implementation = prop_oneof![
        Just("test.greet"),
        Just("test.noop"),
        Just("test.counter"),
        Just("test.set"),
        Just("test.missing"),
        Just("not valid"),
    ];
    (
        implementation,
        prop::collection::btree_map("[a-z]{1,6}", scalar(), 0..3),
        prop::option::of(Just(json!({"retry": {"max_attempts": 2}}))),
        prop::option::of(prop::collection::vec(id(), 0..3)),
    )
        .prop_map(|(implementation, config, policies, branch)| {
            object(vec![
                ("implementation", Some(json!(implementation))),
                ("config", Some(Value::Object(config.into_iter().collect()))),
                ("policies", policies),
                ("branches", branch.map(|b| json!({"route": b}))),
            ])
        })
}

fn edge() -> impl Strategy<Value = Value> {
    let from = prop_oneof![
        3 => endpoint().prop_map(Value::from),
        1 => prop::collection::vec(endpoint(), 0..3).prop_map(Value::from),
    ];
    let guard = prop::option::of(prop_oneof![
        id().prop_map(|f| json!({"op": "changed", "field": f})),
        (id(), scalar()).prop_map(|(f, v)| json!({"op": "equals", "ref": f, "value": v})),
        Just(json!({"op": "bogus"})),
    ]);
    (from, endpoint(), guard, prop::option::of("[a-z ]{0,8}")).prop_map(
        |(from, to, guard, label)| {
            object(vec![
                ("from", Some(from)),
                ("to", Some(Value::from(to))),
                ("guard", guard),
                ("label", label.map(Value::from)),
            ])
        },
    )
}

fn output() -> impl Strategy<Value = Value> {
    prop::option::of(id()).prop_map(|source| object(vec![("source", source.map(Value::from))]))
}

fn collection(entry: impl Strategy<Value = Value>, max: usize) -> impl Strategy<Value = Value> {
    prop::collection::btree_map(id(), entry, 0..max)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// A JSON value with the wire format's shape (so it always reads), but arbitrary content.
fn document_value() -> impl Strategy<Value = Value> {
    (
        id(),
        collection(input(), 3),
        collection(field(), 4),
        collection(output(), 3),
        collection(node(), 5),
        collection(edge(), 7),
        prop::option::of(1u64..20),
        prop::collection::btree_map("[a-z]{1,5}", any_json(), 0..3),
    )
        .prop_map(
            |(graph_id, inputs, fields, outputs, nodes, edges, bound, metadata)| {
                let policies = bound.map_or_else(|| json!({}), |n| json!({"max_supersteps": n}));
                json!({
                    "schema_version": 1,
                    "id": graph_id,
                    "inputs": inputs,
                    "fields": fields,
                    "outputs": outputs,
                    "nodes": nodes,
                    "edges": edges,
                    "policies": policies,
                    "metadata": Value::Object(metadata.into_iter().collect::<Map<_, _>>()),
                })
            },
        )
}

/// A graph that usually compiles: a chain `$start → n0 → … → nk → $finish` of registered
/// implementations, well-typed fields projected as outputs, and extra edges (guarded or not,
/// some barriers) between declared nodes, so cycles and joins appear.
fn sound_document_value() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        Just(json!({"schema": {"type": "integer"}, "reducer": "sum"})),
        Just(json!({"schema": {"type": "list"}, "reducer": "append"})),
        Just(json!({"schema": {"type": "string"}, "default": "x"})),
        Just(json!({"schema": {"type": "map"}, "reducer": {"type": "merge", "deep": true}})),
    ];
    let implementation = prop_oneof![Just("test.noop"), Just("test.greet"), Just("test.counter")];
    (
        prop::collection::vec(implementation, 1..6),
        prop::collection::vec(field, 1..4),
        prop::collection::vec(
            (any::<Index>(), any::<Index>(), any::<Index>(), 0u8..3),
            0..4,
        ),
        prop::option::of(1u64..20),
    )
        .prop_map(|(implementations, fields, extra, bound)| {
            let n = implementations.len();
            let name = |i: usize| format!("n{i}");
            let mut nodes = Map::new();
            for (i, implementation) in implementations.iter().enumerate() {
                nodes.insert(name(i), json!({"implementation": implementation}));
            }
            let mut field_map = Map::new();
            let mut outputs = Map::new();
            for (i, f) in fields.iter().enumerate() {
                field_map.insert(format!("f{i}"), f.clone());
                outputs.insert(format!("f{i}"), json!({}));
            }
            let mut edges = Map::new();
            edges.insert("begin".into(), json!({"from": "$start", "to": "n0"}));
            for i in 1..n {
                edges.insert(
                    format!("chain{i}"),
                    json!({"from": name(i - 1), "to": name(i)}),
                );
            }
            edges.insert("end".into(), json!({"from": name(n - 1), "to": "$finish"}));
            for (k, (a, b, f, kind)) in extra.iter().enumerate() {
                let (a, b) = (name(a.index(n)), name(b.index(n)));
                let field = format!("f{}", f.index(fields.len()));
                let edge = match kind {
                    0 => json!({"from": a, "to": b}),
                    1 => json!({"from": a, "to": b, "guard": {"op": "changed", "field": field}}),
                    _ => json!({"from": [a, "n0"], "to": b}),
                };
                edges.insert(format!("extra{k}"), edge);
            }
            let policies = bound.map_or_else(|| json!({}), |n| json!({"max_supersteps": n}));
            json!({
                "schema_version": 1, "id": "sound",
                "fields": field_map, "outputs": outputs,
                "nodes": nodes, "edges": edges, "policies": policies,
            })
        })
}

// ---------------------------------------------------------------- helpers

/// Renders `value` as JSON text with shuffled key order and random whitespace.
fn render(value: &Value, rng: &mut StdRng, out: &mut String) {
    fn space(rng: &mut StdRng, out: &mut String) {
        for _ in 0..rng.gen_range(0..3) {
            out.push([' ', '\n', '\t', '\r'][rng.gen_range(0..4)]);
        }
    }
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.shuffle(rng);
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                out.push_str(&Value::String(key.clone()).to_string());
                space(rng, out);
                out.push(':');
                space(rng, out);
                render(item, rng, out);
                space(rng, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                render(item, rng, out);
            }
            space(rng, out);
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Every string or integer leaf inside `value` (map values and list items, not keys).
fn leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::String(_) | Value::Number(_) => out.push(path.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                leaves(item, path, out);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push(key.clone());
                leaves(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn leaf_mut<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, step| match v {
        Value::Object(map) => map.get_mut(step),
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        _ => None,
    })
}

fn read(value: &Value) -> GraphDocument {
    GraphDocument::from_value(value.clone()).expect("generated documents have the wire shape")
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_hash_ignores_key_order_and_whitespace(doc in document_value(), seed in any::<u64>()) {
        let mut text = String::new();
        render(&doc, &mut StdRng::seed_from_u64(seed), &mut text);
        let shuffled = GraphDocument::from_json(&text).expect("rendered text reads");
        let plain = GraphDocument::from_json(&doc.to_string()).expect("plain text reads");
        prop_assert_eq!(canonical_bytes(&shuffled), canonical_bytes(&plain));
        prop_assert_eq!(graph_hash(&shuffled), graph_hash(&plain));
    }

    #[test]
    fn any_content_change_changes_the_hash(doc in document_value(), pick in any::<Index>()) {
        let mut positions = Vec::new();
        leaves(&doc, &mut Vec::new(), &mut positions);
        let position = pick.get(&positions).clone();
        let mut changed = doc.clone();
        let leaf = leaf_mut(&mut changed, &position).expect("leaf exists");
        *leaf = match leaf.take() {
            Value::String(mut s) => { s.push('x'); Value::String(s) }
            Value::Number(n) => Value::from(n.as_i64().expect("generated numbers are integers") + 1),
            other => other,
        };
        prop_assert_ne!(graph_hash(&read(&doc)), graph_hash(&read(&changed)), "changed {:?}", position);
    }

    #[test]
    fn the_wire_format_round_trips(doc in document_value()) {
        let parsed = read(&doc);
        let again = GraphDocument::from_json(&parsed.to_json_pretty()).expect("reads back");
        prop_assert_eq!(canonical_bytes(&again), canonical_bytes(&parsed));
        prop_assert_eq!(&again, &parsed);
        prop_assert_eq!(parse_document_value(doc).expect("ingests"), parsed);
    }

    #[test]
    fn compiling_random_graphs_never_panics_and_successes_are_sound(
        doc in prop_oneof![document_value(), sound_document_value()],
        host in prop::option::of(1u64..10),
    ) {
        let doc = read(&doc);
        let contracts = TestContracts::new();
        let options = CompileOptions { max_supersteps: host };
        let diagnostics = verify(&doc, &contracts, options);
        match compile_for_publication(&doc, &contracts, options) {
            Ok(compiled) => {
                prop_assert!(diagnostics.iter().all(|d| !d.is_error()));
                prop_assert_eq!(check_runtime(&compiled.runtime), vec![]);
                prop_assert_eq!(&compiled.runtime.graph_hash, &graph_hash(&compiled.effective));
                let rerun = compile_effective(&compiled.effective, &contracts, options).expect("stored graph compiles");
                prop_assert_eq!(rerun.runtime, compiled.runtime);
            }
            Err(error) => {
                prop_assert!(error.errors().next().is_some());
                prop_assert_eq!(error.diagnostics, diagnostics);
            }
        }
        // Lowering without validation is defensive too.
        let _ = lower(&doc, &graph_hash(&doc), host);
    }

    #[test]
    fn arbitrary_json_never_panics(value in any_json()) {
        let _ = parse_document_value(value.clone());
        let _ = GraphDocument::from_value(value.clone());
        let wrapped = json!({"schema_version": 1, "id": "g", "nodes": value.clone(), "edges": {"e": value}});
        if let Ok(doc) = parse_document_value(wrapped) {
            let _ = verify(&doc, &TestContracts::new(), CompileOptions::default());
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,64}", bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse_document(&text);
        let _ = GraphDocument::from_json(&text);
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = parse_document(&lossy);
        let _ = GraphDocument::from_json(&lossy);
    }
}
