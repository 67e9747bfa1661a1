//! Ending a drain without a committed park: release, poisoning abandon, host-incompatibility
//! hand-back, deferral.

use std::num::NonZeroU32;

use docket_core::model::Timestamp;
use docket_core::runtime::RuntimeError;
use docket_core::store::{AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy};

use super::Drain;
use crate::engine::outcome::{DrainOutcome, IncompatibleReason, VehicleError};
use crate::engine::stats::Counter;

impl Drain<'_> {
    /// Releases the claim (token-guarded, so harmless if it is already gone) and returns
    /// `outcome`.
    pub(super) async fn release(
        &self,
        outcome: DrainOutcome,
    ) -> Result<DrainOutcome, VehicleError> {
        self.e
            .backend
            .release_claim(
                &self.lease.run_id,
                &self.lease.claim_token,
                self.e.clock.now(),
            )
            .await
            .map_err(|e| self.store_error(e))?;
        Ok(outcome)
    }

    fn max_claim_abandons(&self) -> NonZeroU32 {
        // Validated positive at start-up; 1 is the most conservative fallback.
        NonZeroU32::new(self.e.config.max_claim_abandons).unwrap_or(NonZeroU32::MIN)
    }

    async fn hand_back(
        &self,
        now: Timestamp,
        retry_at: Timestamp,
        mode: AbandonMode,
    ) -> Result<AbandonOutcome, VehicleError> {
        let policy = AbandonPolicy {
            expected_seq: self.lease.checkpoint_seq,
            now,
            retry_at,
            max_claim_abandons: self.max_claim_abandons(),
            mode,
        };
        let outcome = self
            .e
            .backend
            .abandon_claim(&self.lease.run_id, &self.lease.claim_token, &policy)
            .await
            .map_err(|e| self.store_error(e))?;
        Ok(outcome)
    }

    fn count_abandon(&self, disposition: AbandonOutcome, reason: &str) {
        self.stats().bump(Counter::Abandon);
        if disposition == AbandonOutcome::Poisoned {
            self.stats().bump(Counter::Poison);
        }
        tracing::info!(reason, disposition = ?disposition, "docket.vehicle.abandon");
    }

    /// Stored-graph incompatibility: poisoning hand-back, woken at `base + jitter(base)`
    /// (constant, not exponential: the shared abandon counter poisons a persistently broken
    /// graph).
    pub(super) async fn abandon(
        &self,
        reason: IncompatibleReason,
    ) -> Result<DrainOutcome, VehicleError> {
        let now = self.e.clock.now();
        let base = self.e.config.abandon_backoff_ms;
        let delay = base.saturating_add(self.e.jitter.jitter(base));
        let retry_at = now.add_millis(i64::try_from(delay).unwrap_or(i64::MAX));
        let disposition = self
            .hand_back(now, retry_at, AbandonMode::Poisoning)
            .await?;
        self.count_abandon(disposition, reason.kind());
        Ok(DrainOutcome::Abandoned {
            disposition,
            reason,
        })
    }

    /// Host incompatibility: non-poisoning hand-back; the store computes the exponential wake
    /// from the durable abandon count, so a fleet without a compatible host pushes the run back
    /// instead of spinning.
    pub(super) async fn host_incompatible(
        &self,
        error: RuntimeError,
    ) -> Result<DrainOutcome, VehicleError> {
        let now = self.e.clock.now();
        let config = &self.e.config;
        let retry_at = now.add_millis(i64::try_from(config.abandon_backoff_ms).unwrap_or(i64::MAX));
        let mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: config.abandon_backoff_ms,
                cap_ms: config.abandon_backoff_cap_ms,
            }),
        };
        let outcome = match self.hand_back(now, retry_at, mode).await? {
            AbandonOutcome::Stale => {
                self.stats().bump(Counter::FenceLoss);
                tracing::info!(stage = "abandon", "docket.claim.fence_lost");
                DrainOutcome::FenceLost
            }
            AbandonOutcome::Rescheduled | AbandonOutcome::Poisoned => {
                self.stats().bump(Counter::HostIncompatible);
                tracing::info!(
                    node_id = error.node_id.as_deref().unwrap_or(""),
                    "docket.vehicle.host_incompatible"
                );
                DrainOutcome::HostIncompatible(error)
            }
        };
        Ok(outcome)
    }

    /// No attempt of the active superstep is due yet: hand back until the earliest deadline
    /// (this counts one abandon).
    pub(super) async fn defer(&self, resume_at: Timestamp) -> Result<DrainOutcome, VehicleError> {
        let now = self.e.clock.now();
        let retry_at = resume_at.max(now);
        let disposition = self
            .hand_back(now, retry_at, AbandonMode::Poisoning)
            .await?;
        self.count_abandon(disposition, "deferred");
        Ok(DrainOutcome::Deferred(disposition))
    }
}
