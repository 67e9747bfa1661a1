//! `docket worker`: a worker pool until Ctrl-C, or until nothing is due (`--until-idle`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use docket::connect::redact;
use docket::core::store::ClaimPolicy;
use docket::engine::{
    idle_state, DrainBudget, PrunerConfig, StatsSnapshot, Worker, WorkerConfig, WorkerFailure,
    DEFAULT_COMMIT_BATCHES_IN_FLIGHT, DEFAULT_MAX_SUPERSTEPS,
};
use docket::{Docket, DocketError};

use super::CliResult;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Workers (dispatchers) in this process.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Vehicles per worker.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// Milliseconds between scheduled claim polls.
    #[arg(long, default_value_t = 1_000)]
    poll_interval_ms: u64,
    /// A claim older than this may be stolen (must exceed --drain-max-elapsed-ms).
    #[arg(long, default_value_t = 60_000)]
    orphan_ttl_ms: u64,
    /// Most moments per drain.
    #[arg(long, default_value_t = 100)]
    drain_max_moments: u32,
    /// Milliseconds after which a drain yields (must be below --orphan-ttl-ms).
    #[arg(long, default_value_t = 3_000)]
    drain_max_elapsed_ms: u64,
    /// Host ceiling of one node attempt (must not exceed --drain-max-elapsed-ms).
    #[arg(long, default_value_t = 2_000)]
    max_attempt_elapsed_ms: u64,
    /// Delete events and terminal runs older than this many hours (no pruning by default).
    #[arg(long)]
    prune_after_hours: Option<u64>,
    /// Exit once no run is due, claimed or scheduled (waiting runs do not count).
    #[arg(long)]
    until_idle: bool,
    /// Milliseconds between idle checks with --until-idle.
    #[arg(long, default_value_t = 250)]
    idle_check_ms: u64,
    /// Supersteps after which a run of a graph without its own `max_supersteps` policy fails
    /// with max_supersteps_exceeded (a cycle that never ends cannot run forever).
    #[arg(long, default_value_t = DEFAULT_MAX_SUPERSTEPS)]
    max_supersteps: u64,
    /// Which due runs to claim first: `oldest` (oldest due first, whoever owns it) or
    /// `tenant-fair` (breadth-first across tenants with their stored weights and caps; see
    /// `docket tenant`). Workers sharing a store should use the same policy.
    #[arg(long, default_value = "oldest", value_parser = parse_claim_policy)]
    claim_policy: ClaimPolicy,
    /// Most claimed moments group commit sends to the store as one call, each under its own
    /// fences (1 commits every moment alone) [default: the store's preference].
    #[arg(long)]
    max_commit_batch: Option<usize>,
    /// Most group-commit batches at the store at once (more runs batches side by side on a
    /// store with many cores, fewer makes larger batches).
    #[arg(long, default_value_t = DEFAULT_COMMIT_BATCHES_IN_FLIGHT)]
    commit_batches_in_flight: usize,
    /// Serve Prometheus `/metrics` (these workers' counters and the store's run counts) on
    /// this address, without authentication: keep it on loopback or a private network.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
}

/// Parses `--claim-policy`.
pub(super) fn parse_claim_policy(text: &str) -> Result<ClaimPolicy, String> {
    ClaimPolicy::parse(text).map_err(|e| e.to_string())
}

impl WorkerArgs {
    fn config(&self) -> WorkerConfig {
        WorkerConfig {
            concurrency: self.concurrency,
            poll_interval_ms: self.poll_interval_ms,
            orphan_ttl_ms: self.orphan_ttl_ms,
            max_attempt_elapsed_ms: self.max_attempt_elapsed_ms,
            max_supersteps: Some(self.max_supersteps),
            claim_policy: self.claim_policy,
            max_commit_batch: self.max_commit_batch,
            commit_batches_in_flight: self.commit_batches_in_flight,
            drain_budget: DrainBudget {
                max_moments: Some(self.drain_max_moments),
                max_elapsed_ms: self.drain_max_elapsed_ms,
            },
            pruner: self.prune_after_hours.map(|hours| {
                let ms = hours.saturating_mul(3_600_000);
                PrunerConfig {
                    interval_ms: 60_000,
                    event_retention_ms: ms,
                    run_retention_ms: ms,
                    batch_size: 500,
                }
            }),
            ..WorkerConfig::default()
        }
    }
}

