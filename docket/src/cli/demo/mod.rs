//! `docket demo`: the main job. Publishes the bundled example graphs, starts runs, drives them
//! with an in-process worker pool, kills one worker while it holds claims (its runs are
//! recovered by the others once the claims expire), resolves approvals, and prints a summary.

mod summary;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use tokio::sync::watch;

use docket::core::model::{GraphRef, RunId, RunQuery, RunStatus};
use docket::engine::{DrainBudget, Worker, WorkerConfig, WorkerStats};
use docket::examples::{Example, EXAMPLES};
use docket::{Docket, DocketError, StartOptions};

use super::admin::all_runs;
use super::{json as render, CliResult};

/// The demo's default store, recreated on every run.
pub const DEFAULT_DEMO_URL: &str = "sqlite://docket-demo.db";

/// The schema the demo recreates when a PostgreSQL URL names none (never the default
/// `docket` schema, which may hold real runs).
pub const DEFAULT_DEMO_SCHEMA: &str = "docket_demo";

/// The demo's orphan TTL: short, so a killed worker's runs are recovered within seconds.
const ORPHAN_TTL_MS: u64 = 2_000;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Runs to start (spread over the example graphs).
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// In-process workers.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Vehicles per worker.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Do not kill a worker mid-drain.
    #[arg(long)]
    no_kill: bool,
    /// Give up (and report stuck runs) after this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    /// Only publish the graphs and start the runs, then exit: `docket worker` processes
    /// drive them (prints the URL to give them).
    #[arg(long)]
    no_workers: bool,
}

/// The demo's worker configuration: a 2 s orphan TTL with a matching drain budget (1.5 s) and
/// attempt ceiling (1 s), so recovery after the crash takes seconds, not a minute.
fn demo_config(concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        concurrency,
        poll_interval_ms: 200,
        orphan_ttl_ms: ORPHAN_TTL_MS,
        max_attempt_elapsed_ms: 1_000,
        drain_budget: DrainBudget {
            max_moments: Some(100),
            max_elapsed_ms: 1_500,
        },
        drain_timeout_ms: 5_000,
        ..WorkerConfig::default()
    }
}

/// Empties the demo's store so every demo starts from nothing, and returns the URL to use:
/// SQLite files are removed; a PostgreSQL schema is dropped (the URL's `schema=`, or
/// [`DEFAULT_DEMO_SCHEMA`] added to the URL when it names none).
async fn fresh_store(url: &str) -> Result<String, DocketError> {
    #[cfg(feature = "sqlite")]
    if url.starts_with("sqlite://") {
        let parsed = docket_sqlite::parse_url(url)?;
        let base = parsed.path.as_os_str().to_owned();
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = base.clone();
            file.push(suffix);
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(DocketError::InvalidOptions(format!(
                        "cannot remove the old demo store {}: {e}",
                        std::path::Path::new(&file).display()
                    )))
                }
            }
        }
    }
    #[cfg(feature = "postgres")]
    if matches!(
        docket::BackendUrl::parse(url),
        Ok(docket::BackendUrl::Postgres(_))
    ) {
        let url = with_demo_schema(url);
        docket_postgres::PostgresStore::drop_schema(&url).await?;
        return Ok(url);
    }
    Ok(url.to_owned())
}

/// `url` with `schema=docket_demo` added when it names no schema.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn with_demo_schema(url: &str) -> String {
    let names_schema = url
        .split_once('?')
        .is_some_and(|(_, query)| query.split('&').any(|p| p.starts_with("schema=")));
    if names_schema {
        url.to_owned()
    } else {
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}schema={DEFAULT_DEMO_SCHEMA}")
    }
}

/// The worker killed mid-drain and the claims it held.
pub struct Crash {
    pub held: Vec<RunId>,
    pub after: Duration,
}

