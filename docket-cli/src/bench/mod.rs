//! `docket bench`: the benchmarks listed in `BENCHMARKS.md` (“The figures”), each figure measured
//! side by side with its raw floor in the same run on the same server and reported as a ratio.
//!
//! | figure | what is measured | raw floor (same server, driver, settings, concurrency) |
//! | --- | --- | --- |
//! | (a) commits/s | `N` tasks, each holding its own claimed run, commit moments back to back through [`RunStore::commit_claimed`](docket_core::store::RunStore::commit_claimed) (claim retained) | a single-row conditional update `… WHERE id AND seq AND token` on a bare table (a compare-and-set script on Redis) |
//! | (b) claims/s | `N` claimers drain a pool of due runs with [`RunStore::claim_due`](docket_core::store::RunStore::claim_due), limit 1 and limit `K` | a single-statement claim on a bare table (`FOR UPDATE SKIP LOCKED` on PostgreSQL, `UPDATE … RETURNING` on SQLite, a `ZPOPMIN` script on Redis) |
//! | (c) runs/s | a 3-node graph (`std.increment` × 3), and a 1-node graph beside it, end to end through a real [`docket::Worker`] with `N` vehicles while producers keep `2N` runs in flight | the commit floor divided by the checkpoints one run commits |
//! | (c) drain runs/s | [`BenchOptions::drain_runs`] 1-node runs written due before the clock starts, drained by a fresh worker of `N` vehicles: the way a job queue's harness measures (see `drain`) | the commit floor divided by the checkpoints one run commits on the clock |
//! | (d) latency p50/p99 | commit latency of (a); claim-to-start of (c): from the `claim_due` call that leased a run to the vehicle's first read of it | the floor update's latency; the floor claim's latency (limit 1) |
//! | (f) registry transitions/s | `N` tasks, each its own session, cycle fresh operations through register → start → complete on the store's [`OpsLifecycleRegistry`](docket_core::ops::OpsLifecycleRegistry) (only on stores that offer one) | the raw conditional update of (a): one registry transition is one conditional write of one row |
//! | (e) peak RSS | `VmHWM` of the process after the measured phases (before the long commit histories are read back) | `VmRSS` right after connecting |
//!
//! With [`BenchOptions::scale`] set, the scale figures follow (see [`ScaleOptions`]): claim
//! latency with many pending runs, end to end beside a large backlog, wakeup latency with and
//! without push hints, memory after many completed runs, and (a) and (c) across concurrency.
//!
//! Every run ends by verifying what it wrote and fails with [`BenchError::Verification`]
//! otherwise: each committed run's `checkpoint_seq` is `1 +` the commits counted for it and its
//! history is sound; each floor row's seq equals its counted updates; every pooled run (and
//! floor row) was claimed exactly once; every end-to-end run finished `done` with `n = 3` and a
//! sound history, with no fence loss, crash, discard, abandon or poison in the worker.
//!
//! The bench needs a fresh store (see [`purge`] and the `target` module): it claims every due
//! run it sees. Benchmarks are measurements, not tests: nothing here asserts a speed.

mod chart;
mod claims;
mod commits;
mod curve;
mod drain;
mod driver;
mod e2e;
mod fair_claims;
mod fairness;
mod floor;
mod moments;
mod probe;
mod progress;
mod registry;
mod report;
mod rss;
mod scale;
mod started;
mod target;
mod verify;

use std::sync::Arc;
use std::time::Duration;

use docket_core::store::{Backend, StoreError};

use docket::error::DocketError;
use docket::Docket;

pub use chart::{render_chart, ChartText};
pub use curve::render_curve;
pub use report::{BenchReport, Better, Figure};
pub use scale::{CurvePoint, ScaleFigure, ScaleOptions};
pub use target::purge;

use driver::{quantile_ms, Window};
use floor::Floor;

