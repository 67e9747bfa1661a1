//! (c) 1-node drain: the end-to-end figure measured the way a job queue's own harness measures
//! its throughput, so the two can stand side by side.
//!
//! [`BenchOptions::drain_runs`](super::BenchOptions::drain_runs) runs of the 1-node graph are
//! written due before the clock starts — initialized in batches, the write
//! `Docket::start_runs` ends in (the scale figures' seeding) — and only then is a worker
//! of `N` vehicles started; the clock runs from its start until the last of those runs is
//! done. Nothing starts runs while the clock runs, so the figure is what a worker does with
//! work that is already waiting: claims, reads, the node's moment and the completion. The
//! other (c) figures keep producers starting runs inside their windows, which a queue's
//! harness leaves out (apalis's prefills its jobs before its clock starts, for one).
//!
//! Verified like (c): every run is `done` with the graph's output, the same number of
//! checkpoints and a sound history; the worker counted no fence loss, crash, discard, abandon
//! or poison, and its terminal commits equal the runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use docket_core::store::Layered;

use super::e2e::{verify_runs, worker_problems};
use super::moments::{run_id, Shape};
use super::scale::{flow, watch::Watch};
use super::{BenchError, Ctx};

/// How long the drain may take beyond a floor of 2 ms per run before it counts as stuck.
const DRAIN_GRACE: Duration = Duration::from_secs(120);

/// The drain's figure, verified.
pub(crate) struct DrainResult {
    /// Runs drained.
    pub runs: usize,
    /// Runs drained per second: `runs` ÷ the time from the worker's start to the last done.
    pub rate: f64,
    /// Checkpoints each run committed while the clock ran (its initialization was written
    /// before).
    pub commits_per_run: u64,
    /// What the verification proved.
    pub verified: Vec<String>,
}

/// Seeds `runs` due runs of `shape` named `bench-drain-<i>`, then times a fresh worker
/// draining them.
///
/// # Errors
/// Store and facade errors; [`BenchError::Verification`] when a run did not end as its graph
/// dictates or the worker reported a fault.
pub(crate) async fn run(ctx: &Ctx, shape: Shape, runs: usize) -> Result<DrainResult, BenchError> {
    let n = ctx.options.concurrency;
    // Nothing waits on the backlog: the watch only counts finished runs here.
    let watch = Arc::new(Layered(Watch::new(
        Arc::clone(&ctx.backend),
        true,
        Arc::new(Semaphore::new(0)),
    )));
    let (docket, _, seeded_in) = flow::seeded_docket(ctx, &watch, "drain", shape, n, runs).await?;

    let from = Instant::now();
    let worker = docket.start_worker();
    let stats = Arc::clone(worker.stats());
    let deadline = from + DRAIN_GRACE + Duration::from_millis(2) * runs as u32;
    // A run whose vehicle crashed or lost its fence would only finish after its claim
    // expires: stop waiting, the verification below fails on the worker's counters anyway.
    while watch.0.finished() < runs as u64
        && Instant::now() < deadline
        && worker_problems(&stats.snapshot()).is_empty()
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = from.elapsed();
    let shutdown = worker.shutdown().await;

    let mut problems = Vec::new();
    let finished = watch.0.finished();
    if finished != runs as u64 {
        problems.push(format!(
            "(c) drain: {finished} of {runs} runs finished within {:?}",
            deadline - from
        ));
    }
    let snap = stats.snapshot();
    problems.extend(worker_problems(&snap));
    if !shutdown.drained {
        problems.push("(c) drain: the worker did not drain at shutdown".into());
    }
    let ids = (0..runs)
        .map(|i| run_id("drain", i))
        .collect::<Result<Vec<_>, _>>()?;
    let per_run = verify_runs(
        &ctx.docket,
        &ids,
        shape.output,
        n.clamp(4, 32),
        &mut problems,
    )
    .await?;
    // The seeded initialization is checkpoint 1; the rest were committed on the clock.
    let commits_per_run = match per_run.as_slice() {
        [one] if *one > 1 => one - 1,
        other => {
            problems.push(format!(
                "(c) drain: the runs ended at checkpoints {other:?}, not one count above 1"
            ));
            0
        }
    };
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    Ok(DrainResult {
        runs,
        rate: runs as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
        commits_per_run,
        verified: vec![format!(
            "(c) drain: {runs} runs of the {}-node graph written due in {:.2} s before the \
             clock, drained by {n} vehicles in {:.2} s: each done with n = {}, {} checkpoints \
             and a sound history; {} moments committed with no fence loss, crash, discard, \
             abandon or poison",
            shape.nodes,
            seeded_in.as_secs_f64(),
            elapsed.as_secs_f64(),
            shape.output,
            commits_per_run + 1,
            snap.moments_committed
        )],
    })
}
