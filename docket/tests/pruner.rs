//! The worker's pruner task (`docs/engine.md`, “The pruner”): a pass at start deletes
//! terminal runs past retention and keeps live ones.

mod support;

use std::time::Duration;

use docket::core::model::RunId;
use docket::engine::{PrunerConfig, Worker, WorkerConfig};
use docket::DocketError;

use support::graphs::steps;
use support::VFx;

/// Polls (5 s deadline) until no stored row mentions `run_id`: the pruner deleted the run
/// with its events.
async fn wait_until_gone(fx: &VFx, run_id: &RunId) {
    support::poll_until(Duration::from_secs(5), || {
        fx.store
            .inner
            .raw_snapshot()
            .lines()
            .all(|line| !line.contains(run_id.as_str()))
    })
    .await;
}

#[tokio::test]
async fn the_pruner_deletes_terminal_runs_past_retention_and_keeps_live_ones() {
    let fx = VFx::new(WorkerConfig {
        pruner: Some(PrunerConfig {
            interval_ms: 60_000,
            event_retention_ms: 1_000,
            run_retention_ms: 1_000,
            batch_size: 100,
        }),
        ..WorkerConfig::default()
    });
    let finished = fx.start(&steps(1)).await;
    fx.docket.drain_runs(10).await.expect("drain");
    fx.clock.advance_millis(10);
    let live = fx.start(&steps(1)).await;
    fx.clock.advance_millis(60_000);
    // The worker may drain the live run meanwhile; the pruner's first pass runs at start.
    let worker = Worker::start(fx.docket.engine());
    wait_until_gone(&fx, &finished.id).await;
    worker.shutdown().await;
    assert!(matches!(
        fx.docket.fetch_run(&finished.id).await,
        Err(DocketError::NotFound)
    ));
    assert!(fx.docket.fetch_run(&live.id).await.is_ok());
}

/// Scenario 168 of `docs/scenarios.md`: the pass at start is not the only one — a run that finishes
/// and ages past retention afterwards is deleted by a later pass, one interval on.
#[tokio::test]
async fn the_pruner_passes_again_every_interval() {
    let fx = VFx::new(WorkerConfig {
        pruner: Some(PrunerConfig {
            interval_ms: 50,
            event_retention_ms: 1_000,
            run_retention_ms: 1_000,
            batch_size: 100,
        }),
        ..WorkerConfig::default()
    });
    let worker = Worker::start(fx.docket.engine());
    let run = fx.start(&steps(1)).await;
    let done = fx
        .docket
        .await_run(
            &run.id,
            docket::AwaitOptions {
                timeout: Duration::from_secs(5),
                poll_interval: Duration::from_millis(10),
            },
        )
        .await
        .expect("the worker finishes the run");
    assert!(done.status.is_terminal());
    // Only now is it past retention, so only a pass after this point can delete it.
    fx.clock.advance_millis(2_000);
    wait_until_gone(&fx, &run.id).await;
    worker.shutdown().await;
    assert!(matches!(
        fx.docket.fetch_run(&run.id).await,
        Err(DocketError::NotFound)
    ));
}
