//! Durable validity of a run document (`docs/runs-and-moments.md`, “Durable validity”).
//!
//! Every store runs [`validate_durable`] before writing a run and after decoding one, so a
//! document that breaks an invariant is refused on the way in (`InvalidTransition`) and reported
//! as corrupt on the way out (`Corrupt`), never silently stored or returned.

use std::collections::BTreeSet;

use super::run::{
    idempotency_key, task_id, InterruptStatus, PendingWriteKind, Run, RunStatus, TaskStatus,
};
use super::value::{check_portable, check_portable_map, snapshot_hash};
use crate::graph::Schema;

/// The largest sequence number any backend accepts (PostgreSQL `bigint` is signed).
pub const MAX_SEQ: u64 = i64::MAX as u64;

/// Why a run document is not durable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("run document is not durable: {reason}")]
pub struct InvalidRun {
    /// The first broken rule.
    pub reason: String,
}

fn bad(reason: impl Into<String>) -> Result<(), InvalidRun> {
    Err(InvalidRun {
        reason: reason.into(),
    })
}

/// Checks every durable invariant of `run`.
///
/// # Errors
/// [`InvalidRun`] naming the first broken rule.
pub fn validate_durable(run: &Run) -> Result<(), InvalidRun> {
    validate_header(run)?;
    validate_collections(run)?;
    validate_active_superstep(run)?;
    validate_interrupts(run)
}

fn validate_header(run: &Run) -> Result<(), InvalidRun> {
    if !run.status.is_durable() {
        return bad("status `created` cannot be stored");
    }
    for (name, value) in [
        ("checkpoint_seq", run.checkpoint_seq),
        ("event_seq", run.event_seq),
        ("step", run.step),
    ] {
        if value > MAX_SEQ {
            return bad(format!("{name} {value} exceeds the maximum {MAX_SEQ}"));
        }
    }
    if run.started_at.is_none() {
        return bad("started_at is missing");
    }
    if run.updated_at.is_none() {
        return bad("updated_at is missing");
    }
    if run.output.is_some() && run.status != RunStatus::Done {
        return bad("output is only allowed on a done run");
    }
    if run.failure.is_some() != (run.status == RunStatus::Failed) {
        return bad("failure must be present exactly when the run failed");
    }
    if run.finished_at.is_some() != run.status.is_terminal() {
        return bad("finished_at must be present exactly for terminal statuses");
    }
    check_map("input", &run.input)?;
    check_map("metadata", &run.metadata)?;
    if let Some(output) = &run.output {
        check_map("output", output)?;
    }
    if let Some(failure) = &run.failure {
        if failure.code.is_empty() || failure.message.is_empty() {
            return bad("failure code and message must be non-empty");
        }
        check_map("failure.details", &failure.details)?;
    }
    Ok(())
}

fn check_map(name: &str, map: &super::value::ValueMap) -> Result<(), InvalidRun> {
    check_portable_map(map).map_err(|e| InvalidRun {
        reason: format!("{name}: {e}"),
    })
}

fn validate_collections(run: &Run) -> Result<(), InvalidRun> {
    for (key, channel) in &run.channels {
        if key != &channel.channel_id {
            return bad(format!("channel key {key:?} differs from its channel_id"));
        }
        check_portable(&channel.value).map_err(|e| InvalidRun {
            reason: format!("channel {key}: {e}"),
        })?;
        if !channel.barrier_seen.windows(2).all(|w| w[0] < w[1]) {
            return bad(format!(
                "channel {key}: barrier_seen must be sorted and unique"
            ));
        }
    }
    // Timers need no check here: `TimerKind` has only `Retry` and `fires_at` is required, so
    // "only retry timers, each with a deadline" holds by construction.
    Ok(())
}

fn validate_active_superstep(run: &Run) -> Result<(), InvalidRun> {
    let busy =
        !run.active_tasks.is_empty() || !run.pending_writes.is_empty() || !run.timers.is_empty();
    if busy && run.status != RunStatus::Running {
        return bad("an active superstep is only allowed on a running run");
    }
    let task_ids: BTreeSet<&String> = run.active_tasks.keys().collect();
    let timer_ids: BTreeSet<&String> = run.timers.keys().collect();
    if task_ids != timer_ids {
        return bad("active task ids and timer ids differ");
    }
    if !run.pending_writes.is_empty() && run.active_tasks.is_empty() {
        return bad("pending writes require at least one active task");
    }
    let mut nodes = BTreeSet::new();
    for (key, task) in &run.active_tasks {
        let expected_id = task_id(&run.id, run.step, &task.node_id);
        if key != &task.task_id || task.task_id != expected_id {
            return bad(format!("active task {key:?} is not {expected_id:?}"));
        }
        if task.step != run.step {
            return bad(format!("active task {key:?} belongs to another step"));
        }
        if task.status != TaskStatus::RetryScheduled {
            return bad(format!("active task {key:?} is not retry_scheduled"));
        }
        if task.attempt < 1 || task.attempt as usize != task.failures.len() + 1 {
            return bad(format!(
                "active task {key:?} attempt does not follow its failures"
            ));
        }
        if task
            .failures
            .iter()
            .enumerate()
            .any(|(i, f)| f.attempt as usize != i + 1)
        {
            return bad(format!(
                "active task {key:?} failures are not numbered 1..n"
            ));
        }
        if task.idempotency_key != idempotency_key(&task.task_id, task.attempt) {
            return bad(format!("active task {key:?} has a wrong idempotency key"));
        }
        if task.started_at.is_some() || task.deadline_at.is_some() {
            return bad(format!("active task {key:?} carries transient timestamps"));
        }
        check_map("active task snapshot", &task.snapshot)?;
        if task.input_hash != snapshot_hash(&task.snapshot) {
            return bad(format!(
                "active task {key:?} input_hash does not match its snapshot"
            ));
        }
        if !nodes.insert(task.node_id.clone()) {
            return bad(format!(
                "node {:?} appears twice in the superstep",
                task.node_id
            ));
        }
    }
    for write in &run.pending_writes {
        let expected_id = task_id(&run.id, run.step, &write.node_id);
        if write.task_id != expected_id || write.attempt < 1 {
            return bad(format!("pending write {:?} is malformed", write.task_id));
        }
        match &write.write {
            PendingWriteKind::Update { value } => check_map("pending write", value)?,
            PendingWriteKind::Interrupt { interrupt } => {
                if interrupt
                    .node_id
                    .as_ref()
                    .is_some_and(|n| n != &write.node_id)
                {
                    return bad("pending interrupt belongs to another node");
                }
                check_schema(interrupt.schema.as_ref())?;
                check_map("pending interrupt metadata", &interrupt.metadata)?;
            }
        }
        if !nodes.insert(write.node_id.clone()) {
            return bad(format!(
                "node {:?} appears twice in the superstep",
                write.node_id
            ));
        }
    }
    Ok(())
}

