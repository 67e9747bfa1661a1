//! The retry park (`docs/runs-and-moments.md`, “Retry park”): the superstep stays open, completed
//! siblings wait as pending writes and each retrying task is parked durably behind its backoff
//! timer.

use super::activation::Activation;
use super::moment::{Disposition, Moment, ParkKind, ParkReason, PendingAttempt};
use super::sequencing::sequence;
use super::settle::node_failed;
use crate::model::{
    idempotency_key, CheckpointType, PendingWrite, PendingWriteKind, Run, TimerKind, TimerState,
    Timestamp,
};

/// Parks the superstep of `run`: `finals` (validated results, node-ordered) become pending
/// writes, `retries` (node-ordered, with their failure reasons) become parked next attempts.
#[must_use]
pub fn retry_park(
    run: &Run,
    finals: Vec<PendingWrite>,
    retries: &[(&Activation, String)],
    now: Timestamp,
) -> Moment {
    let mut next = run.clone();
    let mut pending = Vec::with_capacity(finals.len());
    for write in finals {
        next.active_tasks.remove(&write.task_id);
        next.timers.remove(&write.task_id);
        pending.push(PendingAttempt {
            task_id: write.task_id.clone(),
            node_id: write.node_id.clone(),
            attempted: write.attempt,
            kind: match write.write {
                PendingWriteKind::Update { .. } => "update".into(),
                PendingWriteKind::Interrupt { .. } => "interrupt".into(),
            },
            idempotency_key: idempotency_key(&write.task_id, write.attempt),
        });
        next.pending_writes.push(write);
    }
    let mut entries = Vec::with_capacity(retries.len());
    for (activation, reason) in retries {
        let task = activation.parked_next(reason);
        next.timers.insert(
            task.task_id.clone(),
            TimerState {
                kind: TimerKind::Retry,
                fires_at: now
                    .add_millis(i64::try_from(activation.retry.backoff_ms).unwrap_or(i64::MAX)),
            },
        );
        next.active_tasks.insert(task.task_id.clone(), task);
        entries.push(node_failed(
            run.step,
            &activation.node_id,
            &activation.task_id,
            activation.attempt,
            reason,
            false,
        ));
    }
    next.updated_at = Some(now);
    let wake = next
        .timers
        .values()
        .map(|t| t.fires_at)
        .min()
        .unwrap_or(now);
    sequence(
        next,
        CheckpointType::RetryScheduled,
        entries,
        Disposition::Park {
            kind: ParkKind::At(wake),
            reason: ParkReason::RetryBackoff,
        },
        now,
        pending,
    )
}
