//! (c) End-to-end runs/s of a graph (the 3-node chain, and the 1-node graph beside it)
//! through a real [`docket::Worker`], and (d)
//! claim-to-start latency, watched by the [`Probe`] so the engine runs unmodified.
//!
//! Producers keep at most `2N` runs started but unfinished (each finished run frees a slot),
//! so the worker always has work and the store always sees starts and moments interleaved, as
//! in production. Runs/s counts the runs that finished inside the measured window. After the
//! window the producers stop, the worker finishes every started run and shuts down, and every
//! run is verified.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;
use serde_json::json;
use tokio::sync::Semaphore;

use docket_core::model::{RunId, RunStatus};
use docket_core::store::Layered;

use super::driver::task_failed;
use super::moments::{run_id, Shape};
use super::probe::Probe;
use super::verify::run_and_history;
use super::{BenchError, Ctx};
use crate::bench::started::reporting_registry;
use docket::engine::{StatsSnapshot, WorkerConfig};
use docket::{Docket, StartOptions};

/// How long the worker may take to finish the runs still in flight after the window.
const FINISH_GRACE: Duration = Duration::from_secs(120);

/// (c) and the claim-to-start half of (d), verified.
pub(crate) struct E2eResult {
    /// Runs finished per second inside the window.
    pub rate: f64,
    /// Checkpoints every run committed (initialization included).
    pub commits_per_run: u64,
    /// From the `claim_due` call that leased a run to its first node call.
    pub claim_to_start: Histogram<u64>,
    /// What the verification proved.
    pub verified: Vec<String>,
}

/// Runs the phase with `shape`'s graph; `phase` names its runs (`bench-<phase>-<n>`), so the
/// phase can run more than once on one store.
pub(crate) async fn run(ctx: &Ctx, phase: &str, shape: Shape) -> Result<E2eResult, BenchError> {
    let n = ctx.options.concurrency;
    let backlog = Arc::new(Semaphore::new(2 * n));
    let probe = Arc::new(Layered(Probe::new(
        Arc::clone(&ctx.backend),
        Arc::clone(&backlog),
    )));
    let docket = Docket::builder(probe.clone(), reporting_registry(probe.clone())?)
        .config(WorkerConfig {
            concurrency: n,
            max_commit_batch: ctx.options.max_commit_batch,
            commit_batches_in_flight: ctx.options.commit_batches_in_flight,
            // The runs other phases hold claimed stay theirs, however long this one takes.
            orphan_ttl_ms: super::claims::ORPHAN_TTL_MS,
            ..WorkerConfig::default()
        })
        .build()?;
    let graph = docket.save_graph_json(shape.graph).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let next_id = Arc::new(AtomicUsize::new(0));
    let started: Arc<Mutex<Vec<RunId>>> = Arc::default();
    let producers: Vec<_> = (0..(n / 2).max(2))
        .map(|_| {
            let (docket, graph) = (docket.clone(), graph.clone());
            let (stop, next_id, started) = (
                Arc::clone(&stop),
                Arc::clone(&next_id),
                Arc::clone(&started),
            );
            let backlog = Arc::clone(&backlog);
            let phase = phase.to_owned();
            tokio::spawn(async move {
                loop {
                    // A closed semaphore is the stop signal for a producer waiting for a slot.
                    let Ok(slot) = backlog.acquire().await else {
                        return Ok::<(), BenchError>(());
                    };
                    slot.forget();
                    if stop.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    let id = run_id(&phase, next_id.fetch_add(1, Ordering::SeqCst))?;
                    let options = StartOptions {
                        run_id: Some(id.clone()),
                        ..StartOptions::default()
                    };
                    docket
                        .start_run(&graph, Default::default(), options)
                        .await?;
                    if let Ok(mut ids) = started.lock() {
                        ids.push(id);
                    }
                }
            })
        })
        .collect();
    let worker = docket.start_worker();
    let window = ctx.options.window();
    tokio::time::sleep(window.warmup).await;
    let counted_from = Instant::now();
    tokio::time::sleep(window.measure).await;
    // A window in which no run finished measures nothing (a loaded machine, a short smoke
    // window): it is extended until the first run finishes, bounded like the drain below.
    let extend_until = Instant::now() + FINISH_GRACE;
    while probe.finished_between(counted_from, Instant::now()) == 0 && Instant::now() < extend_until
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let counted_to = Instant::now();
    stop.store(true, Ordering::SeqCst);
    backlog.close();
    let mut producer_error = None;
    for producer in producers {
        if let Err(e) = producer.await.map_err(task_failed).and_then(|r| r) {
            producer_error.get_or_insert(e);
        }
    }
    let ids: Vec<RunId> = started.lock().map(|ids| ids.clone()).unwrap_or_default();
    let stats = Arc::clone(worker.stats());
    let deadline = Instant::now() + FINISH_GRACE;
    // A run whose vehicle crashed or lost its fence would only finish after its claim expires:
    // stop waiting, the verification below fails on the worker's counters anyway.
    while probe.finished() < ids.len() as u64
        && Instant::now() < deadline
        && worker_problems(&stats.snapshot()).is_empty()
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let shutdown = worker.shutdown().await;
    let claim_to_start = probe.claim_to_start();
    if let Some(e) = producer_error {
        return Err(e);
    }

    let mut problems = Vec::new();
    if probe.finished() != ids.len() as u64 {
        problems.push(format!(
            "(c) {} runs started but {} finished within {FINISH_GRACE:?} after the window",
            ids.len(),
            probe.finished()
        ));
    }
    let snap = stats.snapshot();
    problems.extend(worker_problems(&snap));
    if !shutdown.drained {
        problems.push("(c) the worker did not drain at shutdown".into());
    }
    let per_run = verify_runs(&ctx.docket, &ids, shape.output, n, &mut problems).await?;
    let commits_per_run = match per_run.as_slice() {
        [one] => *one,
        [] => {
            problems.push("(c) no run finished: nothing was measured".into());
            0
        }
        many => {
            problems.push(format!(
                "(c) runs of one graph committed different numbers of checkpoints: {many:?}"
            ));
            0
        }
    };
    if claim_to_start.is_empty() {
        problems.push("(c) no vehicle started a claimed run".into());
    }
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    let finished = probe.finished_between(counted_from, counted_to);
    Ok(E2eResult {
        rate: finished as f64 / (counted_to - counted_from).as_secs_f64(),
        commits_per_run,
        claim_to_start,
        verified: vec![format!(
            "(c) {} runs of the {}-node graph at concurrency {n}: each done with n = {}, \
             {commits_per_run} checkpoints and a sound history; {} moments committed with no \
             fence loss, crash, discard, abandon or poison",
            ids.len(),
            shape.nodes,
            shape.output,
            snap.moments_committed
        )],
    })
}