fn validate_interrupts(run: &Run) -> Result<(), InvalidRun> {
    for (key, interrupt) in &run.interrupts {
        if key != &interrupt.id || interrupt.id.is_empty() {
            return bad(format!("interrupt key {key:?} differs from its id"));
        }
        let resolved = interrupt.status == InterruptStatus::Resolved;
        if resolved != interrupt.resolved_at.is_some() {
            return bad(format!(
                "interrupt {key:?}: resolved_at must match its status"
            ));
        }
        check_schema(interrupt.schema.as_ref())?;
        check_map("interrupt metadata", &interrupt.metadata)?;
    }
    Ok(())
}

fn check_schema(schema: Option<&serde_json::Value>) -> Result<(), InvalidRun> {
    match schema {
        None => Ok(()),
        Some(v) => Schema::parse(v).map(|_| ()).map_err(|reasons| InvalidRun {
            reason: format!("invalid interrupt schema: {}", reasons.join("; ")),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ids::{GraphHash, GraphId, RunId};
    use crate::model::run::{Failure, TaskState, TimerKind, TimerState};
    use crate::model::time::Timestamp;
    use crate::model::value::ValueMap;

    fn running() -> Run {
        let mut run = Run::new_created(
            RunId::new("r1").expect("id"),
            GraphId::new("g").expect("id"),
            GraphHash::new("h").expect("id"),
            ValueMap::new(),
            ValueMap::new(),
        );
        run.status = RunStatus::Running;
        run.started_at = Some(Timestamp::from_millis(1));
        run.updated_at = Some(Timestamp::from_millis(1));
        run.checkpoint_seq = 1;
        run
    }

    fn parked_task(run: &Run) -> TaskState {
        let id = task_id(&run.id, run.step, "a");
        TaskState {
            task_id: id.clone(),
            node_id: "a".into(),
            step: run.step,
            attempt: 1,
            status: TaskStatus::RetryScheduled,
            input_hash: snapshot_hash(&ValueMap::new()),
            idempotency_key: idempotency_key(&id, 1),
            snapshot: ValueMap::new(),
            source_versions: Default::default(),
            started_at: None,
            deadline_at: None,
            failures: vec![],
            metadata: ValueMap::new(),
        }
    }

    #[test]
    fn a_fresh_running_run_is_durable_and_created_is_not() {
        assert!(validate_durable(&running()).is_ok());
        let mut created = running();
        created.status = RunStatus::Created;
        assert!(validate_durable(&created).is_err());
    }

    #[test]
    fn terminal_payload_rules() {
        let mut done = running();
        done.status = RunStatus::Done;
        assert!(validate_durable(&done).is_err(), "finished_at missing");
        done.finished_at = done.updated_at;
        done.output = Some(ValueMap::new());
        assert!(validate_durable(&done).is_ok());
        let mut failed = done.clone();
        failed.status = RunStatus::Failed;
        assert!(
            validate_durable(&failed).is_err(),
            "output on failed, no failure"
        );
        failed.output = None;
        failed.failure = Some(Failure {
            code: "node_failed".into(),
            message: "boom".into(),
            node_id: None,
            details: ValueMap::new(),
        });
        assert!(validate_durable(&failed).is_ok());
    }

    #[test]
    fn reserved_keys_and_huge_seqs_are_rejected() {
        let mut run = running();
        run.input.insert("$x".into(), json!(1));
        assert!(validate_durable(&run).is_err());
        let mut run = running();
        run.checkpoint_seq = u64::MAX;
        assert!(validate_durable(&run).is_err());
    }

    #[test]
    fn active_superstep_coherence() {
        let mut run = running();
        let task = parked_task(&run);
        run.active_tasks.insert(task.task_id.clone(), task.clone());
        assert!(validate_durable(&run).is_err(), "timer missing");
        run.timers.insert(
            task.task_id.clone(),
            TimerState {
                kind: TimerKind::Retry,
                fires_at: Timestamp::from_millis(5),
            },
        );
        assert!(validate_durable(&run).is_ok());
        let mut wrong_hash = run.clone();
        if let Some(t) = wrong_hash.active_tasks.values_mut().next() {
            t.input_hash = "00".into();
        }
        assert!(validate_durable(&wrong_hash).is_err());
        let mut waiting = run.clone();
        waiting.status = RunStatus::Waiting;
        assert!(validate_durable(&waiting).is_err());
    }
}
