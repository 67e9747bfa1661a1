//! A worker fed by producers: the shared machinery of (g) and (e) at scale.
//!
//! `seed` runs are written due before the worker starts; then producers start one new run for
//! every run that finishes beyond `in_flight` free slots, so the number of pending runs stays
//! where it began. [`Flow::finish`] stops the producers, shuts the worker down gracefully and
//! reads every started run back: each is either `done` with the graph's output and a sound
//! history, or still pending — and every pending one is then claimed exactly once (nothing
//! lost, nothing leased twice). The number of runs the store holds as done must equal the
//! number of terminal commits the worker made, and the worker must count no fence loss,
//! crash, discard, abandon or poison.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use docket_core::model::{GraphRef, RunId, RunStatus};
use docket_core::store::Layered;

use super::super::claims::ORPHAN_TTL_MS;
use super::super::commits::claim_exactly;
use super::super::driver::task_failed;
use super::super::e2e::worker_problems;
use super::super::moments::{run_id, Shape};
use super::super::{BenchError, Ctx};
use super::seed;
use super::watch::Watch;
use crate::bench::started::reporting_registry;
use docket::engine::{Worker, WorkerConfig};
use docket::{Docket, StartOptions};

/// Read-backs in flight while verifying.
const VERIFY_IN_FLIGHT: usize = 16;

/// A running worker and its producers.
pub(crate) struct Flow {
    /// The watching store the worker runs on.
    pub watch: Arc<Layered<Watch>>,
    worker: Worker,
    producers: Vec<JoinHandle<Result<(), BenchError>>>,
    backlog: Arc<Semaphore>,
    stop: Arc<AtomicBool>,
    next: Arc<AtomicUsize>,
    phase: String,
    shape: Shape,
    /// How long seeding took.
    pub seeded_in: Duration,
}

/// What [`Flow::finish`] proved.
pub(crate) struct FlowEnd {
    /// Runs started (seeded or by producers).
    pub started: usize,
    /// Of which done.
    pub done: usize,
    /// Of which still pending when the worker stopped (then claimed once each).
    pub pending: usize,
}

/// Seeds `seed` due runs of `shape` named `bench-<phase>-<i>`, starts a worker of
/// `concurrency` vehicles and producers that keep `seed + in_flight` runs unfinished.
///
/// # Errors
/// Store and facade errors while seeding or starting.
pub(crate) async fn start(
    ctx: &Ctx,
    phase: &str,
    shape: Shape,
    concurrency: usize,
    seed: usize,
    in_flight: usize,
) -> Result<Flow, BenchError> {
    let backlog = Arc::new(Semaphore::new(in_flight));
    let watch = Arc::new(Layered(Watch::new(
        Arc::clone(&ctx.backend),
        true,
        Arc::clone(&backlog),
    )));
    let (docket, graph, seeded_in) =
        seeded_docket(ctx, &watch, phase, shape, concurrency, seed).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(seed));
    let producers = (0..(concurrency / 2).max(2))
        .map(|_| {
            let (docket, graph, phase) = (docket.clone(), graph.clone(), phase.to_owned());
            let (stop, next, backlog) =
                (Arc::clone(&stop), Arc::clone(&next), Arc::clone(&backlog));
            tokio::spawn(async move {
                loop {
                    // A closed semaphore is the stop signal for a producer waiting for a slot.
                    let Ok(slot) = backlog.acquire().await else {
                        return Ok(());
                    };
                    slot.forget();
                    if stop.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    let id = run_id(&phase, next.fetch_add(1, Ordering::SeqCst))?;
                    let options = StartOptions {
                        run_id: Some(id),
                        ..StartOptions::default()
                    };
                    docket
                        .start_run(&graph, Default::default(), options)
                        .await?;
                }
            })
        })
        .collect();
    let worker = docket.start_worker();
    Ok(Flow {
        watch,
        worker,
        producers,
        backlog,
        stop,
        next,
        phase: phase.to_owned(),
        shape,
        seeded_in,
    })
}

