//! Moments and dispositions (`docs/runs-and-moments.md`, “Moments and dispositions”): what one
//! commit boundary proposes.

use serde::{Deserialize, Serialize};

use crate::model::{CheckpointType, Event, Run, Timestamp, ValueMap};
use crate::store::{ClaimedSchedule, ReleaseWake};

/// Why a moment parks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParkReason {
    /// The vehicle's drain budget ran out.
    DrainBudget,
    /// Parked attempts wait for their retry timers.
    RetryBackoff,
    /// Only open interrupts remain.
    AwaitingInterrupts,
    /// A resolution signal committed.
    InterruptResolved,
    /// Completed.
    RunCompleted,
    /// Failed.
    RunFailed,
    /// Cancelled.
    RunCancelled,
}

impl ParkReason {
    /// The wire name used in checkpoint envelopes.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ParkReason::DrainBudget => "drain_budget",
            ParkReason::RetryBackoff => "retry_backoff",
            ParkReason::AwaitingInterrupts => "awaiting_interrupts",
            ParkReason::InterruptResolved => "interrupt_resolved",
            ParkReason::RunCompleted => "run_completed",
            ParkReason::RunFailed => "run_failed",
            ParkReason::RunCancelled => "run_cancelled",
        }
    }
}

/// When a parked run wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParkKind {
    /// At once.
    Immediate,
    /// Only on a signal.
    External,
    /// Not before this instant.
    At(Timestamp),
    /// Never.
    Terminal,
}

impl ParkKind {
    /// The unclaimed wake this park maps to.
    #[must_use]
    pub fn release_wake(self) -> ReleaseWake {
        match self {
            ParkKind::Immediate => ReleaseWake::Immediate,
            ParkKind::External => ReleaseWake::External,
            ParkKind::At(t) => ReleaseWake::At(t),
            ParkKind::Terminal => ReleaseWake::Terminal,
        }
    }

    /// The `wake_disposition` envelope value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ParkKind::Immediate => "immediate",
            ParkKind::External => "external",
            ParkKind::At(_) => "at",
            ParkKind::Terminal => "terminal",
        }
    }
}

/// What happens after a moment commits. Decided by the pure core; storage only sees the
/// derived schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Advanceable now: the driver proposes the next moment.
    Continue,
    /// Commit, then park.
    Park {
        /// When to wake.
        kind: ParkKind,
        /// Why.
        reason: ParkReason,
    },
}

impl Disposition {
    /// The schedule of a claimed commit (`docs/runs-and-moments.md`, “Moments and dispositions”,
    /// "claimed" column).
    #[must_use]
    pub fn claimed_schedule(self) -> ClaimedSchedule {
        match self {
            Disposition::Continue => ClaimedSchedule::RetainClaim,
            Disposition::Park { kind, .. } => ClaimedSchedule::Release(kind.release_wake()),
        }
    }

    /// The wake of an unclaimed commit (`docs/runs-and-moments.md`, “Moments and dispositions”,
    /// "unclaimed" column).
    #[must_use]
    pub fn unclaimed_wake(self) -> ReleaseWake {
        match self {
            Disposition::Continue => ReleaseWake::Immediate,
            Disposition::Park { kind, .. } => kind.release_wake(),
        }
    }

    /// The `wake_disposition` envelope value.
    #[must_use]
    pub fn wake_disposition(self) -> &'static str {
        match self {
            Disposition::Continue => "continue",
            Disposition::Park { kind, .. } => kind.as_str(),
        }
    }
}

/// A newly parked pending write reported by a moment (`docs/runs-and-moments.md`,
/// “Checkpoints and the envelope”).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingAttempt {
    /// Task id.
    pub task_id: String,
    /// Node id.
    pub node_id: String,
    /// The attempt that produced it.
    pub attempted: u32,
    /// `"update"` or `"interrupt"`.
    pub kind: String,
    /// Idempotency key of that attempt.
    pub idempotency_key: String,
}

/// One proposed commit boundary (`docs/runs-and-moments.md`, “Moments and dispositions”).
#[derive(Clone, Debug, PartialEq)]
pub struct Moment {
    /// The proposed run (`checkpoint_seq` already +1).
    pub run: Run,
    /// Assigned events; the last is always the single `checkpoint_committed`.
    pub events: Vec<Event>,
    /// Checkpoint type.
    pub checkpoint_type: CheckpointType,
    /// The checkpoint envelope (equals the last event's metadata).
    pub checkpoint_metadata: ValueMap,
    /// What happens after commit.
    pub disposition: Disposition,
    /// Proposal time (every event's timestamp).
    pub proposed_at: Timestamp,
    /// Newly parked pending writes.
    pub pending_attempts: Vec<PendingAttempt>,
}

/// What a signal's pure mutation decides for the freshly fetched run (`docs/runs-and-moments.md`,
/// “Signals”).
#[derive(Clone, Debug, PartialEq)]
pub enum Mutation {
    /// Commit this moment with `commit_unclaimed` at the fetched run's seq.
    Commit(Box<Moment>),
    /// Nothing to do: return this run without writing (e.g. cancelling a cancelled run).
    Unchanged(Box<Run>),
}