/// What to measure and for how long.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    /// Concurrent tasks in (a) and (b), worker vehicles in (c). Default 10.
    pub concurrency: usize,
    /// The measured window of each timed phase (floor commits, store commits, end to end).
    pub duration: Duration,
    /// Discarded warm-up before each window.
    pub warmup: Duration,
    /// Due runs (and floor rows) each claim phase drains. Default 2,000.
    pub claim_pool: usize,
    /// The larger claim limit `K` of (b). Default 10.
    pub claim_batch: u32,
    /// The worker's `max_commit_batch` in (c), and the group commit (a)'s tasks commit
    /// through: how many claimed commits group commit sends as one store call (`Some(1)`
    /// commits each moment alone). Default `None`: the store's preference, as a worker's.
    pub max_commit_batch: Option<usize>,
    /// The worker's `commit_batches_in_flight` in (c), and the group commit (a)'s tasks
    /// commit through: how many batches are at the store at once. Default the worker's,
    /// [`docket::engine::DEFAULT_COMMIT_BATCHES_IN_FLIGHT`].
    pub commit_batches_in_flight: usize,
    /// Runs of the 1-node graph the drain figure writes before its clock starts and then
    /// times a worker through (0: not measured). Default 20,000, the size a job queue's
    /// harness drains.
    pub drain_runs: usize,
    /// Runs of the large tenant in the fairness figure (t). Default 10,000.
    pub fairness_backlog: usize,
    /// Runs of each of the four small tenants in (t). Default 100.
    pub fairness_runs: usize,
    /// The scale figures and their sizes (`None`: not measured). See [`ScaleOptions`].
    pub scale: Option<ScaleOptions>,
    /// The git commit to stamp on every JSON line.
    pub git_commit: Option<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            concurrency: 10,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            claim_pool: 2_000,
            claim_batch: 10,
            max_commit_batch: docket::engine::WorkerConfig::default().max_commit_batch,
            commit_batches_in_flight: docket::engine::DEFAULT_COMMIT_BATCHES_IN_FLIGHT,
            drain_runs: 20_000,
            fairness_backlog: 10_000,
            fairness_runs: 100,
            scale: None,
            git_commit: None,
        }
    }
}

impl BenchOptions {
    /// Checks the options.
    ///
    /// # Errors
    /// [`BenchError::Options`] naming the first bad option.
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Options(m.to_owned()));
        if self.concurrency == 0 || self.concurrency > 1_000 {
            return bad("concurrency must be 1..=1000");
        }
        if self.max_commit_batch == Some(0) {
            return bad("max_commit_batch must be at least 1");
        }
        if self.commit_batches_in_flight == 0 {
            return bad("commit_batches_in_flight must be at least 1");
        }
        if self.duration.is_zero() {
            return bad("the measured window must be positive");
        }
        if self.claim_pool == 0 || self.claim_pool > 1_000_000 {
            return bad("the claim pool must hold 1..=1,000,000 runs");
        }
        if self.claim_batch < 2 || self.claim_batch > docket_core::model::MAX_PAGE_LIMIT {
            return bad("the claim batch must be 2..=1000");
        }
        if self.drain_runs > 1_000_000 {
            return bad("the drain figure takes at most 1,000,000 runs");
        }
        if self.fairness_runs == 0 || self.fairness_backlog < self.fairness_runs {
            return bad(
                "the fairness figure needs 1 or more small runs and a backlog at least as large",
            );
        }
        if let Some(scale) = &self.scale {
            scale.validate()?;
        }
        Ok(())
    }

    fn window(&self) -> Window {
        Window {
            warmup: self.warmup,
            measure: self.duration,
        }
    }
}

/// Why a bench run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// An option is out of range.
    #[error("invalid bench options: {0}")]
    Options(String),
    /// The store already exists: the bench only runs on a store it creates.
    #[error("the bench needs a fresh store: {0}")]
    NotFresh(String),
    /// Preparing the bench failed.
    #[error("bench set-up: {0}")]
    Setup(String),
    /// The facade refused or failed.
    #[error(transparent)]
    Docket(#[from] DocketError),
    /// The store refused or failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The raw floor failed.
    #[error("raw floor ({backend}): {message}")]
    Floor {
        /// Which backend's floor.
        backend: &'static str,
        /// What happened.
        message: String,
    },
    /// A bench task panicked or was cancelled.
    #[error("a bench task failed: {0}")]
    Task(String),
    /// What the bench wrote is not what it reads back: the figures describe a broken store.
    #[error(
        "VERIFICATION FAILED — the store did not hold what the bench wrote, so its figures are \
         worthless:\n  {}",
        .0.join("\n  ")
    )]
    Verification(Vec<String>),
    /// The chart could not be drawn.
    #[error("chart: {0}")]
    Chart(String),
    /// A file could not be written or removed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// What every phase shares.
