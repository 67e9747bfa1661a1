//! `docket bench`: the figures of `BENCHMARKS.md` for one backend beside their raw floors (see
//! `docket_cli::bench`), printed as a table, optionally written as JSON lines and a PNG chart.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use docket::connect::redact;
use docket::DocketError;
use docket_cli::bench::{self, BenchOptions, BenchReport, ChartText, ScaleFigure, ScaleOptions};

use super::CliResult;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Concurrent tasks (and worker vehicles).
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// Seconds of each measured window (floor commits, store commits, end to end).
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Seconds of discarded warm-up before each window [default: a fifth of --seconds, at
    /// most 1].
    #[arg(long)]
    warmup_seconds: Option<f64>,
    /// Due runs (and floor rows) each claim phase drains.
    #[arg(long, default_value_t = 2_000)]
    claim_pool: usize,
    /// The larger claim limit measured besides limit 1.
    #[arg(long, default_value_t = 10)]
    claim_batch: u32,
    /// Most claimed commits group commit sends as one store call: the worker's in the
    /// end-to-end phases, and the fenced-commit phase's tasks commit through it too (1
    /// commits every moment alone) [default: the store's preference, as for a worker: 64 on
    /// SQLite and PostgreSQL, 1 on Redis].
    #[arg(long)]
    max_commit_batch: Option<usize>,
    /// Most group-commit batches at the store at once, in the end-to-end phases' workers and
    /// the fenced-commit phase.
    #[arg(long, default_value_t = docket::engine::DEFAULT_COMMIT_BATCHES_IN_FLIGHT)]
    commit_batches_in_flight: usize,
    /// Runs of the 1-node graph written due before the drain figure's clock starts, then
    /// drained by a fresh worker (0 skips the figure).
    #[arg(long, default_value_t = 20_000)]
    drain_runs: usize,
    /// Runs of the large tenant in the fairness figure (t).
    #[arg(long, default_value_t = 10_000)]
    fairness_backlog: usize,
    /// Runs of each of the four small tenants in the fairness figure (t).
    #[arg(long, default_value_t = 100)]
    fairness_runs: usize,
    /// The scale figures (claim latency with many pending runs, end to end beside a large
    /// backlog, wakeup latency, memory after many runs, the concurrency sweep): `off`,
    /// `smoke` (tiny, proves the machinery), `quick` (minutes per backend, smaller sizes named
    /// in every label) or `full` (the defined sizes; long, by hand).
    #[arg(long, default_value = "off", value_name = "off|smoke|quick|full")]
    scale: String,
    /// Which scale figures to measure, comma-separated: `e` (RSS after many runs), `h`
    /// (wakeup), `sweep` (concurrency sweep), `f` (claim latency with many pending), `g`
    /// (end to end beside a backlog), or `all`. Needs --scale.
    #[arg(long, default_value = "all", value_name = "LIST")]
    scale_figures: String,
    /// Draw the scale figures' throughput-against-concurrency curve as a PNG at FILE.
    #[arg(long, value_name = "FILE.png")]
    curve: Option<PathBuf>,
    /// Write one JSON object per figure to FILE (JSON lines).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw the figures as a PNG chart at FILE.
    #[arg(long, value_name = "FILE.png")]
    chart: Option<PathBuf>,
    /// The git commit to stamp on the JSON lines.
    #[arg(long, env = "DOCKET_BENCH_GIT_COMMIT")]
    git_commit: Option<String>,
    /// After a successful run, delete the store the bench created (the SQLite file, the
    /// PostgreSQL schema or the Redis namespace). A failed run leaves it for inspection.
    #[arg(long)]
    cleanup: bool,
}

impl BenchArgs {
    fn scale(&self) -> Result<Option<ScaleOptions>, DocketError> {
        let invalid = |e: bench::BenchError| DocketError::InvalidOptions(e.to_string());
        let figures = ScaleFigure::parse_list(&self.scale_figures).map_err(invalid)?;
        match ScaleOptions::preset(&self.scale).map_err(invalid)? {
            Some(scale) => Ok(Some(ScaleOptions { figures, ..scale })),
            None if self.scale_figures != "all" => Err(DocketError::InvalidOptions(
                "--scale-figures needs --scale smoke, quick or full".into(),
            )),
            None => Ok(None),
        }
    }

