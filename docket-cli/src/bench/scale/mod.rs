//! The scale figures: each measured at a small and a large size (or beside its floor) in one
//! run, so the ratio says what size costs. `BENCHMARKS.md` (“Scale figures”) lists them:
//!
//! | figure | small | large | ratio |
//! | --- | --- | --- | --- |
//! | (f) claim latency p50 / p99, limit 1 | 1,000 pending runs | 1,000,000 pending | large ÷ small |
//! | (g) end-to-end runs/s, 3-node graph | 2,000-run backlog | 100,000-run backlog | large ÷ small |
//! | (h) wakeup p50 / p99 / max, push hints on and off | — | 10,000 samples | ÷ the poll interval |
//! | (h) the same p99 / max from `start_run`'s return | — | the same samples | ÷ the poll interval |
//! | (e) peak RSS of the worker's process | after 10,000 completed runs | after 100,000 | large ÷ small |
//! | (a), (c) 3-node and 1-node at each concurrency of the sweep | — | 1, 4, 16, 64 | ÷ the floor at that concurrency |
//!
//! Those are the [`ScaleOptions::full`] sizes, for runs by hand; [`ScaleOptions::quick`] keeps a
//! backend within a few minutes (100,000 pending, a 20,000-run backlog, 2,000 → 20,000
//! completed runs, 1,000 wakeup samples at a 100 ms poll) and [`ScaleOptions::smoke`] only
//! proves the machinery. Every label names its sizes. Each phase verifies what it wrote (see
//! its module).

mod backlog;
mod claim_latency;
pub(super) mod flow;
mod memory;
mod seed;
mod sweep;
mod wakeup;
pub(super) mod watch;

use std::time::Duration;

pub use sweep::CurvePoint;

use super::driver::{quantile_ms, Window};
use super::report::{number, Better, Figure};
use super::{BenchError, Ctx};

/// One scale figure (or the sweep), to measure alone or beside some of the others: a full-size
/// run takes half an hour, and re-measuring one figure should not (`--scale-figures`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleFigure {
    /// (e) peak RSS after many completed runs (`e`).
    Memory,
    /// (h) wakeup latency, push hints on and off (`h`).
    Wakeup,
    /// (a) and (c) at each concurrency of the sweep (`sweep`).
    Sweep,
    /// (f) claim latency and seeding with many pending runs (`f`).
    ClaimLatency,
    /// (g) end to end beside a large backlog (`g`).
    Backlog,
}

impl ScaleFigure {
    /// Every scale figure, in the order they run.
    pub const ALL: [ScaleFigure; 5] = [
        ScaleFigure::Memory,
        ScaleFigure::Wakeup,
        ScaleFigure::Sweep,
        ScaleFigure::ClaimLatency,
        ScaleFigure::Backlog,
    ];

    /// The name `--scale-figures` takes.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ScaleFigure::Memory => "e",
            ScaleFigure::Wakeup => "h",
            ScaleFigure::Sweep => "sweep",
            ScaleFigure::ClaimLatency => "f",
            ScaleFigure::Backlog => "g",
        }
    }

    /// Parses a comma-separated list of figure names (`e`, `h`, `sweep`, `f`, `g`, or `all`).
    ///
    /// # Errors
    /// [`BenchError::Options`] naming an unknown or repeated name, or an empty list.
    pub fn parse_list(list: &str) -> Result<Vec<ScaleFigure>, BenchError> {
        if list.trim() == "all" {
            return Ok(Self::ALL.to_vec());
        }
        let mut chosen = Vec::new();
        for name in list.split(',').map(str::trim) {
            let figure = Self::ALL
                .into_iter()
                .find(|f| f.name() == name)
                .ok_or_else(|| {
                    BenchError::Options(format!(
                        "unknown scale figure {name:?}: e, h, sweep, f, g or all"
                    ))
                })?;
            if chosen.contains(&figure) {
                return Err(BenchError::Options(format!(
                    "scale figure {name:?} named twice"
                )));
            }
            chosen.push(figure);
        }
        Ok(chosen)
    }
}

