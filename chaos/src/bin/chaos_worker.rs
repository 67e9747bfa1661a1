//! `chaos-worker --backend URL --journal FILE [--orphan-ttl-ms MS]`: one worker process of the
//! process-level chaos harness.
//!
//! It runs the real engine on the chaos workload's nodes over the store at `URL`, wrapped in a
//! journalling-only [`docket_chaos::FaultLayer`] (it injects nothing: this process's faults
//! are done *to* it). Every minted claim, every commit call with its token digest and what
//! came of it, every acknowledged commit and every node execution is appended to `FILE` as
//! one JSON line before the engine moves on, so SIGKILL loses nothing recorded. SIGTERM stops
//! it cleanly.
//!
//! `--mutant <token-blind|assume-landed|blind-retry> [--tokens DIR]` breaks it on purpose
//! (see [`docket_chaos::mutant`]), for the tests that show the oracle failing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use docket::Docket;
use docket_chaos::journal::Reply;
use docket_chaos::mutant::{AssumeLanded, BlindRetry, TokenBlind};
use docket_chaos::observer::AckObserver;
use docket_chaos::process::options::Mutant;
use docket_chaos::workload::{worker_config, EffectNode};
use docket_chaos::{FaultLayer, FaultPlan, Journal};
use docket_core::store::{Backend, Layered};

struct Args {
    backend: String,
    journal: PathBuf,
    orphan_ttl_ms: u64,
    /// A deliberately broken layer (tests of the oracle only).
    mutant: Option<Mutant>,
    /// Where a shared token-blind store keeps the tokens it learned.
    tokens: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut backend = None;
    let mut journal = None;
    let mut orphan_ttl_ms = 800;
    let mut mutant = None;
    let mut tokens = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--backend" => backend = Some(value),
            "--journal" => journal = Some(PathBuf::from(value)),
            "--orphan-ttl-ms" => {
                orphan_ttl_ms = value.parse().map_err(|_| "bad --orphan-ttl-ms")?
            }
            "--mutant" => mutant = Some(Mutant::parse(&value)?),
            "--tokens" => tokens = Some(PathBuf::from(value)),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Args {
        backend: backend.ok_or("--backend is required")?,
        journal: journal.ok_or("--journal is required")?,
        orphan_ttl_ms,
        mutant,
        tokens,
    })
}

/// Connects, retrying while the server is away (a restart may be under way).
async fn connect(url: &str) -> Result<Arc<dyn Backend>, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match docket::connect_backend(url).await {
            Ok(store) => return Ok(store),
            Err(e) if Instant::now() < deadline => {
                eprintln!("chaos-worker: connect failed, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(format!("cannot connect to {url}: {e}")),
        }
    }
}

async fn work(args: Args) -> Result<(), String> {
    let journal = Arc::new(
        Journal::persistent(&args.journal)
            .map_err(|e| format!("{}: {e}", args.journal.display()))?,
    );
    let mut store = connect(&args.backend).await?;
    if args.mutant == Some(Mutant::TokenBlind) {
        let dir = args
            .tokens
            .clone()
            .ok_or("--mutant token-blind needs --tokens DIR")?;
        store = Arc::new(Layered(TokenBlind::shared(store, dir)));
    }
    let mut layered: Arc<dyn Backend> = Arc::new(Layered(FaultLayer::new(
        store,
        FaultPlan::none(0),
        Arc::clone(&journal),
    )));
    match args.mutant {
        Some(Mutant::AssumeLanded) => {
            layered = Arc::new(Layered(AssumeLanded { inner: layered }));
        }
        Some(Mutant::BlindRetry) => layered = Arc::new(Layered(BlindRetry { inner: layered })),
        Some(Mutant::TokenBlind) | None => {}
    }
    let nodes = docket::nodes::registry()
        .with("chaos.effect", EffectNode::new(Arc::clone(&journal)))
        .map_err(|e| e.to_string())?;
    let mut config = worker_config();
    config.orphan_ttl_ms = args.orphan_ttl_ms;
    let engine = Docket::builder(layered, nodes)
        .config(config)
        .observer(Arc::new(AckObserver::new(Arc::clone(&journal))))
        .build()
        .map_err(|e| e.to_string())?;
    let worker = engine.start_worker();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    term.recv().await;
    let _report = worker.shutdown().await;
    // Observers run on their own tasks: a bounded wait for the last acknowledgements.
    let answered_ok = || {
        journal
            .snapshot()
            .attempts
            .iter()
            .filter(|a| a.reply == Reply::Ok)
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while journal.ack_count() < answered_ok() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("chaos-worker: {e}");
            return ExitCode::from(2);
        }
    };
    match work(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaos-worker: {e}");
            ExitCode::FAILURE
        }
    }
}
