//! Test graphs (JSON) built from the std node library.

use serde_json::{json, Value};

/// `$start → s1 → … → sN → $finish`, each writing `field_i = i`.
pub fn steps(n: usize) -> Value {
    let mut fields = serde_json::Map::new();
    let mut nodes = serde_json::Map::new();
    let mut edges = serde_json::Map::new();
    let mut outputs = serde_json::Map::new();
    let mut prev = "$start".to_owned();
    for i in 1..=n {
        let id = format!("s{i}");
        fields.insert(format!("f{i}"), json!({"schema": {"type": "integer"}}));
        outputs.insert(format!("f{i}"), json!({}));
        nodes.insert(
            id.clone(),
            json!({"implementation": "std.set", "config": {"values": {format!("f{i}"): i}}}),
        );
        edges.insert(format!("e{i}"), json!({"from": prev, "to": id}));
        prev = id;
    }
    edges.insert("end".into(), json!({"from": prev, "to": "$finish"}));
    json!({"schema_version": 1, "id": format!("steps{n}"), "fields": fields, "outputs": outputs, "nodes": nodes, "edges": edges})
}

/// Counts `n` up to `limit` in a guarded cycle bounded by the graph's own policy.
pub fn counter_cycle(limit: i64) -> Value {
    json!({
        "schema_version": 1, "id": "counter",
        "fields": {"n": {"schema": {"type": "integer"}, "default": 0}},
        "outputs": {"n": {}},
        "policies": {"max_supersteps": 50},
        "nodes": {"inc": {"implementation": "std.increment", "config": {"field": "n"}}},
        "edges": {
            "begin": {"from": "$start", "to": "inc"},
            "again": {"from": "inc", "to": "inc", "guard": {"op": "not", "of": {"op": "equals", "ref": "n", "value": limit}}}
        }
    })
}

/// A cycle with no guard: every superstep continues (bounded only by `max_supersteps`).
pub fn endless(max_supersteps: Option<u64>) -> Value {
    let mut g = json!({
        "schema_version": 1, "id": "endless",
        "fields": {"n": {"schema": {"type": "integer"}, "default": 0}},
        "nodes": {"inc": {"implementation": "std.increment", "config": {"field": "n"}}},
        "edges": {
            "begin": {"from": "$start", "to": "inc"},
            "again": {"from": "inc", "to": "inc"}
        }
    });
    if let Some(max) = max_supersteps {
        g["policies"] = json!({"max_supersteps": max});
    }
    g
}

/// One `std.fail_times` node failing `times` times with the given retry policy.
pub fn flaky(times: u64, max_attempts: u64, backoff_ms: u64) -> Value {
    json!({
        "schema_version": 1, "id": "flaky",
        "fields": {"ok": {"schema": {"type": "boolean"}}},
        "outputs": {"ok": {}},
        "nodes": {"call": {
            "implementation": "std.fail_times",
            "config": {"times": times, "values": {"ok": true}},
            "policies": {"retry": {"max_attempts": max_attempts, "backoff_ms": backoff_ms}}
        }},
        "edges": {"begin": {"from": "$start", "to": "call"}, "end": {"from": "call", "to": "$finish"}}
    })
}

/// An approval gate as the first superstep.
pub fn approval() -> Value {
    json!({
        "schema_version": 1, "id": "gate",
        "fields": {"approved": {"schema": {"type": "boolean"}}},
        "outputs": {"approved": {}},
        "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
        "edges": {"begin": {"from": "$start", "to": "approve"}, "end": {"from": "approve", "to": "$finish"}}
    })
}

/// One node with an explicit attempt timeout.
pub fn timed(timeout_ms: u64) -> Value {
    json!({
        "schema_version": 1, "id": "timed",
        "fields": {"x": {"schema": {"type": "integer"}}},
        "outputs": {"x": {}},
        "nodes": {"work": {"implementation": "std.set", "config": {"values": {"x": 1}}, "policies": {"timeout_ms": timeout_ms}}},
        "edges": {"begin": {"from": "$start", "to": "work"}, "end": {"from": "work", "to": "$finish"}}
    })
}

/// One node sleeping `ms`, then a second writing `done`.
pub fn sleepy(ms: u64) -> Value {
    json!({
        "schema_version": 1, "id": "sleepy",
        "fields": {"slept": {"schema": {"type": "boolean"}}, "done": {"schema": {"type": "boolean"}}},
        "outputs": {"done": {}},
        "nodes": {
            "nap": {"implementation": "std.sleep_ms", "config": {"ms": ms, "values": {"slept": true}}},
            "finish": {"implementation": "std.set", "config": {"values": {"done": true}}}
        },
        "edges": {
            "begin": {"from": "$start", "to": "nap"},
            "then": {"from": "nap", "to": "finish"},
            "end": {"from": "finish", "to": "$finish"}
        }
    })
}
