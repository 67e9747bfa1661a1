//! The data-only proposals of the three transitions (`docs/storage-contract.md`, “Transitions”).

use crate::model::{CheckpointType, ClaimToken, Event, OwnerScope, Run, Scope, Timestamp};

use super::schedule::{ClaimedSchedule, ReleaseWake};

/// `initialize`: insert a freshly initialized run.
#[derive(Clone, Debug, PartialEq)]
pub struct InitProposal {
    /// The initialized run (`running`, `checkpoint_seq ≥ 1`).
    pub run: Run,
    /// Must be [`CheckpointType::RunInitialized`].
    pub checkpoint_type: CheckpointType,
    /// First wake (the moment's proposal time for a `continue` disposition).
    pub wake_at: Timestamp,
    /// The caller's clock (event `inserted_at`).
    pub now: Timestamp,
}

/// One member of [`crate::store::RunStore::initialize_batch`]: an `initialize` proposal with
/// the owner it is made for and the events it appends.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchedInit {
    /// The owner the run is created for (the graph must exist in this scope).
    pub owner: OwnerScope,
    /// The initialized run.
    pub proposal: InitProposal,
    /// The `run_initialized` moment's events, as for `initialize`.
    pub events: Vec<Event>,
}

/// `commit_claimed`: a fenced commit by the current claim holder.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimedCommit {
    /// The proposed run (`checkpoint_seq == expected_seq + 1`).
    pub run: Run,
    /// The committed seq the proposal builds on.
    pub expected_seq: u64,
    /// The holder's claim token.
    pub claim_token: ClaimToken,
    /// The moment's checkpoint type.
    pub checkpoint_type: CheckpointType,
    /// Retain the claim or release it.
    pub schedule: ClaimedSchedule,
    /// The caller's clock: re-stamps `claimed_at` (retain) or sets an immediate wake.
    pub now: Timestamp,
}

/// One member of [`crate::store::RunStore::commit_claimed_batch`]: a claimed commit with the
/// scope it is made in and the events it appends.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchedCommit {
    /// The scope of the commit (the vehicle's owner scope, or system).
    pub scope: Scope,
    /// The fenced proposal.
    pub proposal: ClaimedCommit,
    /// The moment's events, as for `commit_claimed`.
    pub events: Vec<Event>,
}

/// `commit_unclaimed`: a signal's optimistic commit; always releases any claim.
#[derive(Clone, Debug, PartialEq)]
pub struct UnclaimedCommit {
    /// The proposed run (`checkpoint_seq == expected_seq + 1`).
    pub run: Run,
    /// The moment's checkpoint type.
    pub checkpoint_type: CheckpointType,
    /// When the run wakes next.
    pub wake: ReleaseWake,
    /// The caller's clock: sets an immediate wake.
    pub now: Timestamp,
}
