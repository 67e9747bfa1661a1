//! The update barrier (`docs/runs-and-moments.md`, “Update barrier”): commits the merged writes of
//! a settled superstep, fires edges, registers interrupts and advances `step`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::config::{IdGenerator, IdKind};
use super::error::{ErrorKind, Phase, RuntimeError};
use super::moment::{Disposition, Moment, ParkKind, ParkReason};
use super::plan::candidates;
use super::sequencing::{sequence, EventEntry};
use super::state_view::current_value;
use super::terminal::{clear_active_superstep, failure_moment};
use super::triggers::fire_after_barrier;
use crate::graph::runtime_graph::state_channel;
use crate::graph::{Channel, RuntimeGraph};
use crate::model::ids::check_id;
use crate::model::{
    ChannelState, CheckpointType, EventType, Failure, InterruptState, InterruptStatus,
    PendingWrite, PendingWriteKind, Run, RunStatus, Timestamp, ValueMap,
};

/// How many times a colliding generated interrupt id is re-drawn before giving up.
const MAX_ID_DRAWS: usize = 16;

/// Commits `writes` (validated, sorted by node id) as the barrier of `run`'s superstep.
///
/// # Errors
/// [`ErrorKind::InvalidOptions`] when `ids` cannot mint a valid, unused interrupt id.
pub fn barrier(
    rtg: &RuntimeGraph,
    run: &Run,
    writes: Vec<PendingWrite>,
    now: Timestamp,
    ids: &dyn IdGenerator,
) -> Result<Moment, RuntimeError> {
    let mut channels = run.channels.clone();
    // 1. State writes through reducers, writers in node order.
    let mut by_field: BTreeMap<String, Vec<(&str, &Value)>> = BTreeMap::new();
    let mut completed = BTreeSet::new();
    let mut interrupting = Vec::new();
    for write in &writes {
        match &write.write {
            PendingWriteKind::Update { value } => {
                completed.insert(write.node_id.clone());
                for (field, v) in value {
                    by_field
                        .entry(field.clone())
                        .or_default()
                        .push((write.node_id.as_str(), v));
                }
            }
            PendingWriteKind::Interrupt { interrupt } => interrupting.push((write, interrupt)),
        }
    }
    for (field, items) in &by_field {
        apply_field_write(
            rtg,
            &mut channels,
            field,
            items.iter().map(|(_, v)| (*v).clone()),
        );
    }
    let changed: BTreeSet<String> = by_field.keys().cloned().collect();

    // 2. Edges of completed nodes, barrier bookkeeping, then guards.
    let fired = match fire_after_barrier(rtg, &mut channels, &completed, &changed) {
        Ok(fired) => fired,
        Err(failure) => {
            let mut details = ValueMap::new();
            details.insert("edge_id".into(), json!(failure.edge_id));
            details.insert("reasons".into(), json!(failure.reasons));
            let failure = Failure {
                code: "guard_evaluation_failed".into(),
                message: format!(
                    "the guard of edge {:?} could not be evaluated: {}",
                    failure.edge_id,
                    failure.reasons.join("; ")
                ),
                node_id: None,
                details,
            };
            return Ok(failure_moment(run, failure, Vec::new(), now));
        }
    };
    let triggered: BTreeSet<String> = fired
        .to_nodes
        .iter()
        .filter_map(|(edge, _)| rtg.edges.get(edge).map(|e| e.channel_id.clone()))
        .collect();

    // 3. Activations of the previous barrier are visible for one step only.
    for channel_id in &run.changed_channels {
        if triggered.contains(channel_id) {
            continue;
        }
        if let (Some(Channel::Ephemeral { .. }), Some(state)) =
            (rtg.channels.get(channel_id), channels.get_mut(channel_id))
        {
            state.value = Value::Null;
        }
    }

    // 4. Interrupts.
    let mut interrupts = run.interrupts.clone();
    let mut requested = Vec::new();
    for (write, interrupt) in &interrupting {
        let id = match &interrupt.id {
            Some(id) => id.clone(),
            None => fresh_interrupt_id(ids, &interrupts)?,
        };
        interrupts.insert(
            id.clone(),
            InterruptState {
                id: id.clone(),
                node_id: write.node_id.clone(),
                status: InterruptStatus::Open,
                resume_channel: interrupt.resume_channel.clone(),
                schema: interrupt.schema.clone(),
                created_at: now,
                resolved_at: None,
                metadata: interrupt.metadata.clone(),
            },
        );
        requested.push((id, *write, interrupt.resume_channel.clone()));
    }
    requested.sort_by(|a, b| a.0.cmp(&b.0));

    // 5. The proposed run, with eager waiting.
    let mut next = run.clone();
    next.channels = channels;
    next.changed_channels = changed
        .iter()
        .map(|f| state_channel(f))
        .chain(triggered.iter().cloned())
        .collect();
    next.pending_nodes = run
        .pending_nodes
        .iter()
        .filter(|n| !completed.contains(*n))
        .cloned()
        .chain(interrupting.iter().map(|(w, _)| w.node_id.clone()))
        .collect();
    next.interrupts = interrupts;
    clear_active_superstep(&mut next);
    next.step = run.step + 1;
    next.updated_at = Some(now);
    next.status = RunStatus::Running;
    let (names, open) = candidates(rtg, &next);
    if names.is_empty() && !open.is_empty() {
        next.status = RunStatus::Waiting;
    }

    // 6. Facts, all at the pre-barrier step.
    let step = run.step;
    let mut entries = Vec::new();
    for write in &writes {
        if matches!(write.write, PendingWriteKind::Update { .. }) {
            entries.push(
                EventEntry::new(EventType::NodeCompleted, step)
                    .node(&write.node_id)
                    .task(&write.task_id)
                    .with("attempt", write.attempt),
            );
        }
    }
    for (field, items) in &by_field {
        let mut writers: Vec<&str> = items.iter().map(|(n, _)| *n).collect();
        writers.dedup();
        entries.push(
            EventEntry::new(EventType::ChannelUpdated, step)
                .channel(state_channel(field))
                .with("writers", json!(writers)),
        );
    }
    for (edge_id, to) in &fired.to_nodes {
        entries.push(
            EventEntry::new(EventType::EdgeTriggered, step)
                .channel(crate::graph::runtime_graph::edge_channel(edge_id))
                .with("edge_id", edge_id.as_str())
                .with("to", to.as_str()),
        );
    }
    for edge_id in &fired.to_finish {
        entries.push(
            EventEntry::new(EventType::EdgeTriggered, step)
                .channel(crate::graph::runtime_graph::edge_channel(edge_id))
                .with("edge_id", edge_id.as_str())
                .with("to", crate::graph::FINISH),
        );
    }
    for (id, write, resume_channel) in &requested {
        entries.push(
            EventEntry::new(EventType::InterruptRequested, step)
                .node(&write.node_id)
                .task(&write.task_id)
                .with("attempt", write.attempt)
                .with("interrupt_id", id.as_str())
                .with("resume_channel", resume_channel.as_str()),
        );
    }

    // 7. Type and disposition.
    let checkpoint_type = if requested.is_empty() {
        CheckpointType::StepCommitted
    } else {
        CheckpointType::InterruptRequested
    };
    let disposition = if next.status == RunStatus::Waiting {
        Disposition::Park {
            kind: ParkKind::External,
            reason: ParkReason::AwaitingInterrupts,
        }
    } else {
        Disposition::Continue
    };
    Ok(sequence(
        next,
        checkpoint_type,
        entries,
        disposition,
        now,
        Vec::new(),
    ))
}

