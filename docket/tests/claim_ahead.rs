//! Claiming ahead (`docs/engine.md`, “The dispatcher”): a vehicle that sends the last commit
//! of its drain runs no node after it, so its slot counts as free from then on and the
//! dispatcher claims the next run while that commit is still in flight.

mod support;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use docket::core::model::{RunId, RunStatus};
use docket::engine::{Worker, WorkerConfig};

use support::graphs::steps;
use support::scripted::{CommitScript, Scripted};
use support::{FullInterval, Parts, VFx};

const LIMIT: Duration = Duration::from_secs(5);

/// The statuses of `ids`, polled until `done` of them are `Done` (panics after [`LIMIT`]).
async fn until_done(fx: &VFx, ids: &[RunId], done: usize) -> Vec<RunStatus> {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let mut statuses = Vec::new();
        for id in ids {
            statuses.push(fx.info(id).await.run.status);
        }
        if statuses.iter().filter(|s| **s == RunStatus::Done).count() >= done {
            return statuses;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{done} of the runs not done within {LIMIT:?}: {statuses:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn the_next_run_is_claimed_and_run_while_the_last_commit_is_in_flight() {
    let fx = VFx::with(
        WorkerConfig {
            concurrency: 1,
            poll_interval_ms: 60_000,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    );
    let ids = [fx.start(&steps(1)).await.id, fx.start(&steps(1)).await.id];
    // The first claimed commit — the first drain's last, its barrier and completion go as one
    // chain — waits for a permit.
    let gate = Arc::new(Semaphore::new(0));
    fx.store
        .script_commits([CommitScript::Gate(Arc::clone(&gate))]);
    let worker = Worker::builder(fx.docket.engine()).start();
    // With one vehicle, the other run can only finish if it was claimed while the first
    // drain's last commit was held (the dispatcher claims on a vehicle's exit otherwise).
    let statuses = until_done(&fx, &ids, 1).await;
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == RunStatus::Running)
            .count(),
        1,
        "one run done, the other held at its last commit: {statuses:?}"
    );
    assert_eq!(
        Scripted::count(&fx.store.claimed_commits),
        3,
        "the held commit and the other run's chain of two"
    );
    gate.add_permits(1);
    until_done(&fx, &ids, 2).await;
    let stats = worker.stats().snapshot();
    assert_eq!(stats.vehicles_launched, 2, "one vehicle per run");
    assert_eq!(
        stats.released_unlaunched, 0,
        "no lease found its slot taken"
    );
    worker.shutdown().await;
}
