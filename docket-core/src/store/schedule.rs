//! What a committed moment does to the run's claim and wake (`docs/runs-and-moments.md`,
//! “Moments and dispositions”; `docs/state-machines.md`, “Operational transitions”).

use serde::{Deserialize, Serialize};

use crate::model::{RunStatus, Timestamp};

/// When a released run wakes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseWake {
    /// Due at once (`wake_at` = the commit's `now`).
    Immediate,
    /// Due at this instant.
    At(Timestamp),
    /// Only a signal can help (open interrupts): no wake.
    External,
    /// Terminal: never wakes.
    Terminal,
}

impl ReleaseWake {
    /// Whether this wake is compatible with the proposed status (`docs/storage-contract.md`,
    /// “Transitions”).
    #[must_use]
    pub fn fits(self, status: RunStatus) -> bool {
        match self {
            ReleaseWake::Immediate | ReleaseWake::At(_) => status == RunStatus::Running,
            ReleaseWake::External => status == RunStatus::Waiting,
            ReleaseWake::Terminal => status.is_terminal(),
        }
    }

    /// The stored `wake_at` this release produces, given the commit's `now`.
    #[must_use]
    pub fn wake_at(self, now: Timestamp) -> Option<Timestamp> {
        match self {
            ReleaseWake::Immediate => Some(now),
            ReleaseWake::At(t) => Some(t),
            ReleaseWake::External | ReleaseWake::Terminal => None,
        }
    }
}

/// The schedule of a claimed commit. Unclaimed commits always release, so they take a bare
/// [`ReleaseWake`] and "retain the claim" cannot be expressed for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimedSchedule {
    /// Keep the claim (`claimed_at` re-stamped to `now`); the run must stay running.
    RetainClaim,
    /// Release the claim and wake as given.
    Release(ReleaseWake),
}

impl ClaimedSchedule {
    /// Whether this schedule is compatible with the proposed status (`docs/storage-contract.md`,
    /// “Transitions”).
    #[must_use]
    pub fn fits(self, status: RunStatus) -> bool {
        match self {
            ClaimedSchedule::RetainClaim => status == RunStatus::Running,
            ClaimedSchedule::Release(wake) => wake.fits(status),
        }
    }
}