/// Sizes of the scale figures.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleOptions {
    /// The preset's name, shown in every label (`quick`, `full`, `smoke`).
    pub name: String,
    /// Concurrency levels of the (a)/(c) sweep.
    pub sweep: Vec<usize>,
    /// Warm-up and measured window of each sweep phase and of (g).
    pub window: Duration,
    /// (f): pending runs of the small and the large size.
    pub claim_pending: (usize, usize),
    /// (f): claims timed at each size.
    pub claim_samples: usize,
    /// (g): pending runs of the small and the large backlog.
    pub backlog: (usize, usize),
    /// (e): completed runs at the two readings.
    pub completed: (usize, usize),
    /// (h): samples with push hints on, and again with them off.
    pub wakeup_samples: usize,
    /// (h): the worker's poll interval, in milliseconds.
    pub wakeup_poll_ms: u64,
    /// The figures measured (every one in the presets); they run in [`ScaleFigure::ALL`]'s
    /// order whatever the order here.
    pub figures: Vec<ScaleFigure>,
}

impl ScaleOptions {
    /// The sizes the figures are defined at; a run takes long (a million runs to seed, and
    /// 10,000 wakeup samples of a 1 s poll without hints, spread over eight stores: about ten
    /// minutes of them), so it is for runs by hand, not CI.
    #[must_use]
    pub fn full() -> Self {
        ScaleOptions {
            name: "full".into(),
            sweep: vec![1, 4, 16, 64],
            window: Duration::from_secs(5),
            claim_pending: (1_000, 1_000_000),
            claim_samples: 5_000,
            backlog: (2_000, 100_000),
            completed: (10_000, 100_000),
            wakeup_samples: 10_000,
            wakeup_poll_ms: docket::engine::WorkerConfig::default().poll_interval_ms,
            figures: ScaleFigure::ALL.to_vec(),
        }
    }

    /// Smaller sizes that keep one backend within a few minutes (the same ratios of sizes
    /// where it matters: 10× completed runs for (e)).
    #[must_use]
    pub fn quick() -> Self {
        ScaleOptions {
            name: "quick".into(),
            sweep: vec![1, 4, 16, 64],
            window: Duration::from_secs(2),
            claim_pending: (1_000, 100_000),
            claim_samples: 2_000,
            backlog: (2_000, 20_000),
            completed: (2_000, 20_000),
            wakeup_samples: 1_000,
            wakeup_poll_ms: 100,
            figures: ScaleFigure::ALL.to_vec(),
        }
    }

    /// Tiny sizes: proves every figure is produced and verified, measures nothing worth
    /// quoting.
    #[must_use]
    pub fn smoke() -> Self {
        ScaleOptions {
            name: "smoke".into(),
            sweep: vec![1, 4],
            window: Duration::from_millis(300),
            claim_pending: (20, 200),
            claim_samples: 30,
            backlog: (20, 200),
            completed: (20, 100),
            wakeup_samples: 10,
            wakeup_poll_ms: 50,
            figures: ScaleFigure::ALL.to_vec(),
        }
    }

    /// The preset named `name` (`off` is `None`).
    ///
    /// # Errors
    /// [`BenchError::Options`] for an unknown name.
    pub fn preset(name: &str) -> Result<Option<Self>, BenchError> {
        match name {
            "off" => Ok(None),
            "smoke" => Ok(Some(Self::smoke())),
            "quick" => Ok(Some(Self::quick())),
            "full" => Ok(Some(Self::full())),
            other => Err(BenchError::Options(format!(
                "unknown scale {other:?}: off, smoke, quick or full"
            ))),
        }
    }

    /// Checks the sizes.
    ///
    /// # Errors
    /// [`BenchError::Options`] naming the first bad size.
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Options(format!("scale: {m}")));
        if self.sweep.is_empty() || self.sweep.iter().any(|c| *c == 0 || *c > 1_000) {
            return bad("every sweep level must be 1..=1000");
        }
        if self.window.is_zero() {
            return bad("the window must be positive");
        }
        let ordered = |(small, large): (usize, usize)| small > 0 && large >= small;
        if !ordered(self.claim_pending) || !ordered(self.backlog) || !ordered(self.completed) {
            return bad("each small size must be positive and at most its large size");
        }
        // Run ids carry seven digits.
        if self.claim_pending.1 + self.claim_samples > 9_999_999 {
            return bad("at most 9,999,999 pending runs");
        }
        if self.claim_samples == 0 || self.wakeup_samples == 0 || self.wakeup_poll_ms == 0 {
            return bad("samples and the poll interval must be positive");
        }
        if self.figures.is_empty() {
            return bad("at least one figure must be measured");
        }
        Ok(())
    }

    fn measures(&self, figure: ScaleFigure) -> bool {
        self.figures.contains(&figure)
    }

    fn window(&self) -> Window {
        Window {
            warmup: (self.window / 4).min(Duration::from_secs(1)),
            measure: self.window,
        }
    }
}

