//! Synchronous claim-and-drain for tests and scripts (`docs/engine.md`,
//! “Bounded drains and testing modes”).

use std::num::NonZeroU32;
use std::sync::Arc;

use docket_core::store::{ClaimRequest, PoisonedClaim, StoreError};

use super::admission::AdmissionPhase;
use super::outcome::{DrainOutcome, VehicleError};
use super::stats::{Counter, WorkerStats};
use super::vehicle::Vehicle;
use super::Engine;

/// What a bounded drain did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrainSummary {
    /// Leases drained to a park.
    pub drained: u32,
    /// Candidates poisoned instead of leased.
    pub poisoned: Vec<PoisonedClaim>,
    /// Every drain outcome, in order.
    pub outcomes: Vec<DrainOutcome>,
    /// `max_runs` iterations were used up (more work may be due).
    pub limit_reached: bool,
}

/// A bounded drain that stopped before running out of work or iterations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DrainStopped {
    /// A drain ended without a committed park (fence loss, discard, hand-back).
    #[error("drain stopped on a {} outcome after {} drained runs", .outcome.kind(), .summary.drained)]
    Outcome {
        /// The outcome that stopped it.
        outcome: DrainOutcome,
        /// What was done before.
        summary: DrainSummary,
    },
    /// A vehicle failed (its claim is left to expire).
    #[error("drain stopped on a vehicle error: {error}")]
    Vehicle {
        /// The error.
        error: VehicleError,
        /// What was done before.
        summary: DrainSummary,
    },
    /// Claiming failed.
    #[error("drain stopped on a claim error: {error}")]
    Claim {
        /// The error.
        error: StoreError,
        /// What was done before.
        summary: DrainSummary,
    },
}

impl Engine {
    /// Claims one due run at a time through `admission` (same preference alternation as a
    /// dispatcher) and drains it in the caller with the graph cache off, at most `max_runs`
    /// times. An empty claim batch ends the drain; a poison-only batch consumes one iteration.
    ///
    /// # Errors
    /// [`DrainStopped`] on the first non-parked outcome, vehicle error or claim error.
    pub async fn drain_runs(
        &self,
        admission: &AdmissionPhase,
        stats: Arc<WorkerStats>,
        max_runs: NonZeroU32,
    ) -> Result<DrainSummary, DrainStopped> {
        let vehicle = Vehicle::new(self, stats.clone()).without_cache();
        let e = self.inner();
        let mut summary = DrainSummary::default();
        for _ in 0..max_runs.get() {
            let scan = admission
                .run(1, |preference| {
                    let policy = ClaimRequest {
                        policy: e.config.claim_policy,
                        now: e.clock.now(),
                        limit: NonZeroU32::MIN,
                        orphan_ttl_ms: e.config.orphan_ttl_ms,
                        max_claim_attempts: NonZeroU32::new(e.config.max_claim_attempts)
                            .unwrap_or(NonZeroU32::MIN),
                        preference: Some(preference),
                    };
                    async move { e.backend.claim_due(&policy).await }
                })
                .await;
            stats.bump(Counter::Poll);
            let batch = match scan {
                Ok(batch) => batch,
                Err(error) => return Err(DrainStopped::Claim { error, summary }),
            };
            if batch.leases.is_empty() && batch.poisoned.is_empty() {
                return Ok(summary);
            }
            stats.add(Counter::Poison, batch.poisoned.len() as u64);
            summary.poisoned.extend(batch.poisoned);
            for lease in batch.leases {
                match vehicle.drain(lease).await {
                    Ok(drained) if drained.outcome.is_parked() => {
                        summary.drained += 1;
                        summary.outcomes.push(drained.outcome);
                    }
                    Ok(drained) => {
                        return Err(DrainStopped::Outcome {
                            outcome: drained.outcome,
                            summary,
                        })
                    }
                    Err(error) => return Err(DrainStopped::Vehicle { error, summary }),
                }
            }
        }
        summary.limit_reached = true;
        Ok(summary)
    }
}
