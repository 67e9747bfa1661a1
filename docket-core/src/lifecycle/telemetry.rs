//! The lifecycle's spans and events, named as in the telemetry catalogue (`docs/engine.md`,
//! “Telemetry”). They carry ids, sequences, types and outcomes; never claim tokens or payloads.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::model::{CheckpointType, Run, RunId};
use crate::runtime::{Disposition, Moment, ParkKind, ParkReason};
use crate::store::{BatchedCommit, RunStore, StoreError};

static NEXT_LIFECYCLE_REF: AtomicU64 = AtomicU64::new(1);

/// `docket.lifecycle.transition` for one `start | moment | moments | signal`.
pub(super) fn transition_span(operation: &'static str, run_id: &RunId) -> Span {
    tracing::info_span!(
        "docket.lifecycle.transition",
        operation,
        lifecycle_ref = NEXT_LIFECYCLE_REF.fetch_add(1, Ordering::Relaxed),
        run_id = %run_id,
        result = Empty,
    )
}

/// The result kind of a failed store call.
pub(super) fn error_kind(error: &StoreError) -> &'static str {
    match error {
        StoreError::StaleCheckpoint => "stale_fence",
        _ => "error",
    }
}

/// The result kind of a store call.
pub(super) fn result_kind<T>(result: &Result<T, StoreError>) -> &'static str {
    result.as_ref().map_or_else(error_kind, |_| "ok")
}

/// Runs one store call inside a `docket.store.operation` span that records its result kind.
pub(super) async fn store_operation<T, F>(operation: &'static str, call: F) -> Result<T, StoreError>
where
    F: Future<Output = Result<T, StoreError>>,
{
    let span = tracing::debug_span!("docket.store.operation", operation, result = Empty);
    let result = call.instrument(span.clone()).await;
    span.record("result", result_kind(&result));
    result
}

/// Runs one batch of claimed commits inside a `docket.store.operation` span that records the
/// kind of its first failed member (`ok` when every member landed).
pub(super) async fn store_operation_all<S>(
    operation: &'static str,
    store: &S,
    members: Vec<BatchedCommit>,
) -> Vec<Result<Run, StoreError>>
where
    S: RunStore + ?Sized,
{
    let span = tracing::debug_span!("docket.store.operation", operation, result = Empty);
    let outcomes = store
        .commit_claimed_batch(members)
        .instrument(span.clone())
        .await;
    let kind = outcomes
        .iter()
        .find(|o| o.is_err())
        .map_or("ok", result_kind);
    span.record("result", kind);
    outcomes
}

/// The `disposition` label of `docket.lifecycle.committed`.
fn disposition_label(disposition: Disposition) -> &'static str {
    match disposition {
        Disposition::Continue => "continue",
        Disposition::Park { kind, reason } => match (kind, reason) {
            (ParkKind::At(_), ParkReason::RetryBackoff) => "retry",
            (ParkKind::At(_), _) => "timer",
            (ParkKind::Immediate, ParkReason::DrainBudget) => "budget",
            (ParkKind::Immediate, _) => "immediate",
            (ParkKind::External, _) => "external",
            (ParkKind::Terminal, _) => "terminal",
        },
    }
}

/// `docket.lifecycle.committed`, then one `docket.run.event` per run event.
pub(super) fn committed(moment: &Moment) {
    let retry_delay_ms = match (moment.checkpoint_type, moment.disposition) {
        (
            CheckpointType::RetryScheduled,
            Disposition::Park {
                kind: ParkKind::At(at),
                ..
            },
        ) => Some(at.millis_since(moment.proposed_at)),
        _ => None,
    };
    tracing::debug!(
        run_id = %moment.run.id,
        checkpoint_seq = moment.run.checkpoint_seq,
        step = moment.run.step,
        checkpoint_type = %moment.checkpoint_type,
        disposition = disposition_label(moment.disposition),
        retry_delay_ms,
        result = "committed",
        "docket.lifecycle.committed"
    );
    for event in &moment.events {
        tracing::trace!(
            run_id = %event.run_id,
            seq = event.seq,
            event_type = %event.event_type,
            node_id = event.node_id.as_deref(),
            "docket.run.event"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamp;

    #[test]
    fn disposition_labels_follow_the_telemetry_catalogue() {
        let park = |kind, reason| Disposition::Park { kind, reason };
        let at = ParkKind::At(Timestamp::from_millis(5));
        let cases = [
            (Disposition::Continue, "continue"),
            (park(at, ParkReason::RetryBackoff), "retry"),
            (park(at, ParkReason::InterruptResolved), "timer"),
            (park(ParkKind::Immediate, ParkReason::DrainBudget), "budget"),
            (
                park(ParkKind::Immediate, ParkReason::InterruptResolved),
                "immediate",
            ),
            (
                park(ParkKind::External, ParkReason::AwaitingInterrupts),
                "external",
            ),
            (
                park(ParkKind::Terminal, ParkReason::RunCancelled),
                "terminal",
            ),
        ];
        for (disposition, label) in cases {
            assert_eq!(disposition_label(disposition), label, "{disposition:?}");
        }
    }

    #[test]
    fn stale_fences_are_their_own_result_kind() {
        assert_eq!(result_kind::<()>(&Ok(())), "ok");
        assert_eq!(
            result_kind::<()>(&Err(StoreError::StaleCheckpoint)),
            "stale_fence"
        );
        assert_eq!(result_kind::<()>(&Err(StoreError::Conflict)), "error");
    }
}