/// The scale figures, the sweep's curve and the verification lines.
pub(crate) struct ScaleResult {
    /// The figures, in report order.
    pub figures: Vec<Figure>,
    /// The sweep's levels, for the curve.
    pub curve: Vec<CurvePoint>,
    /// What the verification proved, one line per check.
    pub verified: Vec<String>,
}

/// Runs the chosen scale phases in this order: (e) first while the process is smallest, then
/// (h) on an idle store, the sweep, (f) and (g) (the phases that write the most).
pub(crate) async fn run(ctx: &Ctx, scale: &ScaleOptions) -> Result<ScaleResult, BenchError> {
    let tag = &scale.name;
    let mut figures = Vec::new();
    let mut verified = Vec::new();

    let (small, large) = scale.completed;
    let memory = if scale.measures(ScaleFigure::Memory) {
        ctx.progress
            .phase("(e) memory at scale", memory::run(ctx, small, large))
            .await?
    } else {
        None
    };
    if let Some(memory) = memory {
        figures.push(Figure {
            key: "scale_peak_rss".into(),
            label: format!(
                "(e) peak RSS after {} completed runs [{tag}]",
                number(large as f64)
            ),
            unit: "MiB",
            value: memory.large_kib as f64 / 1024.0,
            floor: memory.small_kib as f64 / 1024.0,
            floor_label: format!("after {} completed runs", number(small as f64)),
            better: Better::Lower,
            meaning: "growth of the peak from the small to the large count (1.0 = none)",
        });
        verified.push(memory.verified);
    }

    let poll = scale.wakeup_poll_ms as f64;
    let modes: &[bool] = if scale.measures(ScaleFigure::Wakeup) {
        &[true, false]
    } else {
        &[]
    };
    for &hints in modes {
        let what = if hints {
            "(h) wakeups, push hints on"
        } else {
            "(h) wakeups, push hints off"
        };
        let sampled = wakeup::run(ctx, hints, scale.wakeup_samples, scale.wakeup_poll_ms);
        let w = ctx.progress.phase(what, sampled).await?;
        let mode = if hints { "push" } else { "poll" };
        let said = if hints { "on" } else { "off" };
        for (q, name) in [(0.5, "p50"), (0.99, "p99"), (1.0, "max")] {
            figures.push(wakeup_figure(
                format!("wakeup_{mode}_{name}"),
                format!(
                    "(h) wakeup {name}, push hints {said}, {} samples [{tag}]",
                    number(scale.wakeup_samples as f64)
                ),
                quantile_ms(&w.latency, q),
                poll,
                "share of the poll interval waited (≤ 1 keeps the target)",
            ));
        }
        // The same samples counted from the start's return: a stalled commit of the start
        // itself (a WAL flush, an fsync) is the store's latency, not the wakeup's, and the
        // rows above include it.
        for (q, name) in [(0.99, "p99"), (1.0, "max")] {
            figures.push(wakeup_figure(
                format!("wakeup_{mode}_committed_{name}"),
                format!("(h) wakeup {name} after start_run returned, push hints {said} [{tag}]"),
                quantile_ms(&w.after_start, q),
                poll,
                "the same samples without the start's own commit",
            ));
        }
        verified.push(w.verified);
    }

    let sweep = if scale.measures(ScaleFigure::Sweep) {
        ctx.progress
            .phase(
                "(a)(c) concurrency sweep",
                sweep::run(ctx, &scale.sweep, scale.window()),
            )
            .await?
    } else {
        sweep::Sweep::default()
    };
    for p in &sweep.points {
        let c = p.concurrency;
        figures.push(Figure {
            key: format!("commit_throughput_c{c}"),
            label: format!("(a) fenced claimed commits/s, concurrency {c}"),
            unit: "commits/s",
            value: p.commits,
            floor: p.commit_floor,
            floor_label: format!("raw conditional update, concurrency {c}"),
            better: Better::Higher,
            meaning: "share of the raw update rate reached",
        });
        for (key, nodes, rate, per_run) in [
            ("e2e_throughput_c", 3, p.runs_chain, p.chain_commits_per_run),
            (
                "e2e_throughput_1node_c",
                1,
                p.runs_single,
                p.single_commits_per_run,
            ),
        ] {
            figures.push(Figure {
                key: format!("{key}{c}"),
                label: format!("(c) end-to-end runs/s, {nodes}-node graph, concurrency {c}"),
                unit: "runs/s",
                value: rate,
                floor: p.commit_floor / per_run.max(1) as f64,
                floor_label: format!("raw updates/s ÷ {per_run} commits per run"),
                better: Better::Higher,
                meaning: "share of the run rate the bare updates alone would allow",
            });
        }
    }
    verified.extend(sweep.verified);

    if scale.measures(ScaleFigure::ClaimLatency) {
        let measured = claim_figures(ctx, scale, &mut figures, &mut verified);
        ctx.progress.phase("(f) claims at scale", measured).await?;
    }
    if scale.measures(ScaleFigure::Backlog) {
        let measured = backlog_figure(ctx, scale, &mut figures, &mut verified);
        ctx.progress.phase("(g) backlog", measured).await?;
    }

    Ok(ScaleResult {
        figures,
        curve: sweep.points,
        verified,
    })
}

