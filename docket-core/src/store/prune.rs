//! Retention (`docs/storage-contract.md`, “Retention”).

use std::num::NonZeroU32;

use crate::model::Timestamp;

/// Graph versions kept per `(owner, graph_id)` regardless of age, when unreferenced.
pub const KEEP_GRAPH_VERSIONS: usize = 10;

/// Input of one pruner pass. Cutoffs are strict (`<`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrunePolicy {
    /// The caller's clock.
    pub now: Timestamp,
    /// Events persisted before `now − event_retention_ms` are deleted (any run status).
    pub event_retention_ms: u64,
    /// Terminal runs last updated before `now − run_retention_ms` are deleted with their events.
    pub run_retention_ms: u64,
    /// Most rows deleted per category per pass.
    pub batch_size: NonZeroU32,
}

/// What one pass deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PruneReport {
    /// Events deleted by age.
    pub events_deleted: u64,
    /// Terminal runs deleted.
    pub runs_deleted: u64,
    /// Events deleted with their runs.
    pub cascade_events_deleted: u64,
    /// Unreferenced, old graph versions deleted.
    pub graphs_deleted: u64,
    /// Whether another pruner held the lock, so nothing was done.
    pub skipped_locked: bool,
}
