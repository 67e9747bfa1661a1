//! One process-level chaos run, start to verdict.
//!
//! 1. Start the store: a SQLite file, or a private PostgreSQL cluster / `redis-server` with the
//!    reply-dropping [`Proxy`] in front (workers go through the proxy; the harness itself
//!    talks to the server directly).
//! 2. As the driver, publish the workload's graphs and start every run (through a
//!    journalling-only fault layer, so starts and signals are journalled too).
//! 3. Start the worker processes ([`Fleet`]) and, while the driver plays the human (resolving
//!    interrupts as they open, cancelling some runs), fire the seeded [`schedule`] as runs
//!    settle: kills, freezes past the orphan TTL, server crash-restarts, armed drops.
//! 4. Heal: thaw, disarm the proxy, replace any exited worker, retry poisoned runs, and let
//!    the workers finish (bounded).
//! 5. Stop the workers (SIGTERM), read every journal file, and hand the store and the merged
//!    journal to the [`oracle`](crate::oracle).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use docket::{Docket, StartOptions};
use docket_core::model::{GraphRef, RunId};
use docket_core::store::{Backend, Layered};

use crate::fault::{FaultCounts, FaultLayer, FaultPlan};
use crate::journal::{Journal, JournalSnapshot};
use crate::observer::AckObserver;
use crate::oracle::{check, OracleInput};
use crate::process::fleet::{journals_in, Fleet};
use crate::process::inject::{inject, lock, Server, World};
use crate::process::options::{BackendKind, Mutant, Options};
use crate::process::plan::schedule;
use crate::process::proxy::{Protocol, Proxy};
use crate::process::report::ProcessReport;
use crate::process::servers::{PrivatePostgres, PrivateRedis};
use crate::workload::{
    retry_poisoned, settle, start, worker_config, EffectNode, EFFECT_NODES, GRAPHS,
};

