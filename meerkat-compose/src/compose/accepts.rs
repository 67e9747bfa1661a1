//! Whether an already-terminal wait binding agrees with a delivered job result.

use docket_core::ops::OperationTerminalOutcome;

use crate::ports::job::JobTerminalResult;

/// Whether a wait operation that already ended with `outcome` accepts the delivered
/// `terminal` (whose canonical JSON is `encoded`), so the delivery can be acknowledged
/// without another transition.
///
/// The match is exhaustive on purpose: a new outcome variant must be classified here before
/// this compiles, because defaulting it to "conflict" would re-fail on every delivery retry
/// and block the delivery queue for good.
///
/// * no recorded outcome: never (the truth was lost);
/// * `Completed(result)`: the job succeeded, `result` is not an error and its content is
///   `encoded` — only a projection of job truth writes it;
/// * `Failed { error }`: the job failed, was lost or needs attention, and `error` is
///   `encoded`;
/// * `Cancelled`: always — either the projection of a cancelled job, or the wait itself
///   was cancelled and claims nothing about the job;
/// * `Terminated`, `Aborted`, `Retired`: always — lifecycle closures of the binding that
///   say nothing about the job.
#[must_use]
pub fn wait_outcome_accepts_job_terminal(
    outcome: Option<&OperationTerminalOutcome>,
    terminal: &JobTerminalResult,
    encoded: &str,
) -> bool {
    let Some(outcome) = outcome else {
        return false;
    };
    match outcome {
        OperationTerminalOutcome::Completed(result) => {
            matches!(terminal, JobTerminalResult::Succeeded { .. })
                && !result.is_error
                && result.content == encoded
        }
        OperationTerminalOutcome::Failed { error } => {
            matches!(
                terminal,
                JobTerminalResult::Failed { .. }
                    | JobTerminalResult::WorkerLost
                    | JobTerminalResult::NeedsAttention { .. }
            ) && error == encoded
        }
        OperationTerminalOutcome::Cancelled { .. }
        | OperationTerminalOutcome::Terminated { .. }
        | OperationTerminalOutcome::Aborted { .. }
        | OperationTerminalOutcome::Retired => true,
    }
}
