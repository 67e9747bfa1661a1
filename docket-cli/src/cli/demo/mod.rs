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

use docket::connect::redact;
use docket::core::model::{GraphRef, RunId, RunQuery, RunStatus};
use docket::core::store::Backend;
use docket::engine::{DrainBudget, Worker, WorkerConfig, WorkerStats};
use docket::examples::{Example, EXAMPLES};
use docket::{Docket, DocketError, StartOptions};

use super::admin::all_runs;
use super::{json as render, CliResult};

/// The demo's default store, recreated on every run.
pub const DEFAULT_DEMO_URL: &str = "sqlite://docket-demo.db";

/// The demo's orphan TTL: short, so a killed worker's runs are recovered within seconds.
const ORPHAN_TTL_MS: u64 = 2_000;

/// On Redis the demo works in the namespace named by the URL (`?namespace=`), or
/// `docket-demo` when it names none, and deletes that namespace's keys first; on PostgreSQL
/// it drops and recreates the URL's schema (`?schema=`), or `docket_demo` when it names none.
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
    /// Only recreate the store, publish the graphs and start the runs, then exit: no
    /// in-process workers (drive the runs with `docket worker` processes instead).
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

/// The namespace the demo uses on Redis when the URL names none: never the default
/// `docket` namespace, because the demo deletes its namespace's keys first.
const DEMO_NAMESPACE: &str = "docket-demo";

/// The schema the demo uses on PostgreSQL when the URL names none: never the default `docket`
/// schema, because the demo drops its schema first.
const DEFAULT_DEMO_SCHEMA: &str = "docket_demo";

/// `url`, with the demo's own namespace (Redis) or schema (PostgreSQL) added when it names
/// none, so the demo never empties a store that may hold real runs.
fn demo_url(url: &str) -> String {
    let (param, value) = match docket::BackendUrl::parse(url) {
        Ok(docket::BackendUrl::Redis(_)) => ("namespace", DEMO_NAMESPACE),
        Ok(docket::BackendUrl::Postgres(_)) => ("schema", DEFAULT_DEMO_SCHEMA),
        _ => return url.to_owned(),
    };
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let named = query
        .split('&')
        .any(|pair| pair == param || pair.starts_with(&format!("{param}=")));
    if named {
        return url.to_owned();
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{param}={value}")
}

/// Opens the demo's store emptied, so every demo starts from scratch: the SQLite files are
/// removed first; a Redis namespace has every key deleted; a PostgreSQL schema is dropped.
async fn open_fresh_store(url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    #[cfg(feature = "postgres")]
    if matches!(
        docket::BackendUrl::parse(url),
        Ok(docket::BackendUrl::Postgres(_))
    ) {
        docket_postgres::PostgresStore::drop_schema(url).await?;
        return docket::connect_backend(url).await;
    }
    #[cfg(feature = "redis")]
    if matches!(
        docket::BackendUrl::parse(url),
        Ok(docket::BackendUrl::Redis(_))
    ) {
        let store = docket::connect::connect_redis(url).await?;
        store.purge_namespace().await?;
        return Ok(Arc::new(store));
    }
    remove_sqlite_files(url)?;
    docket::connect_backend(url).await
}

/// Removes the demo's SQLite files (nothing for other backends).
fn remove_sqlite_files(url: &str) -> Result<(), DocketError> {
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
    let _ = url;
    Ok(())
}

/// How long the worker the demo kills runs alone before the others start, if it never held
/// claims with progress committed (it always does within milliseconds on an idle machine).
const VICTIM_HEAD_START: Duration = Duration::from_secs(3);

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
    let url = &demo_url(url);
    let backend = open_fresh_store(url).await?;
    let docket = Docket::builder(backend, docket::nodes::registry())
        .config(demo_config(args.concurrency))
        .build()?;
    let mut refs: Vec<(Example, GraphRef)> = Vec::new();
    for example in EXAMPLES {
        let published = docket.publish_graph_json(example.json).await?;
        super::admin::print_warnings(&published);
        refs.push((example, published.graph_ref));
    }
    if !args.no_workers {
        out!(
            "docket demo: {} runs of {} graphs on {} workers × {} vehicles ({})",
            args.runs,
            refs.len(),
            args.workers,
            args.concurrency,
            redact(url)
        );
    }
    for n in 0..args.runs {
        let (example, graph_ref) = &refs[n % refs.len()];
        docket
            .start_run(graph_ref, example.input(n), StartOptions::default())
            .await?;
    }
    if args.no_workers {
        out!(
            "docket demo: started {} runs of {} graphs ({}); no workers (--no-workers): drive them with `docket worker --backend URL`",
            args.runs,
            refs.len(),
            redact(url)
        );
        return Ok(ExitCode::SUCCESS);
    }

    let started = Instant::now();
    let may_kill = !args.no_kill && args.workers > 1;
    // The worker to kill starts alone, so it is sure to hold claims mid-drain when it is
    // killed (on a loaded machine the others could otherwise drain everything first); the
    // others start once it is killed, or after its head start if it never qualified.
    let mut workers: Vec<Option<Worker>> = vec![Some(docket.start_worker())];
    let mut stats: Vec<Arc<WorkerStats>> = workers
        .iter()
        .flatten()
        .map(|w| Arc::clone(w.stats()))
        .collect();
    let mut start_the_others = |workers: &mut Vec<Option<Worker>>| {
        while workers.len() < args.workers {
            let worker = docket.start_worker();
            stats.push(Arc::clone(worker.stats()));
            workers.push(Some(worker));
        }
    };
    if !may_kill {
        start_the_others(&mut workers);
    }
    let (stop, stop_rx) = watch::channel(false);
    let resolver = tokio::spawn(resolve_approvals(docket.clone(), stop_rx));

    let bar = progress_bar(args.runs as u64);
    let deadline = started + Duration::from_secs(args.timeout_s);
    let mut crash: Option<Crash> = None;
    loop {
        let finished = count_terminal(&docket).await?;
        bar.set_position(finished as u64);
        if may_kill && crash.is_none() {
            crash = maybe_kill(&mut workers[0], started, &bar);
        }
        if crash.is_some() || started.elapsed() >= VICTIM_HEAD_START {
            start_the_others(&mut workers);
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
        out!("{line}");
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
    fn the_demo_never_empties_the_default_redis_namespace() {
        assert_eq!(
            demo_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379?namespace=docket-demo"
        );
        assert_eq!(
            demo_url("redis://h/0?protocol=resp3"),
            "redis://h/0?protocol=resp3&namespace=docket-demo"
        );
        assert_eq!(
            demo_url("redis://h?namespace=mine"),
            "redis://h?namespace=mine"
        );
        assert_eq!(demo_url("sqlite://d.db"), "sqlite://d.db");
    }

    #[test]
    fn a_postgres_demo_url_gets_the_demo_schema_unless_it_names_one() {
        assert_eq!(
            demo_url("postgres://h/db"),
            "postgres://h/db?schema=docket_demo"
        );
        assert_eq!(
            demo_url("postgres://h/db?sslmode=disable"),
            "postgres://h/db?sslmode=disable&schema=docket_demo"
        );
        assert_eq!(
            demo_url("postgres://h/db?pool_size=2&schema=mine"),
            "postgres://h/db?pool_size=2&schema=mine"
        );
    }
}