pub async fn run(url: &str, args: WorkerArgs) -> CliResult {
    if args.workers == 0 {
        return Err(DocketError::InvalidOptions(
            "--workers must be positive".into(),
        ));
    }
    // Validate before touching the store: a misconfigured worker is refused at start-up.
    let config = args.config();
    config.validate()?;
    let backend = docket::connect_backend(url).await?;
    // What group commit will do, as the engine decides it: the flag, else the store's choice.
    let commit_batch = config.commit_batch_on(backend.as_ref());
    let group_commit = if commit_batch > 1 {
        format!(
            "commits and starts in batches of up to {commit_batch}, {} in flight",
            config.commit_batches_in_flight
        )
    } else {
        "every commit and start alone".to_owned()
    };
    let claim_policy = config.claim_policy;
    let docket = Docket::builder(backend, docket::nodes::registry())
        .config(config)
        .build()?;
    let mut workers: Vec<Worker> = (0..args.workers).map(|_| docket.start_worker()).collect();
    let metrics = match args.metrics_listen {
        Some(addr) => Some(serve_metrics(addr, &docket, &workers).await?),
        None => None,
    };
    note!(
        "docket worker: {} worker(s) × {} vehicles on {} (claim policy {}; {}){}",
        args.workers,
        args.concurrency,
        redact(url),
        claim_policy.as_str(),
        group_commit,
        if args.until_idle {
            " (until idle)"
        } else {
            "; Ctrl-C to stop"
        }
    );
    // A worker whose background task dies stops the process: it must never sit idle holding
    // claims while looking alive.
    let ended = tokio::select! {
        failure = first_failure(&mut workers) => Err(failure),
        done = until_done(&args, &docket) => Ok(done),
    };
    if let Some(stop) = metrics {
        let _ = stop.send(());
    }
    let mut total = StatsSnapshot::default();
    for worker in workers {
        let stats = std::sync::Arc::clone(worker.stats());
        worker.shutdown().await;
        total = total + stats.snapshot();
    }
    note!(
        "docket worker: committed {} moments, {} fenced, {} discarded, {} abandoned, {} poisoned, {} recovered from stopped holders, {} wake hints",
        total.moments_committed,
        total.fence_losses,
        total.discards,
        total.abandons,
        total.poisons,
        total.recovered_steals,
        total.wake_hints
    );
    match ended {
        Ok(done) => done.map(|()| ExitCode::SUCCESS),
        Err(failure) => {
            note!("docket worker: stopped: {failure}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Serves `/metrics` for `workers` on `addr` until the returned sender fires.
async fn serve_metrics(
    addr: std::net::SocketAddr,
    docket: &Docket,
    workers: &[Worker],
) -> Result<tokio::sync::oneshot::Sender<()>, DocketError> {
    let source = docket_console::metrics::MetricsSource {
        stats: workers
            .iter()
            .map(|w| std::sync::Arc::clone(w.stats()))
            .collect(),
        docket: Some(docket.clone()),
        grants: Vec::new(),
        facts: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| DocketError::InvalidOptions(format!("--metrics-listen {addr}: {e}")))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = docket_console::metrics_router(source);
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        if let Err(e) = docket_console::serve(listener, router, shutdown).await {
            tracing::warn!(error = %e, "docket.worker.metrics");
        }
    });
    note!("docket worker: metrics on http://{addr}/metrics");
    Ok(stop)
}

/// The first failure any of `workers` reports (never resolves while all are healthy).
async fn first_failure(workers: &mut [Worker]) -> WorkerFailure {
    if workers.is_empty() {
        return std::future::pending().await;
    }
    let failures = workers.iter_mut().map(|w| Box::pin(w.failure()));
    futures::future::select_all(failures).await.0
}

/// Waits for the end the options ask for: nothing due (`--until-idle`) or Ctrl-C.
async fn until_done(args: &WorkerArgs, docket: &Docket) -> Result<(), DocketError> {
    if !args.until_idle {
        return tokio::signal::ctrl_c()
            .await
            .map_err(|e| DocketError::InvalidOptions(format!("cannot listen for Ctrl-C: {e}")));
    }
    let check = Duration::from_millis(args.idle_check_ms.max(1));
    loop {
        tokio::time::sleep(check).await;
        let state =
            match idle_state(docket.backend().as_ref(), docket.engine().clock().as_ref()).await {
                Ok(state) => state,
                // The store is briefly away (a restart, a failover): the workers ride it out,
                // and so does the idle check.
                Err(e) if e.is_retryable() => {
                    tracing::warn!(error = %e, "docket.worker.idle_check");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
        if state.is_idle() {
            note!(
                "docket worker: idle ({} waiting for a signal, {} poisoned)",
                state.waiting,
                state.poisoned
            );
            return Ok(());
        }
    }
}
