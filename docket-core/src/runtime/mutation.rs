//! Signal mutations (`docs/runs-and-moments.md`, “Interrupts and cancellation”): resolving an
//! interrupt and cancelling a run, as pure functions of the freshly fetched run.

use serde_json::{json, Value};

use super::barrier::apply_field_write;
use super::error::{ErrorKind, Phase, RuntimeError};
use super::moment::{Disposition, Mutation, ParkKind, ParkReason};
use super::plan::check_graph;
use super::sequencing::{sequence, EventEntry};
use super::terminal::{clear_active_superstep, terminal};
use super::writes::validate_field_write;
use crate::graph::runtime_graph::state_channel;
use crate::graph::{RuntimeGraph, Schema};
use crate::model::{
    check_portable, excerpt, CheckpointType, EventType, InterruptStatus, Run, RunStatus, Timestamp,
};

/// Resolves open interrupt `interrupt_id` of `run` with `value` at `now`.
///
/// The value is written to the interrupt's resume field through the field's reducer, the
/// field is marked changed, the interrupt becomes resolved and the run running again.
///
/// # Errors
/// Checked in this order: [`ErrorKind::InactiveRun`] (terminal), [`ErrorKind::InvalidRun`]
/// (`created`), [`ErrorKind::AlreadyResolved`], [`ErrorKind::NotFound`],
/// [`ErrorKind::InvalidInput`] (not portable, fails the interrupt's schema, or not a valid
/// write of the resume field); [`ErrorKind::GraphMismatch`] when `run` is not bound to `rtg`.
pub fn resolve_interrupt(
    rtg: &RuntimeGraph,
    run: &Run,
    interrupt_id: &str,
    value: Value,
    now: Timestamp,
) -> Result<Mutation, RuntimeError> {
    check_graph(rtg, run, Phase::Resolve)?;
    if run.status.is_terminal() {
        return Err(RuntimeError::new(
            ErrorKind::InactiveRun,
            Phase::Resolve,
            format!("run {} is {}", run.id, run.status),
        ));
    }
    if run.status == RunStatus::Created {
        return Err(RuntimeError::new(
            ErrorKind::InvalidRun,
            Phase::Resolve,
            "a created run has no interrupts",
        ));
    }
    let interrupt = match run.interrupts.get(interrupt_id) {
        Some(i) if i.status == InterruptStatus::Resolved => {
            return Err(RuntimeError::new(
                ErrorKind::AlreadyResolved,
                Phase::Resolve,
                format!("interrupt {:?} is already resolved", excerpt(interrupt_id)),
            ))
        }
        Some(i) => i,
        None => {
            return Err(RuntimeError::new(
                ErrorKind::NotFound,
                Phase::Resolve,
                format!("interrupt {:?} does not exist", excerpt(interrupt_id)),
            ))
        }
    };
    let invalid = |reasons: Vec<String>| {
        RuntimeError::new(
            ErrorKind::InvalidInput,
            Phase::Resolve,
            format!("the resolution is invalid: {}", reasons.join("; ")),
        )
        .with_node(interrupt.node_id.as_str())
        .with_detail("reasons", json!(reasons))
    };
    check_portable(&value).map_err(|e| invalid(vec![e.to_string()]))?;
    if let Some(raw) = &interrupt.schema {
        let schema = Schema::parse(raw).map_err(&invalid)?;
        schema.validate(&value).map_err(&invalid)?;
    }
    validate_field_write(rtg, &interrupt.resume_channel, &value).map_err(&invalid)?;

    let field = interrupt.resume_channel.clone();
    let node_id = interrupt.node_id.clone();
    let mut next = run.clone();
    apply_field_write(rtg, &mut next.channels, &field, std::iter::once(value));
    next.changed_channels.insert(state_channel(&field));
    if let Some(state) = next.interrupts.get_mut(interrupt_id) {
        state.status = InterruptStatus::Resolved;
        state.resolved_at = Some(now);
    }
    next.status = RunStatus::Running;
    next.updated_at = Some(now);
    let entries = vec![
        EventEntry::new(EventType::InterruptResolved, run.step)
            .node(node_id.as_str())
            .with("interrupt_id", interrupt_id)
            .with("resume_channel", field.as_str()),
        EventEntry::new(EventType::ChannelUpdated, run.step)
            .channel(state_channel(&field))
            .with("writers", json!([node_id])),
    ];
    // Wake at once unless every parked attempt waits for a future timer.
    let all_future = !next.active_tasks.is_empty()
        && next
            .active_tasks
            .keys()
            .all(|id| next.timers.get(id).is_some_and(|t| t.fires_at > now));
    let kind = if all_future {
        next.timers
            .values()
            .map(|t| t.fires_at)
            .min()
            .map_or(ParkKind::Immediate, ParkKind::At)
    } else {
        ParkKind::Immediate
    };
    Ok(Mutation::Commit(Box::new(sequence(
        next,
        CheckpointType::InterruptResolved,
        entries,
        Disposition::Park {
            kind,
            reason: ParkReason::InterruptResolved,
        },
        now,
        Vec::new(),
    ))))
}

/// Cancels `run` at `now`. Cancelling a cancelled run changes nothing.
///
/// # Errors
/// [`ErrorKind::InactiveRun`] for a done or failed run; [`ErrorKind::InvalidRun`] for a
/// `created` run.
pub fn cancel_run(run: &Run, now: Timestamp) -> Result<Mutation, RuntimeError> {
    match run.status {
        RunStatus::Cancelled => Ok(Mutation::Unchanged(Box::new(run.clone()))),
        RunStatus::Done | RunStatus::Failed => Err(RuntimeError::new(
            ErrorKind::InactiveRun,
            Phase::Cancel,
            format!("run {} is {}", run.id, run.status),
        )),
        RunStatus::Created => Err(RuntimeError::new(
            ErrorKind::InvalidRun,
            Phase::Cancel,
            "a created run cannot be cancelled",
        )),
        RunStatus::Running | RunStatus::Waiting => {
            let mut next = run.clone();
            next.status = RunStatus::Cancelled;
            next.finished_at = Some(now);
            next.updated_at = Some(now);
            clear_active_superstep(&mut next);
            Ok(Mutation::Commit(Box::new(sequence(
                next,
                CheckpointType::RunCancelled,
                vec![EventEntry::new(EventType::RunCancelled, run.step)],
                terminal(ParkReason::RunCancelled),
                now,
                Vec::new(),
            ))))
        }
    }
}
