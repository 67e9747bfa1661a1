//! The transition kernel: every check of `initialize`, `commit_claimed` and
//! `commit_unclaimed`, in one order, for every backend.
//!
//! A transition runs in two phases:
//!
//! 1. **Stateless checks**, before any lookup: [`Init::new`], [`Commit::claimed`] and
//!    [`Commit::unclaimed`] validate the proposal on its own (checkpoint type, status, the
//!    `checkpoint_seq` step, the durable document, the schedule against the status) and
//!    normalize its events (sorted by seq, identical duplicates collapsed).
//! 2. **Planning against the stored row**, inside the store's atomic section:
//!    [`Init::plan`] and [`Commit::plan`] take what the store read — for a commit the stored
//!    [`StoredHead`] (identity, status, `checkpoint_seq`) and the row's operational state —
//!    and answer with the row to write ([`Planned`]) or the error to return.
//!
//! The order of the checks is the contract: proposal → lookup in scope (the store's own
//! `NotFound`) → immutable identity → `checkpoint_seq` fence → claim-token fence (claimed
//! commits only) → status matrix → events against stored events. Checking the status matrix
//! after the fences means a racing signal surfaces as a lost fence (`StaleCheckpoint`), not
//! as an invalid transition.
//!
//! Transitions compare the stored *head* — columns every backend keeps — and never decode the
//! stored document. A corrupt stored document is therefore reported by reads (`Corrupt`), and
//! a commit whose fences match replaces it, identically on every backend.
//!
//! Stores that can run Rust inside their transaction (memory, SQLite, the example store) call
//! [`Commit::plan`]; stores that decide in one statement or script (PostgreSQL, Redis) encode
//! the same conditions, take the written values from [`Commit::committed_state`] and
//! [`allowed_from`], and classify a refused write with [`Commit::check_head`] on a re-read.

use crate::model::{
    validate_durable, CheckpointType, ClaimToken, Event, GraphHash, GraphId, OperationalState,
    OwnerScope, Run, RunId, RunStatus, Timestamp, MAX_SEQ,
};
use crate::store::error::StoreError;
use crate::store::proposal::{ClaimedCommit, InitProposal, UnclaimedCommit};
use crate::store::schedule::{ClaimedSchedule, ReleaseWake};

use super::effects::{
    apply_commit, check_row_invariants, commit_keeps_admission, holds_claim, initial_state,
};
use super::events::{merge_with_stored, normalize_events, StoredEvent};

