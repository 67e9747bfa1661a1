//! The total, deterministic mapping from a run's status to a job's terminal result, and the
//! failure reasons a job's graph uses to say *how* it failed.
//!
//! | run status | job terminal result |
//! |---|---|
//! | `running`, `waiting` | none (not terminal) |
//! | `done` | `Succeeded { result_ref }`: the run output's `result_ref` when it is a valid id, else `None` |
//! | `cancelled` | `Cancelled` |
//! | `failed`, one node failed with reason `job_terminal:worker_lost` | `WorkerLost` |
//! | `failed`, one node failed with `job_terminal:needs_attention:{reason}` | `NeedsAttention { reason }` |
//! | `failed`, one node failed with `job_terminal:failed:{code}` | `Failed { code, detail_ref: None }` |
//! | `failed`, anything else | `Failed { code: <the run's failure code>, detail_ref: None }` |
//!
//! A code that is not a valid [`JobFailureCode`] falls back to [`FALLBACK_FAILURE_CODE`], so
//! every failed run maps to exactly one result.

use serde_json::Value;

use docket_core::model::{Failure, Run, RunStatus};

use crate::ports::ids::{JobFailureCode, JobResultRef};
use crate::ports::job::JobTerminalResult;

/// The prefix of a failure reason that carries a job's terminal class.
pub const SIGNAL_PREFIX: &str = "job_terminal:";

/// The failure code used when the run's own code is not a valid job failure code.
pub const FALLBACK_FAILURE_CODE: &str = "run_failed";

/// The reason a job's node fails with (`NodeOutcome::Fail(reason)`) to end the job as
/// worker-lost.
#[must_use]
pub fn worker_lost_reason() -> String {
    format!("{SIGNAL_PREFIX}worker_lost")
}

/// The reason a job's node fails with to end the job as needing attention.
#[must_use]
pub fn needs_attention_reason(reason: &JobFailureCode) -> String {
    format!("{SIGNAL_PREFIX}needs_attention:{reason}")
}

/// The reason a job's node fails with to end the job as failed with `code`.
#[must_use]
pub fn failed_reason(code: &JobFailureCode) -> String {
    format!("{SIGNAL_PREFIX}failed:{code}")
}

/// The job's terminal result for `run`, or `None` while it is not terminal.
#[must_use]
pub fn terminal_result_of(run: &Run) -> Option<JobTerminalResult> {
    match run.status {
        RunStatus::Done => Some(JobTerminalResult::Succeeded {
            result_ref: run
                .output
                .as_ref()
                .and_then(|output| output.get("result_ref"))
                .and_then(Value::as_str)
                .and_then(|text| JobResultRef::new(text).ok()),
        }),
        RunStatus::Cancelled => Some(JobTerminalResult::Cancelled),
        RunStatus::Failed => Some(failed(run.failure.as_ref())),
        _ => None,
    }
}

fn code(text: &str) -> JobFailureCode {
    JobFailureCode::new(text).unwrap_or_else(|_| JobFailureCode::from_static(FALLBACK_FAILURE_CODE))
}

fn failed(failure: Option<&Failure>) -> JobTerminalResult {
    let Some(failure) = failure else {
        return JobTerminalResult::Failed {
            code: code(FALLBACK_FAILURE_CODE),
            detail_ref: None,
        };
    };
    if let Some(signal) = signal_of(failure) {
        if signal == "worker_lost" {
            return JobTerminalResult::WorkerLost;
        }
        if let Some(reason) = signal.strip_prefix("needs_attention:") {
            return JobTerminalResult::NeedsAttention {
                reason: code(reason),
            };
        }
        if let Some(failure_code) = signal.strip_prefix("failed:") {
            return JobTerminalResult::Failed {
                code: code(failure_code),
                detail_ref: None,
            };
        }
    }
    JobTerminalResult::Failed {
        code: code(&failure.code),
        detail_ref: None,
    }
}

/// The signal after [`SIGNAL_PREFIX`] in the reason of the single failed node, if any.
fn signal_of(failure: &Failure) -> Option<&str> {
    let node = failure.node_id.as_deref()?;
    let reason = failure.details.get("errors")?.get(node)?.as_str()?;
    reason.strip_prefix(SIGNAL_PREFIX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn failure(code: &str, node: Option<&str>, reason: &str) -> Failure {
        let mut details = serde_json::Map::new();
        if let Some(node) = node {
            details.insert("errors".into(), json!({ node: reason }));
        }
        Failure {
            code: code.into(),
            message: "m".into(),
            node_id: node.map(str::to_owned),
            details,
        }
    }

    #[test]
    fn failures_map_totally_and_by_their_signal() {
        let c = |t: &str| JobFailureCode::new(t).expect("valid");
        let cases = [
            (
                failure("node_failed", Some("n"), &worker_lost_reason()),
                JobTerminalResult::WorkerLost,
            ),
            (
                failure(
                    "node_failed",
                    Some("n"),
                    &needs_attention_reason(&c("creds")),
                ),
                JobTerminalResult::NeedsAttention { reason: c("creds") },
            ),
            (
                failure("node_failed", Some("n"), &failed_reason(&c("scan_failed"))),
                JobTerminalResult::Failed {
                    code: c("scan_failed"),
                    detail_ref: None,
                },
            ),
            (
                failure("node_failed", Some("n"), "boom"),
                JobTerminalResult::Failed {
                    code: c("node_failed"),
                    detail_ref: None,
                },
            ),
            (
                failure("max_supersteps_exceeded", None, ""),
                JobTerminalResult::Failed {
                    code: c("max_supersteps_exceeded"),
                    detail_ref: None,
                },
            ),
            (
                failure("node_failed", Some("n"), "job_terminal:needs_attention:"),
                JobTerminalResult::NeedsAttention {
                    reason: c(FALLBACK_FAILURE_CODE),
                },
            ),
        ];
        for (f, expected) in cases {
            assert_eq!(failed(Some(&f)), expected, "{f:?}");
        }
        assert_eq!(
            failed(None),
            JobTerminalResult::Failed {
                code: c(FALLBACK_FAILURE_CODE),
                detail_ref: None
            }
        );
    }
}
