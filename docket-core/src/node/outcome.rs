//! What a node returns (`docs/runs-and-moments.md`, “Executing a superstep”).

use serde_json::Value;

use crate::model::{Interrupt, ValueMap};
use crate::runtime::AttemptOutcome;

/// The result of one node call.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeOutcome {
    /// Write these state fields (validated at the barrier's settlement).
    Update(ValueMap),
    /// Pause until an external resolution is written to the interrupt's resume field.
    Interrupt(Interrupt),
    /// A transient failure: retried while the node's retry budget lasts.
    Error(String),
    /// A permanent failure: fails the run without retrying.
    Fail(String),
    /// Reserved for detached completion; currently a permanent `unsupported_await` failure.
    Await(Value),
    /// Reserved for commands; currently a permanent `unsupported_command` failure.
    Command(Value),
}

impl NodeOutcome {
    /// An update from a JSON value; anything but a map is a permanent
    /// `invalid_node_return` failure.
    #[must_use]
    pub fn update(value: Value) -> Self {
        match value {
            Value::Object(map) => NodeOutcome::Update(map),
            other => NodeOutcome::Fail(format!(
                "invalid_node_return: an update must be a map, found {}",
                crate::model::value::json_type(&other)
            )),
        }
    }

    /// The attempt outcome this return is classified as.
    #[must_use]
    pub fn into_attempt(self) -> AttemptOutcome {
        match self {
            NodeOutcome::Update(update) => AttemptOutcome::Update(update),
            NodeOutcome::Interrupt(interrupt) => AttemptOutcome::Interrupt(interrupt),
            NodeOutcome::Error(reason) => AttemptOutcome::retryable(reason),
            NodeOutcome::Fail(reason) => AttemptOutcome::permanent(reason),
            NodeOutcome::Await(_) => AttemptOutcome::permanent("unsupported_await"),
            NodeOutcome::Command(_) => AttemptOutcome::permanent("unsupported_command"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_classification_table_holds() {
        let cases = [
            (
                NodeOutcome::update(json!({"a": 1})),
                AttemptOutcome::Update(json!({"a": 1}).as_object().cloned().unwrap_or_default()),
            ),
            (
                NodeOutcome::Interrupt(Interrupt::new("f")),
                AttemptOutcome::Interrupt(Interrupt::new("f")),
            ),
            (
                NodeOutcome::Error("flaky".into()),
                AttemptOutcome::retryable("flaky"),
            ),
            (
                NodeOutcome::Fail("broken".into()),
                AttemptOutcome::permanent("broken"),
            ),
            (
                NodeOutcome::Await(json!(1)),
                AttemptOutcome::permanent("unsupported_await"),
            ),
            (
                NodeOutcome::Command(json!(1)),
                AttemptOutcome::permanent("unsupported_command"),
            ),
        ];
        for (outcome, expected) in cases {
            assert_eq!(outcome.into_attempt(), expected);
        }
        assert!(matches!(
            NodeOutcome::update(json!([1])),
            NodeOutcome::Fail(reason) if reason.starts_with("invalid_node_return")
        ));
    }
}
