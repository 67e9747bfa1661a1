//! The completion watch behind [`OpsLifecycleRegistry::await_completion`]: wake hints when
//! the backend has them, polling always.

use std::time::Duration;

use futures::StreamExt;

use super::error::OpsError;
use super::ids::{OperationId, SessionId};
use super::outcome::OperationTerminalOutcome;
use super::registry::OpsLifecycleRegistry;

/// The shortest pause between two re-reads.
const MIN_POLL: Duration = Duration::from_millis(1);

/// Waits until `id` is terminal for `owner` and returns its outcome.
///
/// The hint subscription is taken before the first read, so a transition that lands between
/// the read and the wait still wakes it; a closed hint stream falls back to polling alone.
///
/// # Errors
/// `NotFound` when the record is (or becomes) absent; read errors.
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn await_terminal<R>(
    registry: &R,
    owner: &SessionId,
    id: &OperationId,
    poll_interval: Duration,
) -> Result<OperationTerminalOutcome, OpsError>
where
    R: OpsLifecycleRegistry + ?Sized,
{
    let poll_interval = poll_interval.max(MIN_POLL);
    let mut hints = registry.operation_wakeups();
    loop {
        let Some(record) = registry.operation_snapshot(owner, id).await? else {
            return Err(OpsError::NotFound { id: *id });
        };
        if let Some(outcome) = record.terminal_outcome {
            return Ok(outcome);
        }
        match hints.as_mut() {
            Some(stream) => {
                tokio::select! {
                    hint = stream.next() => {
                        if hint.is_none() {
                            hints = None;
                        }
                    }
                    () = tokio::time::sleep(poll_interval) => {}
                }
            }
            None => tokio::time::sleep(poll_interval).await,
        }
    }
}
