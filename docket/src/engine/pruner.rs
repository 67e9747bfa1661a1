//! The pruner task (`docs/engine.md`, “The pruner”): one retention pass at start, then one every
//! interval.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use docket_core::model::Clock;
use docket_core::store::{Backend, PrunePolicy};

use super::config::PrunerConfig;

/// Runs passes until `stop` reads `true`. Errors are logged and the next pass still runs:
/// retention is housekeeping, never a reason to stop a worker.
pub(crate) async fn run(
    backend: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
    config: PrunerConfig,
    mut stop: watch::Receiver<bool>,
) {
    let batch_size = NonZeroU32::new(config.batch_size).unwrap_or(NonZeroU32::MIN);
    loop {
        let policy = PrunePolicy {
            now: clock.now(),
            event_retention_ms: config.event_retention_ms,
            run_retention_ms: config.run_retention_ms,
            batch_size,
        };
        match backend.prune(&policy).await {
            Ok(report) => tracing::info!(
                result = if report.skipped_locked {
                    "locked"
                } else {
                    "ok"
                },
                events_deleted = report.events_deleted,
                runs_deleted = report.runs_deleted,
                cascade_events_deleted = report.cascade_events_deleted,
                graphs_deleted = report.graphs_deleted,
                "docket.pruner.pass"
            ),
            Err(error) => tracing::warn!(result = "error", %error, "docket.pruner.pass"),
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(config.interval_ms)) => {}
            _ = stop.wait_for(|stopping| *stopping) => return,
        }
    }
}
