//! Node and graph policies (`docs/graphs.md`, “The authored document”).
//!
//! Node policies: `"timeout_ms"` (positive integer), `"retry"` →
//! `{"max_attempts" ≥ 1 (default 1), "backoff_ms" ≥ 0 (default 0)}` with no other keys.
//! `"on_error"` is reserved and rejected; other keys are ignored.

use serde_json::Value;

use crate::model::ValueMap;

/// Retry policy of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts allowed (1 = no retry).
    pub max_attempts: u32,
    /// Delay before each retry, in milliseconds.
    pub backoff_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        }
    }
}

/// Resolved node policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NodePolicies {
    /// Explicit per-attempt timeout.
    pub timeout_ms: Option<u64>,
    /// Retry policy.
    pub retry: RetryPolicy,
}

impl NodePolicies {
    /// Resolves raw node policies.
    ///
    /// # Errors
    /// One reason per malformed key.
    pub fn resolve(raw: &ValueMap) -> Result<NodePolicies, Vec<String>> {
        let (policies, problems) = Self::resolve_with_problems(raw);
        if problems.is_empty() {
            Ok(policies)
        } else {
            Err(problems.into_iter().map(|p| p.reason).collect())
        }
    }

    /// Resolves raw node policies, returning the best-effort policies (malformed keys keep
    /// their defaults) together with one [`PolicyProblem`] per malformed key.
    #[must_use]
    pub fn resolve_with_problems(raw: &ValueMap) -> (NodePolicies, Vec<PolicyProblem>) {
        let mut problems = Vec::new();
        let mut problem = |key: &[&str], reason: &str| {
            problems.push(PolicyProblem {
                key: key.iter().map(|k| (*k).to_owned()).collect(),
                reason: reason.to_owned(),
            });
        };
        let mut out = NodePolicies::default();
        if raw.contains_key("on_error") {
            problem(
                &["on_error"],
                "policy \"on_error\" is reserved and not supported",
            );
        }
        if let Some(v) = raw.get("timeout_ms") {
            match v.as_u64().filter(|n| *n > 0) {
                Some(n) => out.timeout_ms = Some(n),
                None => problem(&["timeout_ms"], "\"timeout_ms\" must be a positive integer"),
            }
        }
        match raw.get("retry") {
            None => {}
            Some(Value::Object(retry)) => {
                for extra in retry
                    .keys()
                    .filter(|k| *k != "max_attempts" && *k != "backoff_ms")
                {
                    problem(&["retry", extra], &format!("unknown retry key {extra:?}"));
                }
                if let Some(v) = retry.get("max_attempts") {
                    match v
                        .as_u64()
                        .filter(|n| *n >= 1)
                        .and_then(|n| u32::try_from(n).ok())
                    {
                        Some(n) => out.retry.max_attempts = n,
                        None => problem(
                            &["retry", "max_attempts"],
                            "\"retry.max_attempts\" must be an integer of at least 1",
                        ),
                    }
                }
                if let Some(v) = retry.get("backoff_ms") {
                    match v.as_u64() {
                        Some(n) => out.retry.backoff_ms = n,
                        None => problem(
                            &["retry", "backoff_ms"],
                            "\"retry.backoff_ms\" must be a non-negative integer",
                        ),
                    }
                }
            }
            Some(_) => problem(&["retry"], "\"retry\" must be a map"),
        }
        (out, problems)
    }
}

/// One malformed node policy key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyProblem {
    /// Key path inside the node's `policies`, e.g. `["retry", "max_attempts"]`.
    pub key: Vec<String>,
    /// What is wrong.
    pub reason: String,
}

/// Reads the graph policy `"max_supersteps"`.
///
/// # Errors
/// A reason when present but not a positive integer.
pub fn graph_max_supersteps(policies: &ValueMap) -> Result<Option<u64>, String> {
    match policies.get("max_supersteps") {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| "\"max_supersteps\" must be a positive integer".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> ValueMap {
        v.as_object().cloned().expect("map")
    }

    #[test]
    fn defaults_and_explicit_values() {
        assert_eq!(
            NodePolicies::resolve(&ValueMap::new()).expect("ok"),
            NodePolicies::default()
        );
        let p = NodePolicies::resolve(&map(json!({
            "timeout_ms": 50, "retry": {"max_attempts": 3, "backoff_ms": 10}, "other": 1
        })))
        .expect("ok");
        assert_eq!(p.timeout_ms, Some(50));
        assert_eq!(
            p.retry,
            RetryPolicy {
                max_attempts: 3,
                backoff_ms: 10
            }
        );
    }

    #[test]
    fn malformed_policies_give_one_reason_per_key() {
        let reasons = NodePolicies::resolve(&map(json!({
            "timeout_ms": 0, "retry": {"max_attempts": 0, "jitter": 1}, "on_error": "x"
        })))
        .expect_err("invalid");
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(graph_max_supersteps(&map(json!({"max_supersteps": 0}))).is_err());
        assert_eq!(
            graph_max_supersteps(&map(json!({"max_supersteps": 3}))),
            Ok(Some(3))
        );
    }
}
