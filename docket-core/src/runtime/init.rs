//! Building and initializing a run (`docs/runs-and-moments.md`, “Initialization”).

use std::collections::BTreeSet;

use serde_json::json;

use super::config::{IdGenerator, IdKind};
use super::error::{ErrorKind, Phase, RuntimeError};
use super::input::validate_input;
use super::moment::{Disposition, Moment, ParkKind, ParkReason};
use super::plan::check_graph;
use super::sequencing::{sequence, EventEntry};
use super::state_view::state_view;
use super::triggers::{bump, passes};
use crate::graph::runtime_graph::input_channel;
use crate::graph::{RuntimeGraph, START};
use crate::model::{
    ChannelState, CheckpointType, EventType, Run, RunId, RunStatus, Timestamp, ValueMap,
};

/// What [`propose_init`] decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Initialization {
    /// Commit this `run_initialized` moment.
    Moment(Box<Moment>),
    /// The run is already terminal; nothing to do.
    Terminal(Box<Run>),
}

/// A fresh `created` run bound to `rtg`: `run_id` or a generated id, the raw input and host
/// metadata, every counter at zero. Input is validated by [`propose_init`].
///
/// # Errors
/// [`ErrorKind::InvalidOptions`] when the generator returns an invalid run id.
pub fn build_initial_run(
    rtg: &RuntimeGraph,
    input: ValueMap,
    run_id: Option<RunId>,
    metadata: ValueMap,
    ids: &dyn IdGenerator,
) -> Result<Run, RuntimeError> {
    let id = match run_id {
        Some(id) => id,
        None => RunId::new(ids.generate(IdKind::Run)).map_err(|e| {
            RuntimeError::new(
                ErrorKind::InvalidOptions,
                Phase::Init,
                format!("the id generator returned an invalid run id: {e}"),
            )
        })?,
    };
    Ok(Run::new_created(
        id,
        rtg.graph_id.clone(),
        rtg.graph_hash.clone(),
        input,
        metadata,
    ))
}

/// Proposes the initialization moment of `run` at `now`.
///
/// A `created` run is initialized fresh; a terminal run is returned as is; a saved
/// running/waiting run is re-initialized (only `updated_at` changes, one `run_initialized`
/// fact with `{"resumed": true}`), which only the inline driver uses.
///
/// # Errors
/// [`ErrorKind::GraphMismatch`]; [`ErrorKind::InvalidInput`] with every reason;
/// [`ErrorKind::GuardEvaluationFailed`] when a `$start` guard is malformed (no run is
/// created).
pub fn propose_init(
    rtg: &RuntimeGraph,
    run: &Run,
    now: Timestamp,
) -> Result<Initialization, RuntimeError> {
    check_graph(rtg, run, Phase::Init)?;
    match run.status {
        RunStatus::Created => fresh(rtg, run, now).map(|m| Initialization::Moment(Box::new(m))),
        status if status.is_terminal() => Ok(Initialization::Terminal(Box::new(run.clone()))),
        status => {
            let mut next = run.clone();
            next.updated_at = Some(now);
            let disposition = if status == RunStatus::Waiting {
                Disposition::Park {
                    kind: ParkKind::External,
                    reason: ParkReason::AwaitingInterrupts,
                }
            } else {
                Disposition::Continue
            };
            let entry = EventEntry::new(EventType::RunInitialized, run.step).with("resumed", true);
            Ok(Initialization::Moment(Box::new(sequence(
                next,
                CheckpointType::RunInitialized,
                vec![entry],
                disposition,
                now,
                Vec::new(),
            ))))
        }
    }
}

fn fresh(rtg: &RuntimeGraph, run: &Run, now: Timestamp) -> Result<Moment, RuntimeError> {
    validate_input(rtg, &run.input)?;
    let mut channels = std::collections::BTreeMap::new();
    for (id, value) in &run.input {
        let channel_id = input_channel(id);
        channels.insert(
            channel_id.clone(),
            ChannelState {
                channel_id,
                value: value.clone(),
                version: 1,
                barrier_seen: Vec::new(),
            },
        );
    }
    let provided: BTreeSet<String> = run.input.keys().cloned().collect();
    let view = state_view(rtg, &channels, provided);
    let mut triggered = Vec::new();
    for edge in rtg.edges.values() {
        if edge.from.iter().all(|f| f != START) {
            continue;
        }
        let fires = passes(edge.guard.as_ref(), &view, &edge.id).map_err(|failure| {
            RuntimeError::new(
                ErrorKind::GuardEvaluationFailed,
                Phase::Init,
                format!(
                    "the guard of start edge {:?} could not be evaluated: {}",
                    failure.edge_id,
                    failure.reasons.join("; ")
                ),
            )
            .with_detail("edge_id", failure.edge_id.as_str())
            .with_detail("reasons", json!(failure.reasons))
        })?;
        if fires {
            triggered.push(edge);
        }
    }
    for edge in &triggered {
        bump(&mut channels, &edge.channel_id);
    }
    let mut next = run.clone();
    next.status = RunStatus::Running;
    next.changed_channels = run
        .input
        .keys()
        .map(|id| input_channel(id))
        .chain(triggered.iter().map(|e| e.channel_id.clone()))
        .collect();
    next.channels = channels;
    next.started_at = Some(now);
    next.updated_at = Some(now);

    let keys: Vec<&String> = run.input.keys().collect();
    let mut entries =
        vec![EventEntry::new(EventType::RunInitialized, run.step).with("inputs", json!(keys))];
    for id in run.input.keys() {
        entries.push(
            EventEntry::new(EventType::ChannelUpdated, run.step)
                .channel(input_channel(id))
                .with("version", 1),
        );
    }
    for edge in &triggered {
        entries.push(
            EventEntry::new(EventType::EdgeTriggered, run.step)
                .channel(edge.channel_id.as_str())
                .with("edge_id", edge.id.as_str()),
        );
    }
    Ok(sequence(
        next,
        CheckpointType::RunInitialized,
        entries,
        Disposition::Continue,
        now,
        Vec::new(),
    ))
}