pub(crate) struct Ctx {
    /// The store under test (without the probe).
    pub backend: Arc<dyn Backend>,
    /// Its raw floor.
    pub floor: Arc<dyn Floor>,
    /// A facade over `backend` (no worker) for publishing, starting and reading back.
    pub docket: Docket,
    /// The options.
    pub options: BenchOptions,
    /// Reports each phase's end on stderr.
    pub progress: Arc<progress::Progress>,
    /// The store's URL (`None` for a custom store; see [`target::Target::url`]).
    pub url: Option<String>,
}

/// Runs every phase against the fresh store named by `url` and returns the verified figures.
///
/// Order: end to end (c) first, while the store holds nothing else (the 3-node graph, then
/// the 1-node graph, then the 1-node drain); then commits (a); then claims (b); then the
/// registry (f) where the store has one; then (e); then the verification of (a)'s long
/// histories (every other phase verifies as it ends); then the scale figures when asked for
/// (see [`ScaleOptions`]); the fairness figure (t) last. The floor tables (or keys) are
/// removed at the end; the store itself is left for [`purge`].
///
/// # Errors
/// [`BenchError::NotFresh`] for an existing store, [`BenchError::Verification`] when the store
/// did not hold what the bench wrote, and any store, floor or option error.
pub async fn run(url: &str, options: &BenchOptions) -> Result<BenchReport, BenchError> {
    options.validate()?;
    let target = target::open(url).await?;
    measure(target, options).await
}

/// Runs every phase against any store — a custom [`Backend`] included — beside the
/// in-process floor (a compare-and-set and a claim on maps behind one mutex), which is the
/// only floor that needs no knowledge of the store's server. `name` labels the report. The
/// store must be empty, as for [`run`].
///
/// # Errors
/// As [`run`].
pub async fn run_backend(
    name: &str,
    backend: Arc<dyn Backend>,
    options: &BenchOptions,
) -> Result<BenchReport, BenchError> {
    options.validate()?;
    let target = target::Target {
        backend_name: name.to_owned(),
        backend,
        floor: Arc::new(floor::MemoryFloor::default()),
        url: None,
    };
    measure(target, options).await
}

