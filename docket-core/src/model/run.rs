//! The run document and its sub-records (`docs/runs-and-moments.md`, “The run document”).
//!
//! A [`Run`] is the graph-execution state of one run. Everything here is part of the durable
//! document that stores persist and compare; the backend-owned scheduling facts (wake time,
//! claim, counters, poison) live beside it and are exposed through [`super::RunInfo`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{GraphHash, GraphId, RunId};
use super::interrupt::Interrupt;
use super::time::Timestamp;
use super::value::ValueMap;

/// The graph status of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// In-memory only: built but not yet initialized. Stores reject it.
    Created,
    /// Has dispatchable work, or work parked behind a retry timer.
    Running,
    /// Parked on open interrupts; only a signal can make progress.
    Waiting,
    /// Completed; `output` is set.
    Done,
    /// Failed; `failure` is set.
    Failed,
    /// Cancelled by a signal.
    Cancelled,
}

impl RunStatus {
    /// The five statuses a store may hold.
    pub const DURABLE: [RunStatus; 5] = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Done,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    /// Whether the status is absorbing (`done`, `failed`, `cancelled`).
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Done | RunStatus::Failed | RunStatus::Cancelled
        )
    }

    /// Whether the status may be stored (anything but `created`).
    #[must_use]
    pub fn is_durable(self) -> bool {
        self != RunStatus::Created
    }

    /// The lowercase wire name (`"running"`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Created => "created",
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Parses a wire name produced by [`RunStatus::as_str`].
    #[must_use]
    pub fn parse(name: &str) -> Option<RunStatus> {
        [
            RunStatus::Created,
            RunStatus::Running,
            RunStatus::Waiting,
            RunStatus::Done,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }

    /// The allowed status matrix (`docs/state-machines.md`, “Run status”).
    #[must_use]
    pub fn can_become(self, to: RunStatus) -> bool {
        use RunStatus::{Cancelled, Created, Done, Failed, Running, Waiting};
        matches!(
            (self, to),
            (Created, Running)
                | (Running, Running | Waiting | Done | Failed | Cancelled)
                | (Waiting, Running | Cancelled)
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One committed channel value (`input:<id>`, `state:<id>` or `edge:<id>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelState {
    /// The runtime channel id; equals the key it is stored under.
    pub channel_id: String,
    /// The committed value (`null` for a cleared activation).
    pub value: Value,
    /// Bumped once per barrier that wrote the channel.
    pub version: u64,
    /// Barrier channels only: sorted source nodes completed since the last firing.
    #[serde(default)]
    pub barrier_seen: Vec<String>,
}

/// Status of a [`TaskState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Durable: a parked next attempt waiting for its retry timer.
    RetryScheduled,
    /// Transient: the descriptor handed to an executing attempt. Never stored.
    Running,
}

/// One failed attempt of a task, kept while the task retries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptFailure {
    /// The attempt number that failed (1-based).
    pub attempt: u32,
    /// Human-readable reason.
    pub reason: String,
}

/// A task of the in-flight superstep (`docs/runs-and-moments.md`, “The run document”).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskState {
    /// `"<run_id>:<step>:<node_id>"`.
    pub task_id: String,
    /// Public node id.
    pub node_id: String,
    /// The superstep this task belongs to.
    pub step: u64,
    /// The attempt this state describes (the next one when parked).
    pub attempt: u32,
    /// Parked or running.
    pub status: TaskStatus,
    /// Hash of `snapshot`.
    pub input_hash: String,
    /// `"<task_id>:<attempt>"`.
    pub idempotency_key: String,
    /// The state view the superstep planned against.
    pub snapshot: ValueMap,
    /// Versions of every declared field at planning time.
    pub source_versions: BTreeMap<String, u64>,
    /// Transient only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// Transient only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<Timestamp>,
    /// Failures of earlier attempts, numbered `1..attempt-1`.
    #[serde(default)]
    pub failures: Vec<AttemptFailure>,
    /// Free-form metadata.
    #[serde(default)]
    pub metadata: ValueMap,
}

/// What a completed sibling attempt produced, held until the superstep's barrier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PendingWriteKind {
    /// A validated state update.
    Update {
        /// The update map.
        value: ValueMap,
    },
    /// A validated interrupt request.
    Interrupt {
        /// The interrupt.
        interrupt: Interrupt,
    },
}

/// A completed sibling result parked until the barrier (`docs/runs-and-moments.md`, “Retry park”).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingWrite {
    /// Task id of the attempt that produced it.
    pub task_id: String,
    /// Public node id.
    pub node_id: String,
    /// The attempt that produced it.
    pub attempt: u32,
    /// The write itself.
    pub write: PendingWriteKind,
}

/// Kind of a durable timer. Only retries exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// The retry deadline of a parked attempt.
    Retry,
}

