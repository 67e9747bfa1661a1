//! The checkpoint metadata envelope (`docs/runs-and-moments.md`, “Checkpoints and the envelope”),
//! identical to the final `checkpoint_committed` event's metadata.

use serde_json::{json, Value};

use crate::model::{
    idempotency_key, CheckpointType, Event, EventType, PendingWriteKind, Run, ValueMap,
};
use crate::runtime::moment::{Disposition, PendingAttempt};

/// Builds the envelope of a moment proposing `run` (counters already advanced).
#[must_use]
pub fn envelope(
    run: &Run,
    checkpoint_type: CheckpointType,
    events: &[Event],
    disposition: Disposition,
    pending: &[PendingAttempt],
) -> ValueMap {
    let mut out = ValueMap::new();
    out.insert("checkpoint_seq".into(), json!(run.checkpoint_seq));
    out.insert("checkpoint_type".into(), json!(checkpoint_type.as_str()));
    out.insert("graph_step".into(), json!(run.step));
    let (wake, reason) = park_fields(disposition);
    out.insert("wake_disposition".into(), wake);
    out.insert("park_reason".into(), reason);
    out.insert("active_superstep".into(), active_superstep(run));
    out.insert("node_attempts".into(), node_attempts(run, events, pending));
    out
}

/// The `wake_disposition` and `park_reason` envelope values of `disposition`.
#[must_use]
pub fn park_fields(disposition: Disposition) -> (Value, Value) {
    let reason = match disposition {
        Disposition::Continue => Value::Null,
        Disposition::Park { reason, .. } => json!(reason.as_str()),
    };
    (json!(disposition.wake_disposition()), reason)
}

fn active_superstep(run: &Run) -> Value {
    if run.active_tasks.is_empty() && run.pending_writes.is_empty() {
        return Value::Null;
    }
    let mut tasks: Vec<_> = run.active_tasks.values().collect();
    tasks.sort_by(|a, b| (&a.node_id, &a.task_id).cmp(&(&b.node_id, &b.task_id)));
    let mut pending: Vec<_> = run.pending_writes.iter().collect();
    pending.sort_by(|a, b| (&a.node_id, &a.task_id).cmp(&(&b.node_id, &b.task_id)));
    json!({
        "graph_step": run.step,
        "tasks": tasks.iter().map(|t| json!({
            "task_id": t.task_id,
            "node_id": t.node_id,
            "scheduled_attempt": t.attempt,
            "idempotency_key": t.idempotency_key,
        })).collect::<Vec<_>>(),
        "pending_attempts": pending.iter().map(|w| json!({
            "task_id": w.task_id,
            "node_id": w.node_id,
            "attempted": w.attempt,
            "kind": match w.write {
                PendingWriteKind::Update { .. } => "update",
                PendingWriteKind::Interrupt { .. } => "interrupt",
            },
            "idempotency_key": idempotency_key(&w.task_id, w.attempt),
        })).collect::<Vec<_>>(),
    })
}

fn node_attempts(run: &Run, events: &[Event], pending: &[PendingAttempt]) -> Value {
    let mut out = Vec::new();
    let mut covered = Vec::new();
    for event in events {
        let outcome = match event.event_type {
            EventType::NodeCompleted => "completed",
            EventType::NodeFailed => "failed",
            EventType::InterruptRequested => "interrupted",
            _ => continue,
        };
        let (Some(task_id), Some(attempt)) = (
            event.task_id.as_deref(),
            event.payload.get("attempt").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let next = run
            .active_tasks
            .get(task_id)
            .map_or(Value::Null, |t| json!(t.attempt));
        covered.push((task_id.to_owned(), attempt));
        out.push(json!({
            "task_id": task_id,
            "node_id": event.node_id,
            "attempt": attempt,
            "idempotency_key": idempotency_key(task_id, u32::try_from(attempt).unwrap_or(u32::MAX)),
            "outcome": outcome,
            "next_scheduled_attempt": next,
        }));
    }
    for p in pending {
        if covered.contains(&(p.task_id.clone(), u64::from(p.attempted))) {
            continue;
        }
        out.push(json!({
            "task_id": p.task_id,
            "node_id": p.node_id,
            "attempt": p.attempted,
            "idempotency_key": p.idempotency_key,
            "outcome": format!("pending_{}", p.kind),
            "next_scheduled_attempt": Value::Null,
        }));
    }
    Value::Array(out)
}
