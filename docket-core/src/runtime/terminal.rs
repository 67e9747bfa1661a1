//! Terminal moments (`docs/runs-and-moments.md`, “Terminal moments”): completion and failure.

use serde_json::{json, Value};

use super::moment::{Disposition, Moment, ParkKind, ParkReason};
use super::sequencing::{sequence, EventEntry};
use crate::graph::RuntimeGraph;
use crate::model::{CheckpointType, EventType, Failure, Run, RunStatus, Timestamp, ValueMap};

/// The completion moment: projects the declared outputs from committed channel values
/// (defaults are not projected: a never-written source yields `null`).
#[must_use]
pub fn completion_moment(rtg: &RuntimeGraph, run: &Run, now: Timestamp) -> Moment {
    let mut output = ValueMap::new();
    for out in rtg.outputs.values() {
        let value = run
            .channels
            .get(&out.source_channel)
            .map_or(Value::Null, |c| c.value.clone());
        output.insert(out.id.clone(), value);
    }
    let keys: Vec<&String> = output.keys().collect();
    let entry = EventEntry::new(EventType::RunCompleted, run.step).with("outputs", json!(keys));
    let mut next = run.clone();
    next.status = RunStatus::Done;
    next.output = Some(output);
    next.finished_at = Some(now);
    next.updated_at = Some(now);
    sequence(
        next,
        CheckpointType::RunCompleted,
        vec![entry],
        terminal(ParkReason::RunCompleted),
        now,
        Vec::new(),
    )
}

/// The failure moment: `leading` facts (e.g. `node_failed`) followed by `run_failed`; the
/// active superstep, parked results included, is discarded.
#[must_use]
pub fn failure_moment(
    run: &Run,
    failure: Failure,
    mut leading: Vec<EventEntry>,
    now: Timestamp,
) -> Moment {
    let mut payload = failure.details.clone();
    payload.insert("reason".into(), json!(failure.code));
    payload.insert("message".into(), json!(failure.message));
    let mut entry = EventEntry::new(EventType::RunFailed, run.step);
    entry.node_id.clone_from(&failure.node_id);
    entry.payload = payload;
    leading.push(entry);
    let mut next = run.clone();
    next.status = RunStatus::Failed;
    next.failure = Some(failure);
    next.finished_at = Some(now);
    next.updated_at = Some(now);
    clear_active_superstep(&mut next);
    sequence(
        next,
        CheckpointType::RunFailed,
        leading,
        terminal(ParkReason::RunFailed),
        now,
        Vec::new(),
    )
}

/// Drops the in-flight superstep: parked attempts, parked results and their timers.
pub fn clear_active_superstep(run: &mut Run) {
    run.active_tasks.clear();
    run.pending_writes.clear();
    run.timers.clear();
}

/// A terminal disposition for `reason`.
#[must_use]
pub fn terminal(reason: ParkReason) -> Disposition {
    Disposition::Park {
        kind: ParkKind::Terminal,
        reason,
    }
}
