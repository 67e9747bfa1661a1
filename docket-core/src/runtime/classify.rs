//! Attempt results and their classification (spec §5.5).
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