/// Folds `values` (in writer order) into state field `field` and bumps its version.
pub fn apply_field_write(
    rtg: &RuntimeGraph,
    channels: &mut BTreeMap<String, ChannelState>,
    field: &str,
    values: impl Iterator<Item = Value>,
) {
    let channel_id = state_channel(field);
    let Some(channel @ Channel::Value { reducer, .. }) = rtg.channels.get(&channel_id) else {
        return;
    };
    let values: Vec<Value> = values.collect();
    let committed = channels.get(&channel_id);
    let reduced = reducer.reduce(current_value(channel, committed), &values);
    let version = committed.map_or(0, |c| c.version) + 1;
    channels.insert(
        channel_id.clone(),
        ChannelState {
            channel_id,
            value: reduced,
            version,
            barrier_seen: Vec::new(),
        },
    );
}

fn fresh_interrupt_id(
    ids: &dyn IdGenerator,
    taken: &BTreeMap<String, InterruptState>,
) -> Result<String, RuntimeError> {
    for _ in 0..MAX_ID_DRAWS {
        let id = ids.generate(IdKind::Interrupt);
        if check_id("interrupt id", &id).is_ok() && !taken.contains_key(&id) {
            return Ok(id);
        }
    }
    Err(RuntimeError::new(
        ErrorKind::InvalidOptions,
        Phase::Settle,
        "the id generator returned no valid, unused interrupt id",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::Interrupt;
    use crate::runtime::testing::{rtg, started, t};

    #[derive(Debug)]
    struct Stuck;

    impl IdGenerator for Stuck {
        fn generate(&self, _: IdKind) -> String {
            "taken".into()
        }
    }

    fn interrupt_write(node: &str) -> PendingWrite {
        PendingWrite {
            task_id: format!("run_1:0:{node}"),
            node_id: node.into(),
            attempt: 1,
            write: PendingWriteKind::Interrupt {
                interrupt: Interrupt::new("f"),
            },
        }
    }

    #[test]
    fn an_id_generator_that_only_repeats_itself_is_an_error_not_a_collision() {
        let g = rtg(json!({"fields": {"f": {"schema": {"type": "boolean"}}}}));
        let run = started(&g, json!({}));
        let once = barrier(&g, &run, vec![interrupt_write("a")], t(1), &Stuck).expect("first");
        assert!(once.run.interrupts.contains_key("taken"));
        let err = barrier(
            &g,
            &run,
            vec![interrupt_write("a"), interrupt_write("b")],
            t(1),
            &Stuck,
        )
        .expect_err("second id collides");
        assert_eq!(err.kind, ErrorKind::InvalidOptions);
    }

    #[test]
    fn a_re_triggered_activation_keeps_its_value() {
        let g = rtg(json!({
            "nodes": {"a": {"implementation": "set"}},
            "edges": {"e0": {"from": "$start", "to": "a"}, "again": {"from": "a", "to": "a"}},
        }));
        let mut run = started(&g, json!({}));
        let write = |run: &Run| PendingWrite {
            task_id: format!("run_1:{}:a", run.step),
            node_id: "a".into(),
            attempt: 1,
            write: PendingWriteKind::Update {
                value: ValueMap::new(),
            },
        };
        let ids = crate::runtime::SequentialIds::new();
        for _ in 0..2 {
            run = barrier(&g, &run, vec![write(&run)], t(1), &ids)
                .expect("barrier")
                .run;
            let again = &run.channels["edge:again"];
            assert_eq!(again.value, json!(true));
        }
        assert_eq!(run.channels["edge:again"].version, 2);
        assert_eq!(
            run.channels["edge:e0"].value,
            Value::Null,
            "consumed activation cleared"
        );
        assert_eq!(run.channels["edge:e0"].version, 1);
    }
}