    fn options(&self) -> Result<BenchOptions, DocketError> {
        let seconds = |what: &str, s: f64| {
            Duration::try_from_secs_f64(s)
                .map_err(|_| DocketError::InvalidOptions(format!("{what} must be a duration")))
        };
        let duration = seconds("--seconds", self.seconds)?;
        let warmup = match self.warmup_seconds {
            Some(s) => seconds("--warmup-seconds", s)?,
            None => (duration / 5).min(Duration::from_secs(1)),
        };
        Ok(BenchOptions {
            concurrency: self.concurrency,
            duration,
            warmup,
            claim_pool: self.claim_pool,
            claim_batch: self.claim_batch,
            max_commit_batch: self.max_commit_batch,
            commit_batches_in_flight: self.commit_batches_in_flight,
            drain_runs: self.drain_runs,
            fairness_backlog: self.fairness_backlog,
            fairness_runs: self.fairness_runs,
            scale: self.scale()?,
            git_commit: self.git_commit.clone(),
        })
    }
}

pub async fn run(url: Option<&str>, args: BenchArgs) -> CliResult {
    let url = url.ok_or_else(|| {
        DocketError::InvalidOptions(
            "docket bench needs --backend URL naming a store that does not exist yet \
             (a new SQLite file, PostgreSQL ?schema= or Redis ?namespace=), or memory://"
                .into(),
        )
    })?;
    let options = args.options()?;
    note!(
        "docket bench: {}, concurrency {}, {:.1} s windows after {:.1} s warm-ups, claim pools of {}, group commit {} ({} in flight), scale {} ({})",
        redact(url),
        options.concurrency,
        options.duration.as_secs_f64(),
        options.warmup.as_secs_f64(),
        options.claim_pool,
        options.max_commit_batch.map_or_else(
            || "as the store prefers".to_owned(),
            |n| format!("up to {n} per call")
        ),
        options.commit_batches_in_flight,
        args.scale,
        args.scale_figures
    );
    let report = match bench::run(url, &options).await {
        Ok(report) => report,
        Err(e) => {
            note!("docket bench: {e}");
            note!(
                "docket bench: the store at {} is left as it is, for inspection",
                redact(url)
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, report.json_lines()).map_err(|e| {
            DocketError::InvalidOptions(format!("cannot write {}: {e}", path.display()))
        })?;
        out!("JSON lines: {}", path.display());
    }
    if let Some(path) = &args.chart {
        match bench::render_chart(&report, path) {
            Ok(ChartText::Labelled) => out!("chart: {}", path.display()),
            Ok(ChartText::Unlabelled { legend }) => {
                out!(
                    "chart: {} (no font found: bars only; set DOCKET_BENCH_FONT to a .ttf for labels)\n{legend}",
                    path.display()
                );
            }
            Err(e) => {
                note!("docket bench: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    if let Some(path) = &args.curve {
        match bench::render_curve(&report, path) {
            Ok(true) => out!("curve: {}", path.display()),
            Ok(false) => out!("curve: none drawn (no concurrency sweep: --scale is off)"),
            Err(e) => {
                note!("docket bench: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    if args.cleanup {
        match bench::purge(url).await {
            Ok(what) => out!("cleanup: deleted {what}"),
            Err(e) => {
                note!("docket bench: cleanup failed: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &BenchReport) {
    out!(
        "\n{} — concurrency {}, {:.1} s windows{}",
        report.backend,
        report.concurrency,
        report.duration.as_secs_f64(),
        report
            .git_commit
            .as_deref()
            .map_or_else(String::new, |c| format!(", commit {c}"))
    );
    out!("{}", report.table());
    for floor in &report.floors {
        out!("  {floor}");
    }
    out!("verified:");
    for line in &report.verified {
        out!("  ✓ {line}");
    }
}