/// How long the heal phase may take before the runs left count as stuck.
const HEAL_FOR: Duration = Duration::from_secs(120);
/// Runs one process-level chaos run and returns its verdict (safe or not).
///
/// # Errors
/// A harness failure: a server or process that cannot start, an unreadable store or journal.
pub async fn run(options: &Options) -> Result<ProcessReport, String> {
    let started = Instant::now();
    let dir = options
        .out
        .join(format!("{}-seed{}", options.backend.name(), options.seed));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;

    let (server, proxy, direct_url, worker_url) = start_store(options, &dir).await?;
    eprintln!(
        "chaos: {} workers on {worker_url} (the harness reads {direct_url}); files in {}",
        options.workers,
        dir.display()
    );
    let store = connect(&direct_url).await?;
    let journal = Arc::new(
        Journal::persistent(&dir.join("driver.jsonl")).map_err(|e| format!("driver.jsonl: {e}"))?,
    );
    let layered: Arc<dyn Backend> = Arc::new(Layered(FaultLayer::new(
        Arc::clone(&store),
        FaultPlan::none(options.seed),
        Arc::clone(&journal),
    )));
    let nodes = docket::nodes::registry()
        .with("chaos.effect", EffectNode::new(Arc::clone(&journal)))
        .map_err(|e| e.to_string())?;
    let mut config = worker_config();
    config.orphan_ttl_ms = options.orphan_ttl_ms;
    let client = Docket::builder(Arc::clone(&layered), nodes)
        .config(config)
        .observer(Arc::new(AckObserver::new(Arc::clone(&journal))))
        .build()
        .map_err(|e| e.to_string())?;
    let mut graphs: Vec<GraphRef> = Vec::new();
    for json in GRAPHS {
        let published = client
            .publish_graph_json(json)
            .await
            .map_err(|e| format!("publishing a graph: {e}"))?;
        graphs.push(published.graph_ref);
    }
    let mut ids = Vec::new();
    for n in 0..options.runs {
        let id = RunId::new(format!("chaos-{}-{n:04}", options.seed)).map_err(|e| e.to_string())?;
        let start_options = StartOptions {
            run_id: Some(id.clone()),
            ..StartOptions::default()
        };
        let graph = &graphs[usize::try_from(n).unwrap_or(0) % graphs.len()];
        start(&client, graph, start_options)
            .await
            .map_err(|e| format!("starting run {id}: {e}"))?;
        ids.push(id);
    }
    eprintln!(
        "chaos: {} runs started in {:.1?}",
        ids.len(),
        started.elapsed()
    );

    let worker_bin = sibling("chaos-worker")?;
    let fleet = Fleet::start(
        &worker_bin,
        &worker_url,
        &dir,
        options.workers,
        options.orphan_ttl_ms,
        mutant_args(options, &dir)?,
    )?;
    let budget = options.budget();
    let plan = schedule(options.seed, options.runs, budget);
    let world = Arc::new(World {
        store: Arc::clone(&store),
        fleet: Mutex::new(fleet),
        server: Arc::new(Mutex::new(server)),
        proxy: proxy.clone(),
        runs: options.runs,
        orphan_ttl: Duration::from_millis(options.orphan_ttl_ms),
        sqlite_db: (options.backend == BackendKind::Sqlite).then(|| dir.join("chaos.db")),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let injector = tokio::spawn(inject(
        Arc::clone(&world),
        plan,
        options.seed,
        Arc::clone(&stop),
    ));

    let faulted_until = Instant::now() + options.duration;
    settle(&client, store.as_ref(), options.duration).await;
    // Every planned fault fires (thresholds lie below the last runs, but freezes can lag):
    // wait for the injector within the phase's time, keeping the human's part going.
    while !injector.is_finished() && Instant::now() < faulted_until {
        settle(&client, store.as_ref(), Duration::from_millis(200)).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let mut faults = injector
        .await
        .map_err(|e| format!("the injector failed: {e}"))??;
    eprintln!(
        "chaos: faulted phase over at {:.1?}; healing",
        started.elapsed()
    );

    // Heal.
    if let Some(proxy) = &proxy {
        proxy.heal();
        let (after, before) = proxy.cuts();
        faults.drops_after_forward = after;
        faults.drops_before_forward = before;
    }
    faults.workers_exited += lock(&world.fleet).replace_exited()?;
    let poisoned_retried = retry_poisoned(&client, store.as_ref(), &ids).await;
    settle(&client, store.as_ref(), HEAL_FOR).await;
    lock(&world.fleet).stop(Duration::from_secs(10));

    let mut snapshot = JournalSnapshot::default();
    let mut torn = 0;
    let files = journals_in(&dir)?;
    for file in &files {
        torn += snapshot
            .read_file(file)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    let input = OracleInput {
        backend: options.backend.name().to_owned(),
        seed: options.seed,
        runs: ids,
        faults: FaultCounts::default(),
        poisoned_retried,
        effect_nodes: EFFECT_NODES
            .iter()
            .map(|n| (*n).to_owned())
            .collect::<HashSet<_>>(),
    };
    let oracle = check(store.as_ref(), &snapshot, &input)
        .await
        .map_err(|e| format!("the oracle could not read the store: {e}"))?;
    drop(client);
    Ok(ProcessReport {
        command: options.command(),
        planned: Some(budget),
        faults,
        torn_lines: torn,
        journals: files.len() as u64,
        elapsed_s: started.elapsed().as_secs_f64(),
        oracle,
    })
}

/// The workers' `--mutant` arguments (a token-blind store shares tokens through `dir/tokens`).
fn mutant_args(options: &Options, dir: &Path) -> Result<Vec<String>, String> {
    let Some(mutant) = options.mutant else {
        return Ok(Vec::new());
    };
    let mut args = vec!["--mutant".to_owned(), mutant.name().to_owned()];
    if mutant == Mutant::TokenBlind {
        let tokens = dir.join("tokens");
        std::fs::create_dir_all(&tokens).map_err(|e| format!("{}: {e}", tokens.display()))?;
        args.push("--tokens".to_owned());
        args.push(tokens.display().to_string());
    }
    Ok(args)
}

/// A binary built next to the running one.
fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe
        .parent()
        .map(|d| d.join(name))
        .ok_or("the running binary has no directory")?;
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} is not built", path.display()))
    }
}

/// Starts the store; returns the server, the proxy, the harness's URL and the workers' URL.
async fn start_store(
    options: &Options,
    dir: &Path,
) -> Result<(Server, Option<Proxy>, String, String), String> {
    match options.backend {
        BackendKind::Sqlite => {
            let url = format!("sqlite://{}", dir.join("chaos.db").display());
            Ok((Server::None, None, url.clone(), url))
        }
        BackendKind::Postgres => {
            let pg = tokio::task::spawn_blocking({
                let dir = dir.join("pg");
                move || PrivatePostgres::start(&dir)
            })
            .await
            .map_err(|e| e.to_string())??;
            let proxy = Proxy::start(pg.port(), Protocol::Postgres, options.seed).await?;
            let direct = pg.url_via(pg.port());
            let via = pg.url_via(proxy.port());
            Ok((Server::Postgres(pg), Some(proxy), direct, via))
        }
        BackendKind::Redis => {
            let redis = PrivateRedis::start(&dir.join("redis"))?;
            let proxy = Proxy::start(redis.port(), Protocol::Redis, options.seed).await?;
            let direct = redis.url_via(redis.port());
            let via = redis.url_via(proxy.port());
            Ok((Server::Redis(redis), Some(proxy), direct, via))
        }
    }
}

/// Connects, retrying for a while (a fresh server may still be starting).
async fn connect(url: &str) -> Result<Arc<dyn Backend>, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match docket::connect_backend(url).await {
            Ok(store) => return Ok(store),
            Err(e) if Instant::now() >= deadline => return Err(format!("{url}: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
