//! What a node attempt knows about itself (`docs/runs-and-moments.md`, “Executing a superstep”).

use std::collections::BTreeMap;

use crate::model::{RunId, ValueMap};

/// The identity and environment of one node attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeContext {
    /// The run.
    pub run_id: RunId,
    /// Public node id.
    pub node_id: String,
    /// `"<run_id>:<step>:<node_id>"`: stable across the attempts of one activation.
    pub task_id: String,
    /// The superstep.
    pub step: u64,
    /// Attempt number (1-based).
    pub attempt: u32,
    /// Versions of every declared field at planning time.
    pub source_versions: BTreeMap<String, u64>,
    /// `"<task_id>:<attempt>"`: key external side effects by this (per attempt) or by
    /// `task_id` (per activation) to make them idempotent.
    pub idempotency_key: String,
    /// The host application context.
    pub application: ValueMap,
}
