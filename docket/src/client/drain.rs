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
    /// For tests of your own graphs and nodes: no worker, no timing, each call advances
    /// due runs in the caller and says what it did.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::RunStatus;
    /// use docket::{Docket, DocketError, StartOptions, TestingMode};
    ///
    /// let backend = docket::connect_backend("memory://").await?;
    /// let docket = Docket::builder(backend, docket::nodes::registry())
    ///     .testing(TestingMode::Manual)
    ///     .build()?;
    /// let graph = docket
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "hello",
    ///         "nodes": {"hi": {"implementation": "std.set"}},
    ///         "edges": {"a": {"from": "$start", "to": "hi"}, "b": {"from": "hi", "to": "$finish"}}}"#)
    ///     .await?
    ///     .graph_ref;
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// let summary = docket.drain_runs(10).await?;
    /// assert!(summary.drained >= 1);
    /// assert_eq!(docket.fetch_run(&run.id).await?.status, RunStatus::Done);
    ///
    /// // Zero iterations is a mistake, and production handles refuse to drain.
    /// assert!(matches!(docket.drain_runs(0).await, Err(DocketError::InvalidOptions(_))));
    /// let production = Docket::connect("memory://").await?;
    /// assert!(matches!(production.drain_runs(1).await, Err(DocketError::TestingModeRequired)));
    /// # Ok(()) }
    /// ```
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
