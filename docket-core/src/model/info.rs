//! Operational projection of a run (`docs/state-machines.md`, “Operational sub-states”).

use serde::{Deserialize, Serialize};

use super::event::CheckpointType;
use super::ids::ClaimToken;
use super::run::Run;
use super::scope::OwnerScope;
use super::time::Timestamp;

/// Why a run was poisoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoisonReason {
    /// Claimed `max_claim_attempts` times without committed progress.
    MaxClaimAttemptsExceeded,
    /// Handed back `max_claim_abandons` times without committed progress.
    MaxClaimAbandonsExceeded,
}

impl PoisonReason {
    /// The stored reason string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PoisonReason::MaxClaimAttemptsExceeded => "max_claim_attempts_exceeded",
            PoisonReason::MaxClaimAbandonsExceeded => "max_claim_abandons_exceeded",
        }
    }

    /// Parses a stored reason string.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "max_claim_attempts_exceeded" => Some(PoisonReason::MaxClaimAttemptsExceeded),
            "max_claim_abandons_exceeded" => Some(PoisonReason::MaxClaimAbandonsExceeded),
            _ => None,
        }
    }
}

/// Poison facts: always present together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Poison {
    /// When the run was poisoned.
    pub poisoned_at: Timestamp,
    /// Why.
    pub reason: PoisonReason,
}

/// The backend-owned scheduling state of a run, never part of the run document.
///
/// Invariants (`docs/state-machines.md`, “Row invariants”), which [`crate::store::rules`] maintains
/// and stores check: a claim token is present exactly when `claimed_at` is; non-running rows have
/// no claim, no wake and no poison; a poisoned row has no claim and no wake; a healthy running row
/// has exactly one of {wake, claim}.
///
/// The claim token lives here because every store keeps it beside the run; it is never copied
/// into [`RunInfo`], and its `Debug` is redacted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationalState {
    /// The current commit authority (`None` when unclaimed).
    pub claim_token: Option<ClaimToken>,
    /// Next autonomous advance (`None` when claimed, externally parked, poisoned or terminal).
    pub wake_at: Option<Timestamp>,
    /// When the current claim was acquired or last re-stamped (`None` when unclaimed).
    pub claimed_at: Option<Timestamp>,
    /// Consecutive claims handed to execution without committed progress.
    pub claim_attempts: u32,
    /// Consecutive pre-execution hand-backs without committed progress.
    pub claim_abandons: u32,
    /// Poison facts, if poisoned.
    pub poison: Option<Poison>,
    /// Type of the last committed moment.
    pub latest_checkpoint_type: CheckpointType,
    /// The admission marker: when a tenant-fair claim first admitted the run's current stretch
    /// of cooperative work (`docs/claim-order.md`, “The admission marker”). Kept while the
    /// run keeps its claim or hands it back for an immediate wake; cleared by every other
    /// release, signal, abandon, poison and poison recovery. Only running, healthy rows hold
    /// one.
    pub admitted_at: Option<Timestamp>,
}

/// A run document plus its operational projection (never the claim token).
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// The committed run document.
    pub run: Run,
    /// Who owns the run.
    pub owner: OwnerScope,
    /// Next autonomous advance.
    pub wake_at: Option<Timestamp>,
    /// When the current claim was taken (present exactly while claimed).
    pub claimed_at: Option<Timestamp>,
    /// Consecutive claims without progress.
    pub claim_attempts: u32,
    /// Consecutive hand-backs without progress.
    pub claim_abandons: u32,
    /// Poison facts, if poisoned.
    pub poison: Option<Poison>,
    /// The admission marker ([`OperationalState::admitted_at`]).
    pub admitted_at: Option<Timestamp>,
}

impl RunInfo {
    /// Whether the run is poisoned.
    #[must_use]
    pub fn is_poisoned(&self) -> bool {
        self.poison.is_some()
    }

    /// Whether a claim is currently held.
    #[must_use]
    pub fn is_claimed(&self) -> bool {
        self.claimed_at.is_some()
    }
}