/// A durable timer, keyed by the task id it schedules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimerState {
    /// Always [`TimerKind::Retry`].
    pub kind: TimerKind,
    /// When the parked attempt becomes due.
    pub fires_at: Timestamp,
}

/// Status of an interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptStatus {
    /// Waiting for a resolution.
    Open,
    /// Resolved; `resolved_at` is set.
    Resolved,
}

/// A registered interrupt (`docs/runs-and-moments.md`, “The run document”).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptState {
    /// The interrupt id; equals its key in [`Run::interrupts`].
    pub id: String,
    /// The node that asked.
    pub node_id: String,
    /// Open or resolved.
    pub status: InterruptStatus,
    /// The state field the resolution is written to.
    pub resume_channel: String,
    /// Optional schema (raw JSON, see [`crate::graph::Schema`]) the resolution must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// When it was registered.
    pub created_at: Timestamp,
    /// When it was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Timestamp>,
    /// Free-form metadata supplied by the node.
    #[serde(default)]
    pub metadata: ValueMap,
}

/// The durable cause of a failed run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// Machine-readable code, e.g. `"node_failed"`.
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// The failing node when exactly one node is to blame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Portable details.
    #[serde(default)]
    pub details: ValueMap,
}

/// The run document (`docs/runs-and-moments.md`, “The run document”).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Globally unique run id.
    pub id: RunId,
    /// The graph this run executes.
    pub graph_id: GraphId,
    /// The exact effective graph version.
    pub graph_hash: GraphHash,
    /// Graph status.
    pub status: RunStatus,
    /// Validated run input.
    pub input: ValueMap,
    /// Present only when `status == done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<ValueMap>,
    /// Present exactly when `status == failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Set at initialization, immutable afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// Time of the last committed document change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
    /// Present exactly for terminal statuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// Committed superstep counter.
    pub step: u64,
    /// Committed channel values by channel id.
    #[serde(default)]
    pub channels: BTreeMap<String, ChannelState>,
    /// Channels written or triggered by the last barrier.
    #[serde(default)]
    pub changed_channels: BTreeSet<String>,
    /// Nodes owing a re-execution (interrupted nodes).
    #[serde(default)]
    pub pending_nodes: BTreeSet<String>,
    /// Parked next attempts of the in-flight superstep, by task id.
    #[serde(default)]
    pub active_tasks: BTreeMap<String, TaskState>,
    /// Completed sibling results held until the barrier.
    #[serde(default)]
    pub pending_writes: Vec<PendingWrite>,
    /// Interrupts by id.
    #[serde(default)]
    pub interrupts: BTreeMap<String, InterruptState>,
    /// Retry timers by task id.
    #[serde(default)]
    pub timers: BTreeMap<String, TimerState>,
    /// The commit fence: +1 per committed moment.
    pub checkpoint_seq: u64,
    /// Last assigned event sequence.
    pub event_seq: u64,
    /// Host metadata.
    #[serde(default)]
    pub metadata: ValueMap,
}

impl Run {
    /// A fresh `created` run with every counter at zero.
    #[must_use]
    pub fn new_created(
        id: RunId,
        graph_id: GraphId,
        graph_hash: GraphHash,
        input: ValueMap,
        metadata: ValueMap,
    ) -> Self {
        Run {
            id,
            graph_id,
            graph_hash,
            status: RunStatus::Created,
            input,
            output: None,
            failure: None,
            started_at: None,
            updated_at: None,
            finished_at: None,
            step: 0,
            channels: BTreeMap::new(),
            changed_channels: BTreeSet::new(),
            pending_nodes: BTreeSet::new(),
            active_tasks: BTreeMap::new(),
            pending_writes: Vec::new(),
            interrupts: BTreeMap::new(),
            timers: BTreeMap::new(),
            checkpoint_seq: 0,
            event_seq: 0,
            metadata,
        }
    }

    /// Whether an in-flight superstep is parked on this run.
    #[must_use]
    pub fn has_active_superstep(&self) -> bool {
        !self.active_tasks.is_empty()
    }

    /// Ids of open interrupts, sorted.
    #[must_use]
    pub fn open_interrupt_ids(&self) -> Vec<String> {
        self.interrupts
            .values()
            .filter(|i| i.status == InterruptStatus::Open)
            .map(|i| i.id.clone())
            .collect()
    }
}

/// `"<run_id>:<step>:<node_id>"`: the deterministic id of a task.
#[must_use]
pub fn task_id(run_id: &RunId, step: u64, node_id: &str) -> String {
    format!("{}:{step}:{node_id}", run_id.as_str())
}

/// `"<task_id>:<attempt>"`: the idempotency key of one attempt.
#[must_use]
pub fn idempotency_key(task_id: &str, attempt: u32) -> String {
    format!("{task_id}:{attempt}")
}
