//! Transition validation (spec §4.1): run before any lookup, identical for every backend.
//!
//! Order: proposal validation → lookup (scope) → immutable identity → fences → status
//! matrix → events.
//!
//! Transitions compare the proposal with the stored [`StoredHead`] only — identity, status and
//! fence seq, which every backend keeps as plain columns — and never decode the stored
//! document. A corrupt stored document is therefore reported by reads (`Corrupt`), and a
//! commit whose fences match replaces it, identically on every backend (a single-statement
//! commit could not decode it anyway). Backends call [`validate_initialize`] / [`validate_claimed`] /
//! [`validate_unclaimed`] first, then perform their lookup, then [`check_identity`],
//! then compare fences, then [`check_status_change`], then merge events with
//! [`super::events::merge_with_stored`].

use crate::model::{
    validate_durable, CheckpointType, Event, GraphHash, GraphId, OwnerScope, Run, RunId, RunStatus,
    Timestamp, MAX_SEQ,
};
use crate::store::error::StoreError;
use crate::store::proposal::{ClaimedCommit, InitProposal, UnclaimedCommit};

use super::events::normalize_events;

/// Validates an `initialize` proposal and returns its normalized events (sorted by seq,
/// identical duplicates collapsed).
///
/// # Errors
/// `InvalidTransition` or `EventConflict`.
pub fn validate_initialize(
    _owner: &OwnerScope,
    proposal: &InitProposal,
    events: &[Event],
) -> Result<Vec<Event>, StoreError> {
    if proposal.checkpoint_type != CheckpointType::RunInitialized {
        return Err(StoreError::invalid_transition(format!(
            "initialize needs checkpoint type run_initialized, got {}",
            proposal.checkpoint_type
        )));
    }
    if proposal.run.status != RunStatus::Running {
        return Err(StoreError::invalid_transition(format!(
            "initialize needs a running run, got {}",
            proposal.run.status
        )));
    }
    if proposal.run.checkpoint_seq < 1 {
        return Err(StoreError::invalid_transition(
            "initialize needs checkpoint_seq >= 1",
        ));
    }
    check_durable(&proposal.run)?;
    normalize_events(&proposal.run, events)
}

/// Validates a `commit_claimed` proposal and returns its normalized events.
///
/// # Errors
/// `InvalidTransition` or `EventConflict`.
pub fn validate_claimed(
    proposal: &ClaimedCommit,
    events: &[Event],
) -> Result<Vec<Event>, StoreError> {
    check_seq_step(proposal.expected_seq, &proposal.run)?;
    check_durable(&proposal.run)?;
    if !proposal.schedule.fits(proposal.run.status) {
        return Err(StoreError::invalid_transition(format!(
            "schedule {:?} does not fit status {}",
            proposal.schedule, proposal.run.status
        )));
    }
    normalize_events(&proposal.run, events)
}

/// Validates a `commit_unclaimed` proposal and returns its normalized events.
///
/// # Errors
/// `InvalidTransition` or `EventConflict`.
pub fn validate_unclaimed(
    expected_seq: u64,
    proposal: &UnclaimedCommit,
    events: &[Event],
) -> Result<Vec<Event>, StoreError> {
    check_seq_step(expected_seq, &proposal.run)?;
    check_durable(&proposal.run)?;
    if !proposal.wake.fits(proposal.run.status) {
        return Err(StoreError::invalid_transition(format!(
            "wake {:?} does not fit status {}",
            proposal.wake, proposal.run.status
        )));
    }
    normalize_events(&proposal.run, events)
}

fn check_seq_step(expected: u64, run: &Run) -> Result<(), StoreError> {
    if expected >= MAX_SEQ {
        return Err(StoreError::invalid_transition(format!(
            "expected checkpoint_seq {expected} leaves no room for a next seq"
        )));
    }
    if run.checkpoint_seq != expected + 1 {
        return Err(StoreError::invalid_transition(format!(
            "proposed checkpoint_seq {} is not expected {expected} + 1",
            run.checkpoint_seq
        )));
    }
    Ok(())
}

fn check_durable(run: &Run) -> Result<(), StoreError> {
    validate_durable(run).map_err(|e| StoreError::invalid_transition(e.reason))
}

/// The stored facts a transition is checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHead {
    /// Run id.
    pub run_id: RunId,
    /// Immutable graph id.
    pub graph_id: GraphId,
    /// Immutable graph hash.
    pub graph_hash: GraphHash,
    /// Immutable start time.
    pub started_at: Option<Timestamp>,
    /// Stored status.
    pub status: RunStatus,
    /// Stored fence seq.
    pub checkpoint_seq: u64,
}

impl StoredHead {
    /// The head of a decoded run (for stores that hold the document anyway).
    #[must_use]
    pub fn of(run: &Run) -> Self {
        StoredHead {
            run_id: run.id.clone(),
            graph_id: run.graph_id.clone(),
            graph_hash: run.graph_hash.clone(),
            started_at: run.started_at,
            status: run.status,
            checkpoint_seq: run.checkpoint_seq,
        }
    }
}

/// Compares the immutable identity of the proposal with the stored head.
///
/// # Errors
/// `InvalidTransition` when `id`, `graph_id`, `graph_hash` or `started_at` differ.
pub fn check_identity(stored: &StoredHead, proposed: &Run) -> Result<(), StoreError> {
    if stored.run_id != proposed.id
        || stored.graph_id != proposed.graph_id
        || stored.graph_hash != proposed.graph_hash
        || stored.started_at != proposed.started_at
    {
        return Err(StoreError::invalid_transition(
            "the proposal changes the run's immutable identity (id, graph or started_at)",
        ));
    }
    Ok(())
}

/// Checks the status matrix once the fences have matched (so a racing signal surfaces as a
/// stale fence, not as an invalid transition).
///
/// # Errors
/// `InvalidTransition` when the stored status cannot become the proposed one.
pub fn check_status_change(stored: &StoredHead, proposed: &Run) -> Result<(), StoreError> {
    if stored.status.can_become(proposed.status) {
        Ok(())
    } else {
        Err(StoreError::invalid_transition(format!(
            "status {} cannot become {}",
            stored.status, proposed.status
        )))
    }
}
