//! What a drain ends with (`docs/engine.md`, “The vehicle”).

use std::fmt;

use docket_core::graph::Diagnostic;
use docket_core::model::{GraphHash, GraphId, RunId};
use docket_core::runtime::{ParkKind, RuntimeError, YieldError};
use docket_core::store::{AbandonOutcome, StoreError};

/// Why the stored graph of a claimed run cannot run anywhere (a poisoning hand-back).
#[derive(Clone, Debug, PartialEq)]
pub enum IncompatibleReason {
    /// The stored effective document does not compile with this host's nodes.
    GraphCompilationFailed {
        /// The compiler's diagnostics.
        diagnostics: Vec<Diagnostic>,
    },
    /// The document compiled to another address than the run is bound to.
    EffectiveIdentityMismatch {
        /// What the compiler produced.
        graph_id: GraphId,
        /// What the compiler produced.
        graph_hash: GraphHash,
    },
    /// The stored bytes failed verification.
    CorruptGraph {
        /// What failed.
        detail: String,
    },
}

impl IncompatibleReason {
    /// A short stable label (`graph_compilation_failed`, ...).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            IncompatibleReason::GraphCompilationFailed { .. } => "graph_compilation_failed",
            IncompatibleReason::EffectiveIdentityMismatch { .. } => "effective_identity_mismatch",
            IncompatibleReason::CorruptGraph { .. } => "corrupt_graph",
        }
    }
}

impl fmt::Display for IncompatibleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IncompatibleReason::GraphCompilationFailed { diagnostics } => {
                write!(
                    f,
                    "graph_compilation_failed ({} diagnostics)",
                    diagnostics.len()
                )
            }
            IncompatibleReason::EffectiveIdentityMismatch {
                graph_id,
                graph_hash,
            } => write!(
                f,
                "effective_identity_mismatch (compiled to {graph_id}@{graph_hash})"
            ),
            IncompatibleReason::CorruptGraph { detail } => write!(f, "corrupt_graph: {detail}"),
        }
    }
}

/// How one drain of one lease ended. Every outcome leaves the store consistent: the claim is
/// released, handed back, or was already gone.
#[derive(Clone, Debug)]
pub enum DrainOutcome {
    /// Drained to a committed park (which released the claim).
    Parked(ParkKind),
    /// The fence was lost before anything was committed (the run moved on); released.
    FenceLost,
    /// A proposed moment was not committed (stale fence at commit, event conflict,
    /// infrastructure error, unresolvable ambiguity); the claim was released.
    Discarded(StoreError),
    /// This host's attempt ceiling is below a node's timeout: handed back without poisoning,
    /// with an exponential backoff computed by the store.
    HostIncompatible(RuntimeError),
    /// The stored graph cannot run: a poisoning hand-back.
    Abandoned {
        /// Rescheduled, poisoned or stale.
        disposition: AbandonOutcome,
        /// Why.
        reason: IncompatibleReason,
    },
    /// The active superstep had no due attempt yet: a poisoning hand-back until its deadline.
    Deferred(AbandonOutcome),
}

impl DrainOutcome {
    /// The outcome label of the `docket.vehicle.drain` event.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            DrainOutcome::Parked(_) => "parked",
            DrainOutcome::FenceLost => "fence_lost",
            DrainOutcome::Discarded(_) => "discarded",
            DrainOutcome::HostIncompatible(_) => "host_incompatible",
            DrainOutcome::Abandoned { .. } => "abandoned",
            DrainOutcome::Deferred(_) => "deferred",
        }
    }

    /// Whether the drain ended on a committed park.
    #[must_use]
    pub fn is_parked(&self) -> bool {
        matches!(self, DrainOutcome::Parked(_))
    }
}

impl PartialEq for DrainOutcome {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (DrainOutcome::Parked(a), DrainOutcome::Parked(b)) => a == b,
            (DrainOutcome::FenceLost, DrainOutcome::FenceLost) => true,
            (DrainOutcome::Discarded(a), DrainOutcome::Discarded(b)) => a.kind() == b.kind(),
            (DrainOutcome::HostIncompatible(a), DrainOutcome::HostIncompatible(b)) => a == b,
            (
                DrainOutcome::Abandoned {
                    disposition: a,
                    reason: ra,
                },
                DrainOutcome::Abandoned {
                    disposition: b,
                    reason: rb,
                },
            ) => a == b && ra == rb,
            (DrainOutcome::Deferred(a), DrainOutcome::Deferred(b)) => a == b,
            _ => false,
        }
    }
}

/// Which drain-budget limit narrowed the last commit into a yield.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetFired {
    /// `max_moments`.
    MaxMoments,
    /// `max_elapsed_ms`.
    MaxElapsed,
    /// Both at the same boundary (one yield).
    Both,
    /// The worker is shutting down: the vehicle yielded after its current moment.
    Shutdown,
}

impl BudgetFired {
    /// The `budget` label of the `docket.vehicle.drain` event.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetFired::MaxMoments => "max_moments",
            BudgetFired::MaxElapsed => "max_elapsed_ms",
            BudgetFired::Both => "both",
            BudgetFired::Shutdown => "shutdown",
        }
    }
}

/// A finished drain: its outcome plus the figures of the `docket.vehicle.drain` event.
#[derive(Clone, Debug, PartialEq)]
pub struct Drained {
    /// How it ended.
    pub outcome: DrainOutcome,
    /// Moments committed by this drain.
    pub committed_moments: u32,
    /// The budget that narrowed a *committed* yield (`None` otherwise).
    pub budget: Option<BudgetFired>,
    /// Monotonic milliseconds from the first advance to the end.
    pub elapsed_ms: u64,
}

/// A drain that stopped on an error: the claim is left in place and expires, and another worker
/// recovers the run (`docs/engine.md`, “The vehicle”).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VehicleError {
    /// The claimed run violates a claim invariant (not running, missing, its graph missing,
    /// or a commit the store rejected as invalid).
    #[error("claim invariant violated for run {run_id}: {reason}")]
    ClaimInvariant {
        /// The run.
        run_id: RunId,
        /// What was violated.
        reason: String,
    },
    /// The moment loop failed (e.g. an id generator that cannot mint ids).
    #[error("runtime error while draining run {run_id}: {error}")]
    Runtime {
        /// The run.
        run_id: RunId,
        /// The error.
        error: RuntimeError,
    },
    /// A drain-budget yield was refused (a malformed moment).
    #[error("drain-budget yield refused for run {run_id}: {error}")]
    Yield {
        /// The run.
        run_id: RunId,
        /// The error.
        error: YieldError,
    },
    /// The store failed where nothing could be released safely.
    #[error("store error while draining run {run_id}: {error}")]
    Store {
        /// The run.
        run_id: RunId,
        /// The error.
        error: StoreError,
    },
}

impl VehicleError {
    /// A short stable label for logs.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            VehicleError::ClaimInvariant { .. } => "claim_invariant",
            VehicleError::Runtime { .. } => "runtime",
            VehicleError::Yield { .. } => "yield",
            VehicleError::Store { .. } => "store",
        }
    }
}