async fn measure(
    target: target::Target,
    options: &BenchOptions,
) -> Result<BenchReport, BenchError> {
    let rss_after_connect = rss::resident_kib();
    let docket = Docket::builder(Arc::clone(&target.backend), docket::nodes::registry()).build()?;
    let ctx = Ctx {
        backend: Arc::clone(&target.backend),
        floor: Arc::clone(&target.floor),
        docket,
        options: options.clone(),
        url: target.url.clone(),
        progress: Arc::new(progress::Progress::new(&target.backend_name)),
    };
    // Read first, so a server that cannot answer fails the bench before anything is measured.
    let server = ctx.floor.server_settings().await?;
    let measured = async {
        let p = &ctx.progress;
        let e2e = p
            .phase(
                "(c) 3-node end to end",
                e2e::run(&ctx, "e2e", moments::CHAIN),
            )
            .await?;
        let e2e_single = p
            .phase(
                "(c) 1-node end to end",
                e2e::run(&ctx, "e2e1", moments::SINGLE),
            )
            .await?;
        let drained = match options.drain_runs {
            0 => None,
            runs => Some(
                p.phase("(c) 1-node drain", drain::run(&ctx, moments::SINGLE, runs))
                    .await?,
            ),
        };
        let commits = p
            .phase("(a) fenced commits", commits::run(&ctx, "commit"))
            .await?;
        let claims = p.phase("(b) claims", claims::run(&ctx)).await?;
        let fair_claims = p
            .phase("(b) tenant-fair claims", fair_claims::run(&ctx))
            .await?;
        let registry = p.phase("(f) registry", registry::run(&ctx)).await?;
        // (e) is read before the long commit histories are paged back in.
        let peak_rss = rss::peak_kib();
        let store_commits = p
            .phase("(a) histories verified", commits::verify(&ctx, &commits))
            .await?;
        let scale = match &options.scale {
            Some(scale) => Some(scale::run(&ctx, scale).await?),
            None => None,
        };
        // Last: its tenant-fair phase leaves the large tenant's remaining runs due.
        let fairness = p.phase("(t) fairness", fairness::run(&ctx)).await?;
        Ok::<_, BenchError>((
            e2e,
            e2e_single,
            drained,
            scale,
            commits,
            claims,
            fair_claims,
            registry,
            peak_rss,
            store_commits,
            fairness,
        ))
    }
    .await;
    let teardown = ctx.floor.teardown().await;
    let (
        e2e,
        e2e_single,
        drained,
        scale,
        commits,
        claims,
        fair_claims,
        registry,
        peak_rss,
        store_commits,
        fairness,
    ) = measured?;
    teardown?;

    let commit_floor = ctx.floor.commit_statement();
    let claim_floor = ctx.floor.claim_statement();
    let mut figures = vec![
        Figure {
            key: "commit_throughput".into(),
            label: "(a) fenced claimed commits/s".into(),
            unit: "commits/s",
            value: commits.store.rate(),
            floor: commits.floor.rate(),
            floor_label: "raw conditional update".into(),
            better: Better::Higher,
            meaning: "share of the raw update rate reached",
        },
        Figure {
            key: "claim_throughput".into(),
            label: "(b) claims/s, limit 1".into(),
            unit: "claims/s",
            value: claims.single.store_rate,
            floor: claims.single.floor_rate,
            floor_label: "raw single-statement claim".into(),
            better: Better::Higher,
            meaning: "share of the raw claim rate reached",
        },
        Figure {
            key: "claim_throughput_batch".into(),
            label: format!("(b) claims/s, limit {}", options.claim_batch),
            unit: "claims/s",
            value: claims.batch.store_rate,
            floor: claims.batch.floor_rate,
            floor_label: format!("raw claim, limit {}", options.claim_batch),
            better: Better::Higher,
            meaning: "share of the raw claim rate reached",
        },
        Figure {
            key: "claim_throughput_fair".into(),
            label: "(b) claims/s, limit 1, tenant-fair (5 tenants)".into(),
            unit: "claims/s",
            value: fair_claims.single.fair,
            floor: fair_claims.single.oldest,
            floor_label: "oldest-first claims/s, limit 1, on the same kind of pools".into(),
            better: Better::Higher,
            meaning: "share of the oldest-first claim rate kept by the round robin",
        },
        Figure {
            key: "claim_throughput_fair_batch".into(),
            label: format!(
                "(b) claims/s, limit {}, tenant-fair (5 tenants)",
                options.claim_batch
            ),
            unit: "claims/s",
            value: fair_claims.batch.fair,
            floor: fair_claims.batch.oldest,
            floor_label: format!(
                "oldest-first claims/s, limit {}, on the same kind of pools",
                options.claim_batch
            ),
            better: Better::Higher,
            meaning: "share of the oldest-first claim rate kept by the round robin",
        },
        Figure {
            key: "e2e_throughput".into(),
            label: "(c) end-to-end runs/s, 3-node graph".into(),
            unit: "runs/s",
            value: e2e.rate,
            floor: commits.floor.rate() / e2e.commits_per_run as f64,
            floor_label: format!("raw updates/s ÷ {} commits per run", e2e.commits_per_run),
            better: Better::Higher,
            meaning: "share of the run rate the bare updates alone would allow",
        },
        Figure {
            key: "e2e_throughput_1node".into(),
            label: "(c) end-to-end runs/s, 1-node graph".into(),
            unit: "runs/s",
            value: e2e_single.rate,
            floor: commits.floor.rate() / e2e_single.commits_per_run.max(1) as f64,
            floor_label: format!(
                "raw updates/s ÷ {} commits per run",
                e2e_single.commits_per_run
            ),
            better: Better::Higher,
            meaning: "share of the run rate the bare updates alone would allow",
        },
    ];
    if let Some(drained) = &drained {
        figures.push(Figure {
            key: "e2e_drain_1node".into(),
            label: format!(
                "(c) 1-node runs/s draining {} runs written before the clock",
                drained.runs
            ),
            unit: "runs/s",
            value: drained.rate,
            floor: commits.floor.rate() / drained.commits_per_run.max(1) as f64,
            floor_label: format!(
                "raw updates/s ÷ {} commits per run",
                drained.commits_per_run
            ),
            better: Better::Higher,
            meaning: "share of the run rate the bare updates alone would allow",
        });
    }
    for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
        figures.push(Figure {
            key: format!("commit_latency_{name}"),
            label: format!("(d) commit latency {name}"),
            unit: "ms",
            value: quantile_ms(&commits.store.latency, q),
            floor: quantile_ms(&commits.floor.latency, q),
            floor_label: format!("raw conditional update {name}"),
            better: Better::Lower,
            meaning: "times the raw update's latency",
        });
    }
    for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
        figures.push(Figure {
            key: format!("claim_to_start_{name}"),
            label: format!("(d) claim-to-start {name}"),
            unit: "ms",
            value: quantile_ms(&e2e.claim_to_start, q),
            floor: quantile_ms(&claims.single.floor_latency, q),
            floor_label: format!("raw claim statement {name}"),
            better: Better::Lower,
            meaning: "times a bare claim's latency (asking for work → starting it)",
        });
    }
    if let Some(registry) = &registry {
        figures.push(Figure {
            key: "registry_throughput".into(),
            label: "(f) registry transitions/s (register, start, complete)".into(),
            unit: "transitions/s",
            value: registry.outcome.rate(),
            floor: commits.floor.rate(),
            floor_label: "raw conditional update".into(),
            better: Better::Higher,
            meaning: "share of the raw update rate reached",
        });
    }
    if let (Some(peak), Some(base)) = (peak_rss, rss_after_connect) {
        figures.push(Figure {
            key: "peak_rss".into(),
            label: "(e) peak RSS".into(),
            unit: "MiB",
            value: peak as f64 / 1024.0,
            floor: base as f64 / 1024.0,
            floor_label: "RSS after connecting".into(),
            better: Better::Lower,
            meaning: "times the process's RSS before the bench",
        });
    }
    for (key, name, outcome) in [
        ("fairness_small_finish_oldest", "oldest", &fairness.oldest),
        ("fairness_small_finish_fair", "tenant-fair", &fairness.fair),
    ] {
        figures.push(Figure {
            key: key.into(),
            label: format!(
                "(t) {name}: slowest small tenant's {} runs beside a {}-run backlog",
                options.fairness_runs, options.fairness_backlog
            ),
            unit: "s",
            value: outcome
                .small_finish
                .iter()
                .copied()
                .max()
                .unwrap_or_default()
                .as_secs_f64(),
            floor: fairness.alone.as_secs_f64(),
            floor_label: "the four small tenants without the backlog".into(),
            better: Better::Lower,
            meaning: "times as long as the small tenants take without the backlog",
        });
    }
    for (key, name, outcome) in [
        ("fairness_jain_oldest", "oldest", &fairness.oldest),
        ("fairness_jain_fair", "tenant-fair", &fairness.fair),
    ] {
        figures.push(Figure {
            key: key.into(),
            label: format!("(t) {name}: Jain index of claims per active tenant, 1 s windows"),
            unit: "index",
            value: outcome.jain,
            floor: 1.0,
            floor_label: "perfectly equal shares".into(),
            better: Better::Higher,
            meaning: "1 = every active tenant got the same claims; 1/k = one got them all",
        });
    }
    let mut verified = e2e.verified;
    verified.extend(e2e_single.verified);
    verified.extend(drained.into_iter().flat_map(|d| d.verified));
    let mut curve = Vec::new();
    if let Some(scale) = scale {
        figures.extend(scale.figures);
        verified.extend(scale.verified);
        curve = scale.curve;
    }
    verified.push(fair_claims.verified);
    verified.extend(fairness.verified);
    verified.extend(commits.verified);
    verified.push(store_commits);
    verified.extend(claims.verified);
    verified.extend(registry.map(|r| r.verified));
    Ok(BenchReport {
        backend: target.backend_name,
        concurrency: options.concurrency,
        duration: options.duration,
        git_commit: options.git_commit.clone(),
        figures,
        commits_per_run: e2e.commits_per_run,
        verified,
        curve,
        floors: [
            format!("commit floor: {commit_floor}"),
            format!("claim floor: {claim_floor}"),
        ]
        .into_iter()
        .chain(server)
        .collect(),
    })
}
