//! (h) Wakeup latency: from the `start_run` call to the moment a vehicle of an idle worker
//! first reads the run after claiming it (how every drain begins, just before the first node
//! runs), with the store's push hints on and with them hidden, so the worker only finds the
//! run on its jittered poll. The poll interval is the floor either way: a hint is worth having
//! only if it beats the poll, and without hints the wait must still end within one interval.
//!
//! Samples are taken one at a time on an otherwise idle worker: each run is started a random
//! 2–12 ms after the previous one finished (so no poll triggered by that run's vehicle exit is
//! still in flight, and the start is not in step with the poll timer), and the next sample
//! waits until it finished. Each run is a 1-node graph; every one is verified: done with
//! `n = 1` and a sound history, with no fence loss, crash, discard, abandon or poison.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;
use rand::Rng;
use tokio::sync::Semaphore;

use docket_core::store::Layered;

use super::super::claims::ORPHAN_TTL_MS;
use super::super::driver::{histogram, record};
use super::super::e2e::{verify_run, worker_problems};
use super::super::moments::{run_id, SINGLE};
use super::super::{BenchError, Ctx};
use super::watch::Watch;
use docket::engine::WorkerConfig;
use docket::{Docket, StartOptions};

/// Vehicles of the idle worker.
const VEHICLES: usize = 4;

/// How long one sample may take beyond the poll interval before the phase gives up.
const SAMPLE_GRACE: Duration = Duration::from_secs(30);

/// One mode's samples, verified.
pub(crate) struct Wakeups {
    /// Start-to-first-read latencies.
    pub latency: Histogram<u64>,
    /// What the verification proved.
    pub verified: String,
}

/// Takes `samples` samples with push hints on (`hints`) or hidden, the worker polling every
/// `poll_ms`.
pub(crate) async fn run(
    ctx: &Ctx,
    hints: bool,
    samples: usize,
    poll_ms: u64,
) -> Result<Wakeups, BenchError> {
    let phase = if hints { "h-push" } else { "h-poll" };
    let watch = Arc::new(Layered(Watch::new(
        Arc::clone(&ctx.backend),
        hints,
        Arc::new(Semaphore::new(0)),
    )));
    let docket = Docket::builder(watch.clone(), docket::nodes::registry())
        .config(WorkerConfig {
            concurrency: VEHICLES,
            poll_interval_ms: poll_ms,
            // The runs other phases hold claimed stay theirs (and are not work for this one).
            orphan_ttl_ms: ORPHAN_TTL_MS,
            ..WorkerConfig::default()
        })
        .build()?;
    let graph = docket.save_graph_json(SINGLE.graph).await?;
    let worker = docket.start_worker();
    let stats = Arc::clone(worker.stats());
    let mut latency = histogram();
    let mut failure: Option<BenchError> = None;
    let limit = Duration::from_millis(poll_ms) + SAMPLE_GRACE;
    for i in 0..samples {
        let gap = rand::thread_rng().gen_range(2..=12);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let id = run_id(phase, i)?;
        watch.0.target(id.clone());
        let asked = Instant::now();
        let options = StartOptions {
            run_id: Some(id.clone()),
            ..StartOptions::default()
        };
        if let Err(e) = docket.start_run(&graph, Default::default(), options).await {
            failure = Some(e.into());
            break;
        }
        let Some(read) = watch.0.first_read(asked + limit).await else {
            failure = Some(BenchError::Verification(vec![format!(
                "(h) run {id} was not started by the idle worker within {limit:?}"
            )]));
            break;
        };
        record(&mut latency, read - asked);
        let deadline = Instant::now() + limit;
        while watch.0.finished() < i as u64 + 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if watch.0.finished() < i as u64 + 1 {
            failure = Some(BenchError::Verification(vec![format!(
                "(h) run {id} did not finish within {limit:?}"
            )]));
            break;
        }
    }
    let shutdown = worker.shutdown().await;
    if let Some(e) = failure {
        return Err(e);
    }
    let mut problems = worker_problems(&stats.snapshot());
    if !shutdown.drained {
        problems.push("(h) the worker did not drain at shutdown".into());
    }
    let checks: Vec<(u64, Vec<String>)> = futures::stream::iter(0..samples)
        .map(|i| {
            let docket = &ctx.docket;
            async move { verify_run(docket, &run_id(phase, i)?, SINGLE.output).await }
        })
        .buffer_unordered(16)
        .try_collect()
        .await?;
    problems.extend(checks.into_iter().flat_map(|(_, p)| p));
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    Ok(Wakeups {
        latency,
        verified: format!(
            "(h) push hints {}: {samples} runs, each started on an idle worker polling every \
             {poll_ms} ms, done with n = 1 and a sound history; no fence loss, crash, discard, \
             abandon or poison",
            if hints { "on" } else { "off" }
        ),
    })
}