/// Validates an `initialize` proposal and returns its normalized events.
fn validate_initialize(
    _owner: &OwnerScope,
    proposal: &InitProposal,
    events: Vec<Event>,
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
fn validate_claimed(
    proposal: &ClaimedCommit,
    events: Vec<Event>,
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
fn validate_unclaimed(
    expected_seq: u64,
    proposal: &UnclaimedCommit,
    events: Vec<Event>,
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
fn check_identity(stored: &StoredHead, proposed: &Run) -> Result<(), StoreError> {
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

/// Checks the status matrix ([`RunStatus::can_become`]) once the fences have matched (so a
/// racing signal surfaces as a stale fence, not as an invalid transition).
///
/// # Errors
/// `InvalidTransition` when the stored status cannot become the proposed one.
fn check_status_change(stored: &StoredHead, proposed: &Run) -> Result<(), StoreError> {
    if stored.status.can_become(proposed.status) {
        Ok(())
    } else {
        Err(StoreError::invalid_transition(format!(
            "status {} cannot become {}",
            stored.status, proposed.status
        )))
    }
}

/// The stored statuses that may become `to`: the status matrix as a set, for stores that
/// encode the check as a condition (`status = ANY($n)`, a Lua set) instead of calling
/// [`Commit::check_head`] (which checks it after the fences).
#[must_use]
pub fn allowed_from(to: RunStatus) -> Vec<RunStatus> {
    RunStatus::DURABLE
        .iter()
        .copied()
        .filter(|from| from.can_become(to))
        .collect()
}

/// The fence a commit must match besides `checkpoint_seq`, and what the commit does to the
/// claim. The workspace's one name for "who may commit".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fence {
    /// `commit_claimed`: the holder's token must be the row's current claim; the schedule
    /// retains the claim or releases it.
    Claim {
        /// The holder's claim token.
        token: ClaimToken,
        /// Retain or release.
        schedule: ClaimedSchedule,
    },
    /// `commit_unclaimed` (a signal): `checkpoint_seq` alone (an optimistic compare-and-set);
    /// always releases, revoking any claim.
    Signal {
        /// When the run wakes next.
        wake: ReleaseWake,
    },
}

impl Fence {
    /// The schedule this commit applies to the row.
    #[must_use]
    pub fn schedule(&self) -> ClaimedSchedule {
        match self {
            Fence::Claim { schedule, .. } => *schedule,
            Fence::Signal { wake } => ClaimedSchedule::Release(*wake),
        }
    }

    /// The claim token a claimed commit presents.
    #[must_use]
    pub fn token(&self) -> Option<&ClaimToken> {
        match self {
            Fence::Claim { token, .. } => Some(token),
            Fence::Signal { .. } => None,
        }
    }
}

/// What a planned transition writes: the run document, the operational columns and the
/// events not stored yet, plus whether a wake hint is owed.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// The document to store (the proposal, unchanged).
    pub run: Run,
    /// The row's operational state after the transition.
    pub ops: OperationalState,
    /// Proposed events that are not stored yet, ascending by seq (identical stored ones are
    /// idempotent and left out).
    pub new_events: Vec<Event>,
    /// The caller's clock (stamped as the new events' `inserted_at`).
    pub now: Timestamp,
    /// Whether the row's wake is due at `now`: subscribers are owed a wake hint.
    pub wake_due: bool,
}

/// An `initialize` proposal that passed the stateless checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Init {
    run: Run,
    wake_at: Timestamp,
    now: Timestamp,
    events: Vec<Event>,
}

impl Init {
    /// Runs the stateless checks of `initialize`: checkpoint type `run_initialized`, status
    /// `running`, `checkpoint_seq ≥ 1`, a durable document, and events that belong to the run
    /// (normalized).
    ///
    /// # Errors
    /// `InvalidTransition` or `EventConflict`; nothing is read or written.
    pub fn new(
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Self, StoreError> {
        let events = validate_initialize(owner, &proposal, events)?;
        Ok(Init {
            run: proposal.run,
            wake_at: proposal.wake_at,
            now: proposal.now,
            events,
        })
    }

    /// The run to insert.
    #[must_use]
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The normalized events (ascending, duplicates collapsed).
    #[must_use]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The caller's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The operational state of the new row: unclaimed, waking at the proposal's `wake_at`,
    /// zero counters, no poison.
    #[must_use]
    pub fn initial_state(&self) -> OperationalState {
        initial_state(self.wake_at)
    }

    /// Plans the insert from what the store found: whether the graph version exists in the
    /// owner's scope, whether the run id is taken in any scope, and the stored event at each
    /// proposed seq (events may outlive a pruned run).
    ///
    /// # Errors
    /// `NotFound` (no such graph version for the owner), then `Conflict` (run id taken), then
    /// `EventConflict` or whatever `stored_event` returns.
    pub fn plan<F>(
        self,
        graph_exists: bool,
        run_id_taken: bool,
        stored_event: F,
    ) -> Result<Planned, StoreError>
    where
        F: FnMut(u64) -> Result<Option<StoredEvent>, StoreError>,
    {
        if !graph_exists {
            return Err(StoreError::NotFound);
        }
        if run_id_taken {
            return Err(StoreError::Conflict);
        }
        let ops = self.initial_state();
        check_row_invariants(self.run.status, &ops).map_err(StoreError::invalid_transition)?;
        let new_events = merge_with_stored(self.events, stored_event)?;
        Ok(Planned {
            wake_due: self.wake_at <= self.now,
            run: self.run,
            ops,
            new_events,
            now: self.now,
        })
    }
}

/// A commit proposal (claimed or signal) that passed the stateless checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    run: Run,
    expected_seq: u64,
    fence: Fence,
    checkpoint_type: CheckpointType,
    now: Timestamp,
    events: Vec<Event>,
}

impl Commit {
    /// Runs the stateless checks of `commit_claimed`: the seq step (`checkpoint_seq ==
    /// expected_seq + 1`, room for a next seq), a durable document, a schedule that fits the
    /// status, and events that belong to the run (normalized).
    ///
    /// # Errors
    /// `InvalidTransition` or `EventConflict`; nothing is read or written.
    pub fn claimed(proposal: ClaimedCommit, events: Vec<Event>) -> Result<Self, StoreError> {
        let events = validate_claimed(&proposal, events)?;
        Ok(Commit {
            run: proposal.run,
            expected_seq: proposal.expected_seq,
            fence: Fence::Claim {
                token: proposal.claim_token,
                schedule: proposal.schedule,
            },
            checkpoint_type: proposal.checkpoint_type,
            now: proposal.now,
            events,
        })
    }

    /// Runs the stateless checks of `commit_unclaimed` (as [`Commit::claimed`], with the wake
    /// checked against the status).
    ///
    /// # Errors
    /// `InvalidTransition` or `EventConflict`; nothing is read or written.
    pub fn unclaimed(
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Self, StoreError> {
        let events = validate_unclaimed(expected_seq, &proposal, events)?;
        Ok(Commit {
            run: proposal.run,
            expected_seq,
            fence: Fence::Signal {
                wake: proposal.wake,
            },
            checkpoint_type: proposal.checkpoint_type,
            now: proposal.now,
            events,
        })
    }

    /// Folds `self` and `next`, the claimed commit built on it, into one commit that writes
    /// what the two write one after the other: `next`'s document, operational state and
    /// schedule, `self`'s fences (`expected_seq`, token), and both moments' events. A store
    /// that writes one commit per statement can then write a vehicle's chained completion
    /// (`docs/engine.md`, “Chained completion”) with one statement.
    ///
    /// Folds only what it can prove equivalent: two claimed commits of one run with the same
    /// token, `self` retaining the claim on a running run (so the row `next` is checked
    /// against is running and held by that token, as `self`'s fences require of the stored
    /// one), `next` built on `self`'s checkpoint at the same `now` (the clock a store stamps
    /// appended events with), and `next`'s events all after `self`'s.
    /// Then the folded commit lands exactly when both would have, one after the other. When
    /// it does not land, it says nothing about which of the two failed, or why: a store
    /// answers each member from the two commits themselves (one after the other), never from
    /// the folded one.
    ///
    /// # Errors
    /// Gives both commits back, unchanged, when they cannot be folded.
    pub fn then(self, next: Commit) -> Result<Commit, Box<(Commit, Commit)>> {
        if !self.folds_with(&next, self.events.last()) {
            return Err(Box::new((self, next)));
        }
        let mut events = self.events;
        events.extend(next.events);
        Ok(Commit {
            run: next.run,
            expected_seq: self.expected_seq,
            fence: next.fence,
            checkpoint_type: next.checkpoint_type,
            now: next.now,
            events,
        })
    }

    /// The fold of a whole `chain` — each commit built on the one before — without taking
    /// any of them: what folding them one after another with [`Commit::then`] gives, built
    /// from copies of the last commit's document and fence and of every commit's events
    /// (the earlier documents, which the fold drops, are not copied). What a store folding
    /// the members of a batch it borrows needs. `None` for an empty chain and wherever
    /// `then` would give the commits back.
    #[must_use]
    pub fn chain_cloned(chain: &[&Commit]) -> Option<Commit> {
        let (first, rest) = chain.split_first()?;
        let mut events = first.events.clone();
        let mut last = *first;
        for next in rest {
            if !last.folds_with(next, events.last()) {
                return None;
            }
            events.extend_from_slice(&next.events);
            last = next;
        }
        Some(Commit {
            run: last.run.clone(),
            expected_seq: first.expected_seq,
            fence: last.fence.clone(),
            checkpoint_type: last.checkpoint_type,
            now: last.now,
            events,
        })
    }

    /// Whether `next` can be folded onto `self` (see [`Commit::then`]), the fold so far
    /// ending with `last_event`.
    fn folds_with(&self, next: &Commit, last_event: Option<&Event>) -> bool {
        let same_token = match (&self.fence, &next.fence) {
            (
                Fence::Claim {
                    token,
                    schedule: ClaimedSchedule::RetainClaim,
                },
                Fence::Claim {
                    token: next_token, ..
                },
            ) => token == next_token,
            _ => false,
        };
        same_token
            && self.run.status == RunStatus::Running
            && self.run.id == next.run.id
            && self.run.graph_id == next.run.graph_id
            && self.run.graph_hash == next.run.graph_hash
            && self.run.started_at == next.run.started_at
            && next.expected_seq == self.run.checkpoint_seq
            && self.now == next.now
            && match (last_event, next.events.first()) {
                (Some(last), Some(first)) => last.seq < first.seq,
                _ => true,
            }
    }

    /// The proposed document, taken out of the commit (a store answering a commit that
    /// landed gives it back without a copy).
    #[must_use]
    pub fn into_run(self) -> Run {
        self.run
    }

    /// The proposed document.
    #[must_use]
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The committed seq the proposal builds on.
    #[must_use]
    pub fn expected_seq(&self) -> u64 {
        self.expected_seq
    }

    /// The fence the commit must match besides `checkpoint_seq`.
    #[must_use]
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The moment's checkpoint type.
    #[must_use]
    pub fn checkpoint_type(&self) -> CheckpointType {
        self.checkpoint_type
    }

    /// The caller's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The normalized events (ascending, duplicates collapsed).
    #[must_use]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The row's operational state once this commit lands. It does not depend on the stored
    /// row: a commit resets the counters and poison and then applies its schedule, and a
    /// retained claim can only be the presented token (the fence checked it). Stores that
    /// write in one statement bind these values instead of encoding the effects themselves.
    ///
    /// The one stored fact a commit may carry over is the admission marker:
    /// `stored_admitted_at` is kept when [`Commit::keeps_admission`], else cleared.
    #[must_use]
    pub fn committed_state(&self, stored_admitted_at: Option<Timestamp>) -> OperationalState {
        let mut ops = OperationalState {
            claim_token: self.fence.token().cloned(),
            claimed_at: self.fence.token().map(|_| self.now),
            wake_at: None,
            claim_attempts: 0,
            claim_abandons: 0,
            poison: None,
            latest_checkpoint_type: self.checkpoint_type,
            admitted_at: stored_admitted_at,
        };
        apply_commit(
            &mut ops,
            self.checkpoint_type,
            self.fence.schedule(),
            self.fence.token().is_some(),
            self.now,
        );
        ops
    }

    /// Whether this commit keeps the row's admission marker (a claimed commit that retains
    /// its claim or releases for an immediate wake); stores that write in one statement bind
    /// this flag and keep or clear the stored marker with it.
    #[must_use]
    pub fn keeps_admission(&self) -> bool {
        commit_keeps_admission(self.fence.token().is_some(), self.fence.schedule())
    }

    /// Checks the stored row in the contract's order: immutable identity → `checkpoint_seq`
    /// fence → claim-token fence → status matrix. The store has already found the row in the
    /// caller's scope (otherwise its answer is `NotFound`).
    ///
    /// # Errors
    /// `InvalidTransition` (identity, status matrix) or `StaleCheckpoint` (a fence).
    pub fn check_head(
        &self,
        stored: &StoredHead,
        stored_ops: &OperationalState,
    ) -> Result<(), StoreError> {
        check_identity(stored, &self.run)?;
        if stored.checkpoint_seq != self.expected_seq {
            return Err(StoreError::StaleCheckpoint);
        }
        if let Fence::Claim { token, .. } = &self.fence {
            if !holds_claim(stored_ops, token) {
                return Err(StoreError::StaleCheckpoint);
            }
        }
        check_status_change(stored, &self.run)
    }

    /// Plans the commit against the stored row: [`Commit::check_head`], then the proposed
    /// events against the stored ones (`stored_event(seq)`), then the new operational state,
    /// whose row invariants are checked before anything is written.
    ///
    /// # Errors
    /// As [`Commit::check_head`], then `EventConflict` or whatever `stored_event` returns.
    pub fn plan<F>(
        self,
        stored: &StoredHead,
        stored_ops: &OperationalState,
        stored_event: F,
    ) -> Result<Planned, StoreError>
    where
        F: FnMut(u64) -> Result<Option<StoredEvent>, StoreError>,
    {
        self.check_head(stored, stored_ops)?;
        let ops = self.committed_state(stored_ops.admitted_at);
        // The rules keep the invariants by construction; refusing a row that breaks them
        // keeps a rules bug from turning into a corrupt store.
        check_row_invariants(self.run.status, &ops).map_err(StoreError::invalid_transition)?;
        let new_events = merge_with_stored(self.events, stored_event)?;
        Ok(Planned {
            wake_due: ops.wake_at.is_some_and(|wake| wake <= self.now),
            run: self.run,
            ops,
            new_events,
            now: self.now,
        })
    }
}