pub async fn run(url: &str, args: DemoArgs) -> CliResult {
    if args.runs == 0 || args.workers == 0 {
        return Err(DocketError::InvalidOptions(
            "--runs and --workers must be positive".into(),
        ));
    }
    let url = &fresh_store(url).await?;
    let backend = docket::connect_backend(url).await?;
    let docket = Docket::builder(backend, docket::nodes::registry())
        .config(demo_config(args.concurrency))
        .build()?;
    let mut refs: Vec<(Example, GraphRef)> = Vec::new();
    for example in EXAMPLES {
        refs.push((example, docket.save_graph_json(example.json).await?));
    }
    if args.no_workers {
        println!(
            "docket demo: {} runs of {} graphs, no workers ({url})",
            args.runs,
            refs.len()
        );
    } else {
        println!(
            "docket demo: {} runs of {} graphs on {} workers × {} vehicles ({url})",
            args.runs,
            refs.len(),
            args.workers,
            args.concurrency
        );
    }
    for n in 0..args.runs {
        let (example, graph_ref) = &refs[n % refs.len()];
        docket
            .start_run(graph_ref, example.input(n), StartOptions::default())
            .await?;
    }
    if args.no_workers {
        println!(
            "started {} runs; drive them with: docket worker --backend '{url}' --until-idle",
            args.runs
        );
        return Ok(ExitCode::SUCCESS);
    }

    let started = Instant::now();
    let mut workers: Vec<Option<Worker>> = (0..args.workers)
        .map(|_| Some(docket.start_worker()))
        .collect();
    let stats: Vec<Arc<WorkerStats>> = workers
        .iter()
        .flatten()
        .map(|w| Arc::clone(w.stats()))
        .collect();
    let (stop, stop_rx) = watch::channel(false);
    let resolver = tokio::spawn(resolve_approvals(docket.clone(), stop_rx));

    let bar = progress_bar(args.runs as u64);
    let deadline = started + Duration::from_secs(args.timeout_s);
    let mut crash: Option<Crash> = None;
    let may_kill = !args.no_kill && args.workers > 1;
    loop {
        let finished = count_terminal(&docket).await?;
        bar.set_position(finished as u64);
        if may_kill && crash.is_none() {
            crash = maybe_kill(&mut workers[0], started, &bar);
        }
        if finished >= args.runs || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    let _ = stop.send(true);
    let _ = resolver.await;
    for worker in workers.into_iter().flatten() {
        worker.shutdown().await;
    }

    let runs = all_runs(&docket, RunQuery::default(), usize::MAX).await?;
    let mut statuses: BTreeMap<RunId, (String, RunStatus)> = BTreeMap::new();
    for s in runs {
        statuses.insert(s.id.clone(), (s.graph_id.into_string(), s.status));
    }
    let report = summary::Report::new(&statuses, &stats, crash.as_ref(), elapsed, may_kill);
    report.print();
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn progress_bar(len: u64) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(len), target);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} runs finished ({elapsed})")
    {
        bar.set_style(style);
    }
    bar
}

/// Kills the victim once it is mid-drain: it holds claims and has committed progress.
fn maybe_kill(slot: &mut Option<Worker>, started: Instant, bar: &ProgressBar) -> Option<Crash> {
    let victim = slot.as_ref()?;
    if victim.live_claims().is_empty() || victim.stats().snapshot().moments_committed == 0 {
        return None;
    }
    let held = slot.take()?.kill();
    let line = format!(
        "killed worker 1 mid-drain while it held {} claims; the others recover them once the claims are older than the {} s orphan TTL",
        held.len(),
        ORPHAN_TTL_MS / 1000
    );
    if bar.is_hidden() {
        println!("{line}");
    } else {
        bar.println(line);
    }
    Some(Crash {
        held,
        after: started.elapsed(),
    })
}

async fn count_terminal(docket: &Docket) -> Result<usize, DocketError> {
    let query = RunQuery {
        statuses: Some(vec![
            RunStatus::Done,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ]),
        ..RunQuery::default()
    };
    Ok(all_runs(docket, query, usize::MAX).await?.len())
}

/// Plays the human: approves every open interrupt of waiting runs.
async fn resolve_approvals(docket: Docket, mut stop: watch::Receiver<bool>) {
    loop {
        let query = RunQuery {
            statuses: Some(vec![RunStatus::Waiting]),
            ..RunQuery::default()
        };
        if let Ok(waiting) = all_runs(&docket, query, usize::MAX).await {
            for s in waiting {
                let Ok(info) = docket.inspect_run(&s.id).await else {
                    continue;
                };
                for id in render::open_interrupts(&info) {
                    // A lost race (already resolved, run moved on) is fine: the next pass sees it.
                    let _ = docket.resolve_interrupt(&s.id, &id, json!(true)).await;
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_demo_url_gets_the_demo_schema_unless_it_names_one() {
        assert_eq!(
            with_demo_schema("postgres://h/db"),
            "postgres://h/db?schema=docket_demo"
        );
        assert_eq!(
            with_demo_schema("postgres://h/db?sslmode=disable"),
            "postgres://h/db?sslmode=disable&schema=docket_demo"
        );
        assert_eq!(
            with_demo_schema("postgres://h/db?pool_size=2&schema=mine"),
            "postgres://h/db?pool_size=2&schema=mine"
        );
    }
}
