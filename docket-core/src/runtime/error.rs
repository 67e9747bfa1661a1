//! The typed runtime error (`docs/runs-and-moments.md`, “Runtime errors”).
//!
//! Every fallible runtime, node and inline entry point returns [`RuntimeError`]: a stable
//! machine-readable [`ErrorKind`], the [`Phase`] that failed, the node concerned (if any), a
//! human-readable message and portable details (for example the aggregated reasons of an
//! invalid input, or the diagnostics of a graph that did not compile).

use std::fmt;

use serde_json::Value;

use crate::model::{Failure, ValueMap};

/// The stable type of a [`RuntimeError`] (`docs/runs-and-moments.md`, “Runtime errors”).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The graph did not compile; `details.diagnostics` lists why.
    InvalidGraph,
    /// The run is bound to another graph id or hash than the runtime graph given.
    GraphMismatch,
    /// Run input or an interrupt resolution is invalid; `details.reasons` lists why.
    InvalidInput,
    /// The run cannot be advanced in its state (e.g. still `created`, or it names an unknown
    /// node).
    InvalidRun,
    /// A node policy is malformed.
    InvalidPolicy,
    /// A guard could not be evaluated.
    GuardEvaluationFailed,
    /// A node's explicit timeout exceeds this host's attempt ceiling.
    IncompatibleExecutionPolicy,
    /// The interrupt does not exist (or is not open).
    NotFound,
    /// The interrupt was already resolved.
    AlreadyResolved,
    /// The run is terminal.
    InactiveRun,
    /// A caller-supplied option or argument is invalid.
    InvalidOptions,
    /// This host cannot execute the run (e.g. a node implementation is not registered).
    RuntimeUnavailable,
}

impl ErrorKind {
    /// The snake_case wire name, also used as a failure code.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidGraph => "invalid_graph",
            ErrorKind::GraphMismatch => "graph_mismatch",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::InvalidRun => "invalid_run",
            ErrorKind::InvalidPolicy => "invalid_policy",
            ErrorKind::GuardEvaluationFailed => "guard_evaluation_failed",
            ErrorKind::IncompatibleExecutionPolicy => "incompatible_execution_policy",
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyResolved => "already_resolved",
            ErrorKind::InactiveRun => "inactive_run",
            ErrorKind::InvalidOptions => "invalid_options",
            ErrorKind::RuntimeUnavailable => "runtime_unavailable",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of the runtime raised an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Validating configuration or host policy.
    Config,
    /// Compiling a graph.
    Compile,
    /// Building or initializing a run.
    Init,
    /// Planning a superstep.
    Plan,
    /// Executing node attempts.
    Execute,
    /// Settling attempt results into a moment.
    Settle,
    /// Resolving an interrupt.
    Resolve,
    /// Cancelling a run.
    Cancel,
}

impl Phase {
    /// The snake_case wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Config => "config",
            Phase::Compile => "compile",
            Phase::Init => "init",
            Phase::Plan => "plan",
            Phase::Execute => "execute",
            Phase::Settle => "settle",
            Phase::Resolve => "resolve",
            Phase::Cancel => "cancel",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed runtime error.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind} during {phase}: {message}")]
pub struct RuntimeError {
    /// Stable type.
    pub kind: ErrorKind,
    /// Where it happened.
    pub phase: Phase,
    /// The node concerned, if any.
    pub node_id: Option<String>,
    /// Human-readable explanation.
    pub message: String,
    /// Portable details.
    pub details: ValueMap,
}

impl RuntimeError {
    /// An error without node or details.
    #[must_use]
    pub fn new(kind: ErrorKind, phase: Phase, message: impl Into<String>) -> Self {
        RuntimeError {
            kind,
            phase,
            node_id: None,
            message: message.into(),
            details: ValueMap::new(),
        }
    }

    /// Attaches the node concerned.
    #[must_use]
    pub fn with_node(mut self, node_id: impl Into<String>) -> Self {
        self.node_id = Some(node_id.into());
        self
    }

    /// Adds one detail.
    #[must_use]
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// The `details.reasons` list as strings (empty when absent).
    #[must_use]
    pub fn reasons(&self) -> Vec<String> {
        self.details
            .get("reasons")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl From<&RuntimeError> for Failure {
    /// `Failure.from_error`: the kind becomes the code; node and details are kept.
    fn from(error: &RuntimeError) -> Self {
        Failure {
            code: error.kind.as_str().to_owned(),
            message: error.message.clone(),
            node_id: error.node_id.clone(),
            details: error.details.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_from_error_uses_the_kind_as_code_and_keeps_node_and_details() {
        let error = RuntimeError::new(ErrorKind::InvalidPolicy, Phase::Plan, "bad retry")
            .with_node("a")
            .with_detail("reasons", vec!["x"]);
        let failure = Failure::from(&error);
        assert_eq!(failure.code, "invalid_policy");
        assert_eq!(failure.node_id.as_deref(), Some("a"));
        assert_eq!(error.reasons(), vec!["x".to_owned()]);
        assert_eq!(
            error.to_string(),
            "invalid_policy during plan: bad retry".to_owned()
        );
    }
}
