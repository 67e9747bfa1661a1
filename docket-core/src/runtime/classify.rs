//! Attempt results and their classification (`docs/runs-and-moments.md`, “Executing a superstep”).
//!
//! The executor reports what an attempt did ([`AttemptOutcome`]); whether a failure is retried
//! is a pure decision of the runtime: a retryable failure retries iff `attempt <
//! retry.max_attempts`, otherwise it is permanent.

use super::activation::Activation;
use crate::model::{Interrupt, ValueMap};

/// What one node attempt produced.
#[derive(Clone, Debug, PartialEq)]
pub enum AttemptOutcome {
    /// A state update (validated at settlement).
    Update(ValueMap),
    /// An interrupt request (validated at settlement).
    Interrupt(Interrupt),
    /// The attempt failed.
    Failed {
        /// Human-readable reason (e.g. `"timeout"`).
        reason: String,
        /// Whether the failure may be retried within the node's retry budget.
        retryable: bool,
    },
}

impl AttemptOutcome {
    /// A retryable failure.
    #[must_use]
    pub fn retryable(reason: impl Into<String>) -> Self {
        AttemptOutcome::Failed {
            reason: reason.into(),
            retryable: true,
        }
    }

    /// A permanent failure.
    #[must_use]
    pub fn permanent(reason: impl Into<String>) -> Self {
        AttemptOutcome::Failed {
            reason: reason.into(),
            retryable: false,
        }
    }
}

/// The outcome of one dispatched activation, identified by its task and attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptResult {
    /// The activation's task id.
    pub task_id: String,
    /// The activation's node id.
    pub node_id: String,
    /// The attempt that ran.
    pub attempt: u32,
    /// What it produced.
    pub outcome: AttemptOutcome,
}

impl AttemptResult {
    /// The result of `activation` with `outcome`.
    #[must_use]
    pub fn of(activation: &Activation, outcome: AttemptOutcome) -> Self {
        AttemptResult {
            task_id: activation.task_id.clone(),
            node_id: activation.node_id.clone(),
            attempt: activation.attempt,
            outcome,
        }
    }
}

/// The class of an attempt once its retry budget is taken into account.
#[derive(Clone, Debug, PartialEq)]
pub enum Class {
    /// Final update.
    Ok(ValueMap),
    /// Final interrupt.
    Interrupt(Interrupt),
    /// Park the next attempt.
    Retry(String),
    /// Fail the run.
    Permanent(String),
}

/// Classifies `outcome` of `activation`'s attempt.
#[must_use]
pub fn classify(activation: &Activation, outcome: AttemptOutcome) -> Class {
    match outcome {
        AttemptOutcome::Update(update) => Class::Ok(update),
        AttemptOutcome::Interrupt(interrupt) => Class::Interrupt(interrupt),
        AttemptOutcome::Failed {
            reason,
            retryable: true,
        } if activation.attempt < activation.retry.max_attempts => Class::Retry(reason),
        AttemptOutcome::Failed { reason, .. } => Class::Permanent(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::RetryPolicy;
    use crate::model::RunId;
    use crate::runtime::activation::{Activation, PlannedSnapshot};

    fn activation(attempt: u32, max_attempts: u32) -> Activation {
        let node = crate::graph::RuntimeNode {
            public_id: "a".into(),
            runtime_id: "node:a".into(),
            implementation: "set".into(),
            config: ValueMap::new(),
            subscribe: vec![],
            outgoing_edges: vec![],
            policies: ValueMap::new(),
            metadata: ValueMap::new(),
        };
        let base = PlannedSnapshot::new(
            RunId::new("r").expect("id"),
            0,
            ValueMap::new(),
            Default::default(),
        );
        let mut a = Activation::fresh(&base, &node, crate::graph::NodePolicies::default());
        a.attempt = attempt;
        a.retry = RetryPolicy {
            max_attempts,
            backoff_ms: 0,
        };
        a
    }

    #[test]
    fn a_retryable_failure_retries_only_while_attempts_remain() {
        let flaky = AttemptOutcome::retryable("x");
        assert_eq!(
            classify(&activation(1, 3), flaky.clone()),
            Class::Retry("x".into())
        );
        assert_eq!(
            classify(&activation(2, 3), flaky.clone()),
            Class::Retry("x".into())
        );
        assert_eq!(
            classify(&activation(3, 3), flaky.clone()),
            Class::Permanent("x".into())
        );
        assert_eq!(
            classify(&activation(1, 1), flaky),
            Class::Permanent("x".into())
        );
        assert_eq!(
            classify(&activation(1, 3), AttemptOutcome::permanent("y")),
            Class::Permanent("y".into())
        );
    }

    #[test]
    fn a_parked_next_attempt_carries_the_failure_history() {
        let mut first = activation(1, 3);
        let parked = first.parked_next("boom");
        assert_eq!(parked.attempt, 2);
        assert_eq!(parked.idempotency_key, "r:0:a:2");
        assert_eq!(parked.failures.len(), 1);
        first.attempt = 2;
        first.failures = parked.failures.clone();
        let again = first.parked_next("bang");
        assert_eq!(
            again.failures.iter().map(|f| f.attempt).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }
}
