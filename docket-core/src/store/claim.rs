//! Claim-side types (`docs/claim-order.md`, “The claim policy”).

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

use crate::model::{
    validate_durable, ClaimToken, GraphHash, GraphId, OwnerScope, PoisonReason, Run, RunId,
    RunStatus, Timestamp,
};

/// The two kinds of claimable runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimClass {
    /// Unclaimed, healthy, `wake_at ≤ now`.
    Ready,
    /// Claimed, healthy, `claimed_at < now − orphan_ttl_ms` (strict).
    Expired,
}

/// Which due runs a claim serves first (`docs/claim-order.md`, “Tenant-fair claiming”).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimPolicy {
    /// Oldest due first, whoever owns it: aging, not fairness. The default, and the right
    /// order for a deployment without tenants.
    #[default]
    Oldest,
    /// Breadth-first across the tenants that have due ready work, round robin from a cursor
    /// the store keeps, each tenant's own runs oldest first; per-tenant weights and caps
    /// ([`TenantShare`]) apply. Steals of expired claims stay owner-blind.
    TenantFair,
}

impl ClaimPolicy {
    /// The policy's name in configuration, URLs and the CLI: `oldest` or `tenant_fair`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimPolicy::Oldest => "oldest",
            ClaimPolicy::TenantFair => "tenant_fair",
        }
    }

    /// Parses [`ClaimPolicy::as_str`] (`tenant-fair` is accepted too).
    ///
    /// # Errors
    /// `InvalidArgument` naming the accepted values.
    pub fn parse(text: &str) -> Result<Self, crate::store::StoreError> {
        match text {
            "oldest" => Ok(ClaimPolicy::Oldest),
            "tenant_fair" | "tenant-fair" => Ok(ClaimPolicy::TenantFair),
            other => Err(crate::store::StoreError::invalid_argument(format!(
                "unknown claim policy {:?}: expected oldest or tenant_fair",
                crate::model::text::excerpt(other)
            ))),
        }
    }
}

/// One tenant's share of the claims under [`ClaimPolicy::TenantFair`], stored per tenant
/// (`docs/claim-order.md`, “Weights and caps”). A tenant without a stored share has
/// [`TenantShare::default`]: weight 1, no cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TenantShare {
    /// Claims the tenant gets in each round of the round robin.
    pub weight: NonZeroU32,
    /// Most of the tenant's runs claimed at once across every worker (`None`: no cap).
    pub cap: Option<NonZeroU32>,
}

impl Default for TenantShare {
    fn default() -> Self {
        TenantShare {
            weight: NonZeroU32::MIN,
            cap: None,
        }
    }
}

/// Where the round robin of [`ClaimPolicy::TenantFair`] stands: the owner key (`""` for
/// tenantless runs, else the tenant id) of the last ready run a fair claim selected, and how
/// many of that owner's runs it has taken in the current round.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClaimCursor {
    /// `OwnerScope::scope_key` of the owner served last.
    pub scope_key: String,
    /// Runs of that owner taken in its current round (1..=weight).
    pub taken: u32,
}

/// Input of `claim_due`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimRequest {
    /// Which due runs to serve first.
    pub policy: ClaimPolicy,
    /// The caller's clock.
    pub now: Timestamp,
    /// Most outcomes (leases + poisons) to return.
    pub limit: NonZeroU32,
    /// A claim older than this (strictly) may be stolen.
    pub orphan_ttl_ms: u64,
    /// Launches allowed before the next claim need poisons the run.
    pub max_claim_attempts: NonZeroU32,
    /// With `limit == 1`: which class to serve first (falls through when empty).
    pub preference: Option<ClaimClass>,
}