/// One (h) row: a wakeup latency beside the poll interval `poll` (ms).
fn wakeup_figure(
    key: String,
    label: String,
    value: f64,
    poll: f64,
    meaning: &'static str,
) -> Figure {
    Figure {
        key,
        label,
        unit: "ms",
        value,
        floor: poll,
        floor_label: "the worker's poll interval".into(),
        better: Better::Lower,
        meaning,
    }
}

/// (f): claim latency at the two pending counts, and the seeding rate.
async fn claim_figures(
    ctx: &Ctx,
    scale: &ScaleOptions,
    figures: &mut Vec<Figure>,
    verified: &mut Vec<String>,
) -> Result<(), BenchError> {
    let tag = &scale.name;
    let (small, large) = scale.claim_pending;
    let claims = claim_latency::run(ctx, small, large, scale.claim_samples).await?;
    for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
        figures.push(Figure {
            key: format!("claim_latency_{name}_at_scale"),
            label: format!(
                "(f) claim latency {name}, limit 1, {} pending [{tag}]",
                number(claims.large.pending as f64)
            ),
            unit: "ms",
            value: quantile_ms(&claims.large.latency, q),
            floor: quantile_ms(&claims.small.latency, q),
            floor_label: format!("{} pending", number(claims.small.pending as f64)),
            better: Better::Lower,
            meaning: "times the latency at the small size (target ≤ 1.5 at p99)",
        });
    }
    figures.push(Figure {
        key: "seed_rate".into(),
        label: format!(
            "(f) seeding {} pending runs, runs/s [{tag}]",
            number(claims.large.pending as f64)
        ),
        unit: "runs/s",
        value: claims.large.pending as f64 / claims.large.seeded_in.as_secs_f64().max(1e-9),
        floor: claims.small.pending as f64 / claims.small.seeded_in.as_secs_f64().max(1e-9),
        floor_label: format!("seeding {} runs", number(claims.small.pending as f64)),
        better: Better::Higher,
        meaning: "share of the small seeding rate kept (batches of 500 initializes)",
    });
    verified.extend(claims.verified);
    Ok(())
}

/// (g): end to end beside the large backlog, against the small one.
async fn backlog_figure(
    ctx: &Ctx,
    scale: &ScaleOptions,
    figures: &mut Vec<Figure>,
    verified: &mut Vec<String>,
) -> Result<(), BenchError> {
    let tag = &scale.name;
    let (small, large) = scale.backlog;
    let backlog = backlog::run(ctx, small, large, scale.window()).await?;
    figures.push(Figure {
        key: "e2e_throughput_backlog".into(),
        label: format!(
            "(g) end-to-end runs/s, 3-node graph, {}-run backlog [{tag}]",
            number(backlog.large.backlog as f64)
        ),
        unit: "runs/s",
        value: backlog.large.rate,
        floor: backlog.small.rate,
        floor_label: format!("{}-run backlog", number(backlog.small.backlog as f64)),
        better: Better::Higher,
        meaning: "share of the small-backlog rate kept (target ≥ 0.9)",
    });
    verified.extend(backlog.verified);
    Ok(())
}