/// Anything the worker counted that a sound store and a single worker never cause.
pub(crate) fn worker_problems(snap: &StatsSnapshot) -> Vec<String> {
    [
        ("fence losses", snap.fence_losses),
        ("discarded moments", snap.discards),
        ("vehicle crashes", snap.vehicle_crashes),
        ("abandons", snap.abandons),
        ("poisons", snap.poisons),
        ("host-incompatible hand-backs", snap.host_incompatible),
    ]
    .into_iter()
    .filter(|(_, count)| *count != 0)
    .map(|(what, count)| format!("(c) the worker reported {count} {what}"))
    .collect()
}

/// Verifies every run of `ids` as [`verify_run`] does, `in_flight` read-backs at a time,
/// adding their problems to `problems`; returns the checkpoint counts they ended at, sorted
/// and each once (one count when every run of a graph committed alike).
///
/// # Errors
/// The first read-back that failed.
pub(crate) async fn verify_runs(
    docket: &Docket,
    ids: &[RunId],
    expected: i64,
    in_flight: usize,
    problems: &mut Vec<String>,
) -> Result<Vec<u64>, BenchError> {
    let seqs: Vec<(u64, Vec<String>)> = futures::stream::iter(ids)
        .map(|id| verify_run(docket, id, expected))
        .buffer_unordered(in_flight.max(1))
        .try_collect()
        .await?;
    let mut per_run: Vec<u64> = seqs.iter().map(|(seq, _)| *seq).collect();
    problems.extend(seqs.into_iter().flat_map(|(_, p)| p));
    per_run.sort_unstable();
    per_run.dedup();
    Ok(per_run)
}

/// The run's checkpoint count and its problems.
pub(crate) async fn verify_run(
    docket: &Docket,
    id: &RunId,
    expected: i64,
) -> Result<(u64, Vec<String>), BenchError> {
    let (run, history) = run_and_history(docket, id).await?;
    let mut problems: Vec<String> = history
        .into_iter()
        .map(|p| format!("(c) run {id}: {p}"))
        .collect();
    if run.status != RunStatus::Done {
        problems.push(format!("(c) run {id} is {}, not done", run.status));
    }
    let output = run.output.as_ref().and_then(|o| o.get("n"));
    if output != Some(&json!(expected)) {
        problems.push(format!(
            "(c) run {id} has output n = {output:?}, expected {expected}"
        ));
    }
    Ok((run.checkpoint_seq, problems))
}
