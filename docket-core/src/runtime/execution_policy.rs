//! Host execution-policy check (`docs/graphs.md`, “Host checks”): a graph whose node asks for a
//! longer attempt than this host allows cannot run here.

use serde_json::json;

use super::error::{ErrorKind, Phase, RuntimeError};
use crate::graph::RuntimeGraph;

/// Checks every node's explicit `timeout_ms` against the host ceiling.
///
/// Nodes with malformed policies are skipped: planning fails the run with `invalid_policy`.
///
/// # Errors
/// [`ErrorKind::IncompatibleExecutionPolicy`] for the first node (by public id) whose timeout
/// exceeds `max_attempt_elapsed_ms`, with `details.timeout_ms` and
/// `details.max_attempt_elapsed_ms`.
pub fn check_execution_policy(
    rtg: &RuntimeGraph,
    max_attempt_elapsed_ms: u64,
) -> Result<(), RuntimeError> {
    let mut nodes: Vec<_> = rtg.nodes.values().collect();
    nodes.sort_by(|a, b| a.public_id.cmp(&b.public_id));
    for node in nodes {
        let Ok(policies) = node.resolved_policies() else {
            continue;
        };
        if let Some(timeout_ms) = policies.timeout_ms {
            if timeout_ms > max_attempt_elapsed_ms {
                return Err(RuntimeError::new(
                    ErrorKind::IncompatibleExecutionPolicy,
                    Phase::Config,
                    format!(
                        "node {:?} asks for {timeout_ms} ms per attempt; this host allows at most {max_attempt_elapsed_ms} ms",
                        node.public_id
                    ),
                )
                .with_node(node.public_id.as_str())
                .with_detail("timeout_ms", json!(timeout_ms))
                .with_detail("max_attempt_elapsed_ms", json!(max_attempt_elapsed_ms)));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::testing::rtg;

    #[test]
    fn the_first_offender_by_public_id_is_reported_and_broken_policies_are_skipped() {
        let mut g = rtg(json!({
            "nodes": {
                "z": {"implementation": "set", "policies": {"timeout_ms": 900}},
                "m": {"implementation": "set", "policies": {"timeout_ms": 700}},
                "a": {"implementation": "set", "policies": {"timeout_ms": 100}},
            },
            "edges": {
                "e0": {"from": "$start", "to": "a"},
                "e1": {"from": "$start", "to": "m"},
                "e2": {"from": "$start", "to": "z"},
            },
        }));
        let err = check_execution_policy(&g, 500).expect_err("m and z exceed");
        assert_eq!(err.node_id.as_deref(), Some("m"));
        assert_eq!(err.kind, ErrorKind::IncompatibleExecutionPolicy);
        assert!(check_execution_policy(&g, 900).is_ok(), "equal is allowed");
        if let Some(node) = g.nodes.get_mut("node:m") {
            node.policies.insert("on_error".into(), json!("x"));
        }
        assert_eq!(
            check_execution_policy(&g, 500)
                .expect_err("z still exceeds")
                .node_id
                .as_deref(),
            Some("z")
        );
    }
}