/// A claim handed to a worker.
///
/// Not `Eq` (only `PartialEq`): it may carry the claimed [`Run`], whose values are JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimLease {
    /// The claimed run.
    pub run_id: RunId,
    /// Its owner (derived from the stored row, never from run content).
    pub owner: OwnerScope,
    /// Its graph id.
    pub graph_id: GraphId,
    /// Its graph hash.
    pub graph_hash: GraphHash,
    /// The committed seq at claim time.
    pub checkpoint_seq: u64,
    /// The new commit authority.
    pub claim_token: ClaimToken,
    /// The claim time (`policy.now`).
    pub claimed_at: Timestamp,
    /// The new attempt count (≥ 1).
    pub claim_attempt: u32,
    /// The TTL the claim was taken under.
    pub orphan_ttl_ms: u64,
    /// The claimed run as committed at [`checkpoint_seq`](Self::checkpoint_seq), when the
    /// store read it in the claim itself; `None` when it did not, and the claimer reads it
    /// with `fetch_run` (`docs/storage-contract.md`, “The run in a lease”).
    ///
    /// A worker's first step after a claim is to read the run it leased, so a store that can
    /// return the document in the claim's own statement or script saves every claimed run a
    /// round trip. Set it only through [`ClaimLease::attach_run`], which keeps the document
    /// only if it is the run this lease is for: a store never fails a claim over a document it
    /// cannot decode — the claimer then learns of the damage from `fetch_run`, as before.
    pub run: Option<Run>,
}

impl ClaimLease {
    /// Keeps `run` as the lease's [`run`](Self::run) if it is the run this lease is for, at
    /// the lease's checkpoint: the same id, graph id and hash and `checkpoint_seq`, and
    /// `running` (what a claimable run is). Anything else is dropped, and the claimer reads
    /// the run itself; returns whether `run` was kept.
    pub fn attach_run(&mut self, run: Run) -> bool {
        let fits = run.id == self.run_id
            && run.graph_id == self.graph_id
            && run.graph_hash == self.graph_hash
            && run.checkpoint_seq == self.checkpoint_seq
            && run.status == RunStatus::Running;
        if fits {
            self.run = Some(run);
        }
        fits
    }

    /// [`attach_run`](Self::attach_run) for a stored run document (its JSON): kept if it
    /// decodes, is durably valid and is this lease's run at its checkpoint; anything else is
    /// dropped, never an error. Returns whether a run was kept.
    pub fn attach_document(&mut self, document: &[u8]) -> bool {
        match serde_json::from_slice::<Run>(document) {
            Ok(run) if validate_durable(&run).is_ok() => self.attach_run(run),
            _ => false,
        }
    }
}

/// A candidate poisoned instead of leased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoisonedClaim {
    /// The poisoned run.
    pub run_id: RunId,
    /// When.
    pub poisoned_at: Timestamp,
    /// Why (always attempts exceeded for claims).
    pub reason: PoisonReason,
}

/// Output of `claim_due`: a poisoned candidate never appears as a lease.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ClaimBatch {
    /// Leases, in selection order.
    pub leases: Vec<ClaimLease>,
    /// Poison outcomes, in selection order.
    pub poisoned: Vec<PoisonedClaim>,
}

impl ClaimBatch {
    /// Leases plus poisons.
    #[must_use]
    pub fn outcome_count(&self) -> usize {
        self.leases.len() + self.poisoned.len()
    }
}

/// Exponential backoff the store computes from the durable abandon count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbandonBackoff {
    /// Base delay (≥ 1).
    pub base_ms: u64,
    /// Cap (≥ base).
    pub cap_ms: u64,
}

/// Whether an abandon may poison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbandonMode {
    /// Reschedule at `retry_at` while abandons < max, else poison.
    Poisoning,
    /// Always reschedule; with a backoff the store computes the wake itself.
    NonPoisoning {
        /// `now + min(base × 2^min(abandons_before, 30), cap)` instead of `retry_at`.
        backoff: Option<AbandonBackoff>,
    },
}

/// Input of `abandon_claim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbandonPolicy {
    /// The seq the holder claimed at (abandon only applies before its first commit).
    pub expected_seq: u64,
    /// The caller's clock.
    pub now: Timestamp,
    /// When to wake (≥ now).
    pub retry_at: Timestamp,
    /// Reschedules allowed before the next poisoning abandon poisons.
    pub max_claim_abandons: NonZeroU32,
    /// Poisoning or not.
    pub mode: AbandonMode,
}

/// Result of `abandon_claim`: all outcomes are success-shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbandonOutcome {
    /// Handed back with a future wake.
    Rescheduled,
    /// Handed back and poisoned.
    Poisoned,
    /// Token or seq no longer current (or unknown run): nothing changed.
    Stale,
}