/// A facade over `watch` whose worker will run `concurrency` vehicles (group commit as the
/// bench's options say; claims other phases hold never expire under it), with `shape`'s
/// graph published and `seed` due runs `bench-<phase>-<i>` written. Returns the facade, the
/// graph and how long the seeding took.
///
/// # Errors
/// Store and facade errors while publishing or seeding.
pub(crate) async fn seeded_docket(
    ctx: &Ctx,
    watch: &Arc<Layered<Watch>>,
    phase: &str,
    shape: Shape,
    concurrency: usize,
    seed: usize,
) -> Result<(Docket, GraphRef, Duration), BenchError> {
    let docket = Docket::builder(watch.clone(), reporting_registry(watch.clone())?)
        .config(WorkerConfig {
            concurrency,
            max_commit_batch: ctx.options.max_commit_batch,
            commit_batches_in_flight: ctx.options.commit_batches_in_flight,
            // The runs other phases hold claimed stay theirs, however long this one takes.
            orphan_ttl_ms: ORPHAN_TTL_MS,
            ..WorkerConfig::default()
        })
        .build()?;
    let graph = docket.save_graph_json(shape.graph).await?;
    let rtg = docket.runtime_graph(&graph).await?;
    let seeded_in = seed::due_runs(&ctx.backend, &rtg, phase, 0..seed).await?;
    Ok((docket, graph, seeded_in))
}

impl Flow {
    /// Stops everything and verifies every started run (see the module docs); `figure`
    /// prefixes the problems.
    ///
    /// # Errors
    /// [`BenchError::Verification`] with every problem found; store errors while reading back.
    pub(crate) async fn finish(self, ctx: &Ctx, figure: &str) -> Result<FlowEnd, BenchError> {
        self.stop.store(true, Ordering::SeqCst);
        self.backlog.close();
        let mut first_error = None;
        for producer in self.producers {
            if let Err(e) = producer.await.map_err(task_failed).and_then(|r| r) {
                first_error.get_or_insert(e);
            }
        }
        let stats = Arc::clone(self.worker.stats());
        let shutdown = self.worker.shutdown().await;
        if let Some(e) = first_error {
            return Err(e);
        }
        let started = self.next.load(Ordering::SeqCst);
        let mut problems: Vec<String> = worker_problems(&stats.snapshot())
            .into_iter()
            .map(|p| format!("{figure}: {p}"))
            .collect();
        if !shutdown.drained {
            problems.push(format!("{figure}: the worker did not drain at shutdown"));
        }
        let expected = self.shape.output;
        let phase = self.phase.as_str();
        let verdicts: Vec<(RunId, RunStatus, Vec<String>)> = futures::stream::iter(0..started)
            .map(|i| async move {
                let id = run_id(phase, i)?;
                let (run, history) =
                    super::super::verify::run_and_history(&ctx.docket, &id).await?;
                let mut found: Vec<String> = history
                    .into_iter()
                    .map(|p| format!("{figure}: run {id}: {p}"))
                    .collect();
                let output = run.output.as_ref().and_then(|o| o.get("n"));
                if run.status == RunStatus::Done && output != Some(&json!(expected)) {
                    found.push(format!(
                        "{figure}: run {id} has output n = {output:?}, expected {expected}"
                    ));
                }
                Ok::<_, BenchError>((id, run.status, found))
            })
            .buffer_unordered(VERIFY_IN_FLIGHT)
            .try_collect()
            .await?;
        let mut pending = BTreeSet::new();
        let mut done = 0;
        for (id, status, found) in verdicts {
            problems.extend(found);
            match status {
                RunStatus::Done => done += 1,
                RunStatus::Running => {
                    pending.insert(id);
                }
                other => problems.push(format!("{figure}: run {id} is {other}")),
            }
        }
        if self.watch.0.finished() != done as u64 {
            problems.push(format!(
                "{figure}: the store holds {done} runs done, but the worker's commits finished {}",
                self.watch.0.finished()
            ));
        }
        if !problems.is_empty() {
            return Err(BenchError::Verification(problems));
        }
        // Every run left pending must be claimable exactly once, and nothing else.
        claim_exactly(ctx.backend.as_ref(), &pending).await?;
        Ok(FlowEnd {
            started,
            done,
            pending: pending.len(),
        })
    }
}
