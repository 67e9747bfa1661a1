//! Restart classes as node retry policies.
//!
//! | restart class | graph the job runs |
//! |---|---|
//! | `NonResumable` | the host's graph with every node's retry policy set to one attempt: a failed attempt fails the job |
//! | `Replayable` | the host's graph as published: a failed attempt is retried as its policy says |
//! | `CheckpointResumable` | the same: a run resumes from its last committed superstep (Docket's own checkpointing) |
//! | `Adoptable` | the same: a runner re-attaches through the graph's interrupts |
//!
//! What this does not change: a superstep in flight when its worker's claim expires is run
//! again by the next claimer, whatever the class (Docket's recovery); a `NonResumable` job
//! that must never be replayed has its node report `worker_lost` itself (see
//! [`crate::jobs::terminal::worker_lost_reason`]).

use serde_json::{json, Value};

use docket_core::graph::GraphDocument;

use crate::ports::error::DetachedJobError;
use crate::ports::job::RestartClass;

/// The graph a job of `class` runs (see the module docs).
///
/// # Errors
/// `InvalidInput` if the rewritten document does not parse (it always does for a document
/// that parsed before).
pub fn graph_for_class(
    graph: &GraphDocument,
    class: RestartClass,
) -> Result<GraphDocument, DetachedJobError> {
    if class != RestartClass::NonResumable {
        return Ok(graph.clone());
    }
    let mut doc = graph.to_value();
    if let Some(nodes) = doc.get_mut("nodes").and_then(Value::as_object_mut) {
        for node in nodes.values_mut() {
            let Some(node) = node.as_object_mut() else {
                continue;
            };
            let policies = node
                .entry("policies")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(policies) = policies.as_object_mut() {
                policies.insert("retry".into(), json!({"max_attempts": 1, "backoff_ms": 0}));
            }
        }
    }
    GraphDocument::from_value(doc)
        .map_err(|e| DetachedJobError::InvalidInput(format!("graph for a non-resumable job: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> GraphDocument {
        GraphDocument::from_value(json!({
            "schema_version": 1,
            "id": "g",
            "fields": {},
            "nodes": {
                "a": {"implementation": "std.set", "config": {"values": {}},
                      "policies": {"retry": {"max_attempts": 3, "backoff_ms": 5}, "timeout_ms": 10}},
                "b": {"implementation": "std.set", "config": {"values": {}}}
            },
            "edges": {
                "e1": {"from": "$start", "to": "a"},
                "e2": {"from": "a", "to": "b"},
                "e3": {"from": "b", "to": "$finish"}
            }
        }))
        .expect("valid graph")
    }

    #[test]
    fn only_non_resumable_jobs_lose_their_retries() {
        let original = graph();
        for class in [
            RestartClass::Replayable,
            RestartClass::CheckpointResumable,
            RestartClass::Adoptable,
        ] {
            assert_eq!(graph_for_class(&original, class).expect("graph"), original);
        }
        let strict = graph_for_class(&original, RestartClass::NonResumable)
            .expect("graph")
            .to_value();
        for node in ["a", "b"] {
            assert_eq!(
                strict["nodes"][node]["policies"]["retry"],
                json!({"max_attempts": 1, "backoff_ms": 0}),
                "{node}"
            );
        }
        assert_eq!(strict["nodes"]["a"]["policies"]["timeout_ms"], json!(10));
    }
}
