//! (h) Wakeup latency: from the `start_run` call to the moment a vehicle of an idle worker
//! starts the run after claiming it (its first node call, `bench::started`), with the store's
//! push hints on and with them hidden, so the worker only finds the run on its jittered poll.
//! The poll interval is the floor either way: a hint is worth having only if it beats the
//! poll, and without hints the wait must still end within one interval.
//! Each sample is also counted from `start_run`'s return, when the run is committed and due:
//! no worker can see a run before that, and a start whose own commit stalls on the store's
//! disk (a WAL flush or an fsync that stalls) otherwise shows up as a late wakeup.
//!
//! Samples are taken one at a time on an otherwise idle worker: each run is started a random
//! 2–12 ms after the previous one finished (so no poll triggered by that run's vehicle exit is
//! still in flight, and the start is not in step with the poll timer), and the next sample
//! waits until it finished. Each run is a 1-node graph; every one is verified: done with
//! `n = 1` and a sound history, with no fence loss, crash, discard, abandon or poison.
//!
//! Without hints a sample waits half a poll interval on average, so 10,000 samples at the
//! worker's 1 s default would take well over an hour one after another. They are taken in
//! [`POLL_LANES`] lanes instead: each lane is a store of its own beside the bench's (the same
//! server; `target::lane_url`), created fresh for the phase and deleted after it, with its own
//! idle worker, sampled one at a time as above. The lanes share nothing but the machine, so
//! every sample is still a run started on an idle worker whose store holds nothing else due;
//! a custom store (which has no URL to place a sibling beside) is sampled in one lane, its
//! own. With hints on, samples take a few milliseconds and run in one lane, so that no two
//! wakeups ever compete for the machine.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;
use rand::Rng;
use tokio::sync::Semaphore;

use docket_core::store::{Backend, Layered};

use super::super::claims::ORPHAN_TTL_MS;
use super::super::driver::{histogram, quantile_ms, record};
use super::super::e2e::{verify_run, worker_problems};
use super::super::moments::{run_id, SINGLE};
use super::super::{target, BenchError, Ctx};
use super::watch::Watch;
use crate::bench::started::reporting_registry;
use docket::engine::WorkerConfig;
use docket::{Docket, StartOptions};

/// Vehicles of the idle worker.
const VEHICLES: usize = 4;

/// How long one sample may take beyond the poll interval before the phase gives up.
const SAMPLE_GRACE: Duration = Duration::from_secs(30);

/// One mode's samples, verified.
pub(crate) struct Wakeups {
    /// Start-to-first-read latencies: from the `start_run` call.
    pub latency: Histogram<u64>,
    /// The same samples from `start_run`'s return — the run committed and due — to the first
    /// read: the part the worker answers for, without the store's own commit of the start.
    pub after_start: Histogram<u64>,
    /// What the verification proved.
    pub verified: String,
}

/// Stores of their own the samples without push hints are spread over (see the module docs).
const POLL_LANES: usize = 8;

/// Run histories read at once to verify a phase's samples, shared by its lanes. Each lane's
/// store has a connection pool of its own, and the lanes finish sampling at about the same
/// time: sixteen reads in every one of eight lanes opened about eighty PostgreSQL connections
/// at once beside the bench's own, past the server's default limit of 100 (`too many clients
/// already`, and the bench failed waiting for a connection).
const VERIFY_READS: usize = 16;

/// Where one sample's time went: its whole latency, then in order the `start_run` call (the
/// run's initializing commit), the wait from its return until the claim call that leased the
/// run began (zero when that claim began first), that claim call, and the rest, until the
/// run's first node call.
#[derive(Clone, Copy, Debug, Default)]
struct Split {
    /// When the sample's `start_run` was called, for lining the outlier up with the server's
    /// logs (checkpoints, vacuums).
    at: Option<SystemTime>,
    total: Duration,
    start: Duration,
    wait: Duration,
    claim: Duration,
    launch: Duration,
}

/// What one lane measured: each sample's start-to-first-read latency, the `start_run` part
/// of it and the rest, the slowest sample's [`Split`], and the claim calls that failed.
struct Sampled {
    latency: Histogram<u64>,
    starts: Histogram<u64>,
    after_start: Histogram<u64>,
    slowest: Split,
    claim_failures: u64,
}

