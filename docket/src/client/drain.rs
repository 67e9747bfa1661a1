//! Bounded, synchronous drains (`docs/engine.md`, “Bounded drains and testing modes”) and the
//! inline testing mode.

use std::num::NonZeroU32;
use std::sync::Arc;

use docket_core::model::{Run, RunStatus};

use super::{Docket, TestingMode};
use crate::engine::DrainSummary;
use crate::error::DocketError;

/// Default iterations of [`Docket::drain_runs`] and of inline drains.
pub const DEFAULT_MAX_RUNS: u32 = 100;

impl Docket {
    /// Claims and drains due runs one at a time in the caller, at most `max_runs` times
    /// (graph cache off; same admission preference alternation as a dispatcher). Only in a
    /// testing mode.
    ///
    /// # Errors
    /// [`DocketError::TestingModeRequired`] outside a testing mode;
    /// [`DocketError::InvalidOptions`] for `max_runs == 0`; [`DocketError::Drain`] when a
    /// drain ends without a committed park or fails.
    pub async fn drain_runs(&self, max_runs: u32) -> Result<DrainSummary, DocketError> {
        if self.shared.testing == TestingMode::Off {
            return Err(DocketError::TestingModeRequired);
        }
        let max_runs = NonZeroU32::new(max_runs)
            .ok_or_else(|| DocketError::InvalidOptions("max_runs must be positive".into()))?;
        Ok(self
            .engine
            .drain_runs(
                &self.shared.admission,
                Arc::clone(&self.shared.stats),
                max_runs,
            )
            .await?)
    }

    /// In inline mode, drains after a start, resolution or poison recovery and returns the
    /// fresh run; otherwise returns `run` as is.
    pub(crate) async fn after_signal(&self, run: Run) -> Result<Run, DocketError> {
        if self.shared.testing != TestingMode::Inline || run.status.is_terminal() {
            return Ok(run);
        }
        let summary = self.drain_runs(DEFAULT_MAX_RUNS).await?;
        let info = self.inspect_run(&run.id).await?;
        let due = info.wake_at.is_some_and(|w| w <= self.engine.clock().now());
        if summary.limit_reached && info.run.status == RunStatus::Running && due {
            return Err(DocketError::InlineDrainLimitReached(summary));
        }
        Ok(info.run)
    }
}
