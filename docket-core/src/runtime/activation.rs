//! Activations and identity (`docs/runs-and-moments.md`, “Activations and identity”): one planned
//! node attempt of a superstep.
//!
//! Every identifier of an activation derives from committed state only, so re-planning an
//! uncommitted superstep yields byte-identical task ids, idempotency keys and input hashes.

use std::collections::BTreeMap;

use crate::graph::{NodePolicies, RetryPolicy, RuntimeNode};
use crate::model::value::snapshot_hash;
use crate::model::{
    idempotency_key, task_id, AttemptFailure, RunId, TaskState, TaskStatus, ValueMap,
};

/// One node attempt to execute.
#[derive(Clone, Debug, PartialEq)]
pub struct Activation {
    /// `"<run_id>:<step>:<node_id>"`.
    pub task_id: String,
    /// Public node id.
    pub node_id: String,
    /// `node:<id>`.
    pub runtime_node_id: String,
    /// Registered implementation name.
    pub implementation: String,
    /// The superstep.
    pub step: u64,
    /// Attempt number (1-based).
    pub attempt: u32,
    /// Hash of `snapshot`.
    pub input_hash: String,
    /// `"<task_id>:<attempt>"`.
    pub idempotency_key: String,
    /// The state view values the superstep planned against.
    pub snapshot: ValueMap,
    /// Versions of every declared field at planning time.
    pub source_versions: BTreeMap<String, u64>,
    /// The node's effective config.
    pub config: ValueMap,
    /// The node's explicit timeout, if any.
    pub timeout_ms: Option<u64>,
    /// The node's retry policy.
    pub retry: RetryPolicy,
    /// Failures of earlier attempts (empty on a fresh superstep).
    pub failures: Vec<AttemptFailure>,
}

impl Activation {
    /// A first attempt of `node` planned against `base`.
    #[must_use]
    pub fn fresh(base: &PlannedSnapshot, node: &RuntimeNode, policies: NodePolicies) -> Self {
        let task_id = task_id(&base.run_id, base.step, &node.public_id);
        Activation {
            idempotency_key: idempotency_key(&task_id, 1),
            task_id,
            node_id: node.public_id.clone(),
            runtime_node_id: node.runtime_id.clone(),
            implementation: node.implementation.clone(),
            step: base.step,
            attempt: 1,
            input_hash: base.input_hash.clone(),
            snapshot: base.values.clone(),
            source_versions: base.versions.clone(),
            config: node.config.clone(),
            timeout_ms: policies.timeout_ms,
            retry: policies.retry,
            failures: Vec::new(),
        }
    }

    /// The parked attempt `task` rebuilt against `node` (config and policies re-resolved from
    /// the graph; identity, snapshot and attempt from the durable task).
    #[must_use]
    pub fn resumed(task: &TaskState, node: &RuntimeNode, policies: NodePolicies) -> Self {
        Activation {
            task_id: task.task_id.clone(),
            node_id: task.node_id.clone(),
            runtime_node_id: node.runtime_id.clone(),
            implementation: node.implementation.clone(),
            step: task.step,
            attempt: task.attempt,
            input_hash: task.input_hash.clone(),
            idempotency_key: task.idempotency_key.clone(),
            snapshot: task.snapshot.clone(),
            source_versions: task.source_versions.clone(),
            config: node.config.clone(),
            timeout_ms: policies.timeout_ms,
            retry: policies.retry,
            failures: task.failures.clone(),
        }
    }

    /// The durable parked next attempt after this attempt failed with `reason`.
    #[must_use]
    pub fn parked_next(&self, reason: &str) -> TaskState {
        let next = self.attempt + 1;
        let mut failures = self.failures.clone();
        failures.push(AttemptFailure {
            attempt: self.attempt,
            reason: reason.to_owned(),
        });
        TaskState {
            task_id: self.task_id.clone(),
            node_id: self.node_id.clone(),
            step: self.step,
            attempt: next,
            status: TaskStatus::RetryScheduled,
            input_hash: self.input_hash.clone(),
            idempotency_key: idempotency_key(&self.task_id, next),
            snapshot: self.snapshot.clone(),
            source_versions: self.source_versions.clone(),
            started_at: None,
            deadline_at: None,
            failures,
            metadata: ValueMap::new(),
        }
    }
}

/// The activations of one superstep to dispatch now.
#[derive(Clone, Debug, PartialEq)]
pub struct Superstep {
    /// The run they belong to.
    pub run_id: RunId,
    /// The superstep (`run.step`).
    pub step: u64,
    /// Activations to dispatch, sorted by node id.
    pub activations: Vec<Activation>,
    /// Whether some active task of the run is not dispatched this time (not yet due).
    pub remaining_active: bool,
}

/// The one snapshot every activation of a fresh superstep plans against.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedSnapshot {
    /// The run.
    pub run_id: RunId,
    /// The superstep (`run.step`).
    pub step: u64,
    /// State view values.
    pub values: ValueMap,
    /// State view versions.
    pub versions: BTreeMap<String, u64>,
    /// `snapshot_hash(values)`.
    pub input_hash: String,
}

impl PlannedSnapshot {
    /// Wraps a state view's values and versions, hashing the values.
    #[must_use]
    pub fn new(
        run_id: RunId,
        step: u64,
        values: ValueMap,
        versions: BTreeMap<String, u64>,
    ) -> Self {
        PlannedSnapshot {
            input_hash: snapshot_hash(&values),
            run_id,
            step,
            values,
            versions,
        }
    }
}