/// One lane: a store and the facade that verifies its runs.
struct Lane {
    backend: Arc<dyn Backend>,
    docket: Docket,
    /// The lane's own store's URL, deleted after the phase (`None`: the bench's store).
    url: Option<String>,
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
    let mut lanes = if hints {
        Vec::new()
    } else {
        open_lanes(ctx, POLL_LANES.min(samples)).await?
    };
    if lanes.is_empty() {
        lanes.push(Lane {
            backend: Arc::clone(&ctx.backend),
            docket: ctx.docket.clone(),
            url: None,
        });
    }
    let count = lanes.len();
    let results = futures::future::join_all(lanes.iter().enumerate().map(|(k, lane)| {
        let indexes: Vec<usize> = (k..samples).step_by(count).collect();
        let reads = (VERIFY_READS / count).max(1);
        sample_lane(lane, phase, hints, indexes, poll_ms, reads)
    }))
    .await;
    let (mut latency, mut starts, mut slowest) = (histogram(), histogram(), Split::default());
    let mut after_start = histogram();
    let mut claim_failures = 0;
    let merge = |e: hdrhistogram::errors::AdditionError| {
        BenchError::Setup(format!("merging wakeup histograms: {e}"))
    };
    for lane in results {
        let lane = lane?;
        latency.add(&lane.latency).map_err(merge)?;
        starts.add(&lane.starts).map_err(merge)?;
        after_start.add(&lane.after_start).map_err(merge)?;
        if lane.slowest.total > slowest.total {
            slowest = lane.slowest;
        }
        claim_failures += lane.claim_failures;
    }
    let mut deleted = 0;
    for lane in lanes {
        let Lane {
            backend,
            docket,
            url,
        } = lane;
        drop((backend, docket));
        if let Some(url) = url {
            target::purge(&url).await?;
            deleted += 1;
        }
    }
    let mode = if hints { "on" } else { "off" };
    let placement = if deleted > 0 {
        format!(
            "{samples} runs over {deleted} fresh stores beside the bench's (deleted afterwards), \
             each started on the store's own idle worker"
        )
    } else {
        format!("{samples} runs, each started on an idle worker")
    };
    Ok(Wakeups {
        latency,
        after_start,
        verified: format!(
            "(h) push hints {mode}: {placement} polling every {poll_ms} ms, done with n = 1 and \
             a sound history; no fence loss, crash, discard, abandon or poison; start_run p50 \
             {:.2} ms, p99 {:.2} ms, max {:.1} ms; the slowest sample, {:.1} ms (started {}): \
             start_run {:.1} ms, then {:.1} ms until the claim that leased it began, {:.1} ms in that \
             claim, {:.1} ms to the first node call; {claim_failures} claim calls failed",
            quantile_ms(&starts, 0.5),
            quantile_ms(&starts, 0.99),
            quantile_ms(&starts, 1.0),
            ms(slowest.total),
            time_of_day(slowest.at),
            ms(slowest.start),
            ms(slowest.wait),
            ms(slowest.claim),
            ms(slowest.launch),
        ),
    })
}

/// `HH:MM:SS.mmm UTC` of `at`, the form server logs use.
fn time_of_day(at: Option<SystemTime>) -> String {
    let Some(since) = at.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()) else {
        return "at an unknown time".into();
    };
    let s = since.as_secs();
    format!(
        "at {:02}:{:02}:{:02}.{:03} UTC",
        s / 3_600 % 24,
        s / 60 % 60,
        s % 60,
        since.subsec_millis()
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// Opens `count` fresh stores beside the bench's; none when it has no URL or no sibling.
async fn open_lanes(ctx: &Ctx, count: usize) -> Result<Vec<Lane>, BenchError> {
    let Some(url) = &ctx.url else {
        return Ok(Vec::new());
    };
    let mut lanes = Vec::with_capacity(count);
    for n in 1..=count {
        let Some(lane_url) = target::lane_url(url, n)? else {
            return Ok(Vec::new());
        };
        // Refuses a store that exists (a failed run's lane is left for inspection).
        let opened = target::open(&lane_url).await?;
        let docket =
            Docket::builder(Arc::clone(&opened.backend), docket::nodes::registry()).build()?;
        lanes.push(Lane {
            backend: opened.backend,
            docket,
            url: Some(lane_url),
        });
    }
    Ok(lanes)
}

/// Samples the runs numbered `indexes` one at a time on a new idle worker over `lane`, then
/// verifies each of them, `verify_reads` at a time.
async fn sample_lane(
    lane: &Lane,
    phase: &str,
    hints: bool,
    indexes: Vec<usize>,
    poll_ms: u64,
    verify_reads: usize,
) -> Result<Sampled, BenchError> {
    let watch = Arc::new(Layered(Watch::new(
        Arc::clone(&lane.backend),
        hints,
        Arc::new(Semaphore::new(0)),
    )));
    let docket = Docket::builder(watch.clone(), reporting_registry(watch.clone())?)
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
    let (mut latency, mut starts, mut slowest) = (histogram(), histogram(), Split::default());
    let mut after_start = histogram();
    let mut failure: Option<BenchError> = None;
    let limit = Duration::from_millis(poll_ms) + SAMPLE_GRACE;
    for (done, &i) in indexes.iter().enumerate() {
        let gap = rand::thread_rng().gen_range(2..=12);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let id = run_id(phase, i)?;
        watch.0.target(id.clone());
        let asked = Instant::now();
        let asked_at = SystemTime::now();
        let options = StartOptions {
            run_id: Some(id.clone()),
            ..StartOptions::default()
        };
        if let Err(e) = docket.start_run(&graph, Default::default(), options).await {
            failure = Some(e.into());
            break;
        }
        let started = asked.elapsed();
        let Some(read) = watch.0.started(asked + limit).await else {
            failure = Some(BenchError::Verification(vec![format!(
                "(h) run {id} was not started by the idle worker within {limit:?}"
            )]));
            break;
        };
        record(&mut latency, read - asked);
        record(&mut starts, started);
        record(&mut after_start, (read - asked).saturating_sub(started));
        if read - asked > slowest.total {
            let returned = asked + started;
            let (began, claimed) = watch.0.target_claim().unwrap_or((read, read));
            slowest = Split {
                at: Some(asked_at),
                total: read - asked,
                start: started,
                wait: began.saturating_duration_since(returned),
                claim: claimed.saturating_duration_since(began),
                launch: read.saturating_duration_since(claimed),
            };
        }
        let deadline = Instant::now() + limit;
        while watch.0.finished() < done as u64 + 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if watch.0.finished() < done as u64 + 1 {
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
    let checks: Vec<(u64, Vec<String>)> = futures::stream::iter(indexes)
        .map(|i| {
            let docket = &lane.docket;
            async move { verify_run(docket, &run_id(phase, i)?, SINGLE.output).await }
        })
        .buffer_unordered(verify_reads)
        .try_collect()
        .await?;
    problems.extend(checks.into_iter().flat_map(|(_, p)| p));
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    Ok(Sampled {
        latency,
        starts,
        after_start,
        slowest,
        claim_failures: watch.0.claim_failures(),
    })
}
