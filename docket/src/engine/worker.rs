//! [`Worker`]: one dispatcher (with its vehicles) and an optional pruner on the current tokio
//! runtime, with graceful shutdown and a hard kill (for crash demonstrations and tests).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use docket_core::model::RunId;
use docket_core::store::{ClaimLease, PoisonedClaim, StoreError};

use super::admission::AdmissionPhase;
use super::dispatcher::{
    Dispatcher, DispatcherExit, Launcher, Settings, Shared, VehicleLauncher,
    MAX_PERMANENT_POLL_FAILURES,
};
use super::finishing::Finishing;
use super::stats::WorkerStats;
use super::vehicle::Vehicle;
use super::{pruner, Engine};

/// How a graceful shutdown ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Every vehicle finished before the drain timeout.
    pub drained: bool,
    /// Vehicles still running at the deadline (aborted; their claims expire).
    pub vehicles_remaining: usize,
    /// How long the shutdown took.
    pub duration: Duration,
}

/// Why a worker stopped working on its own, without a shutdown being asked for.
///
/// A worker whose background task died must not sit idle holding claims: the host learns it
/// from [`Worker::failure`] and should stop (the CLI exits non-zero with this message).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerFailure {
    /// A background task (`dispatcher` or `pruner`) panicked.
    #[error("the worker's {task} task panicked: {message}")]
    Panicked {
        /// Which task.
        task: &'static str,
        /// The panic message.
        message: String,
    },
    /// A background task was cancelled from outside (its runtime is shutting down).
    #[error("the worker's {task} task was cancelled")]
    Cancelled {
        /// Which task.
        task: &'static str,
    },
    /// Claim polls kept failing with a permanent store error (a read-only database, missing
    /// privileges): retrying would not help, so the worker stopped.
    #[error("the store refused {attempts} claim polls in a row with a permanent error; the worker stopped: {error}")]
    Store {
        /// The last error.
        error: StoreError,
        /// How many polls failed in a row.
        attempts: u32,
    },
}

impl WorkerFailure {
    fn from_join(task: &'static str, error: tokio::task::JoinError) -> Self {
        match error.try_into_panic() {
            Ok(payload) => WorkerFailure::Panicked {
                task,
                message: panic_message(payload.as_ref()),
            },
            Err(_) => WorkerFailure::Cancelled { task },
        }
    }
}

/// The text of a panic payload (`panic!` with a literal or with formatting).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

/// A running worker. Dropping it without [`Worker::shutdown`] kills it (like [`Worker::kill`]).
pub struct Worker {
    stop: watch::Sender<bool>,
    requests: mpsc::UnboundedSender<()>,
    dispatcher: Option<JoinHandle<DispatcherExit>>,
    pruner: Option<JoinHandle<()>>,
    /// The dispatcher's report when [`Worker::failure`] saw it end before the shutdown.
    ended: Option<ShutdownReport>,
    stats: Arc<WorkerStats>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("live_claims", &self.shared.live_runs().len())
            .field("stats", &self.stats.snapshot())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Worker`] with optional hooks or a custom launcher.
pub struct WorkerBuilder {
    engine: Engine,
    stats: Arc<WorkerStats>,
    launcher: Option<Arc<dyn Launcher>>,
    on_poisoned: Option<super::dispatcher::PoisonHook>,
    on_lease: Option<super::dispatcher::LeaseHook>,
}

impl fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerBuilder").finish_non_exhaustive()
    }
}

impl WorkerBuilder {
    /// Records into `stats` instead of fresh counters.
    #[must_use]
    pub fn stats(mut self, stats: Arc<WorkerStats>) -> Self {
        self.stats = stats;
        self
    }

    /// Replaces the vehicle launcher (tests of the dispatcher alone).
    #[must_use]
    pub fn launcher(mut self, launcher: Arc<dyn Launcher>) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Observes poisoned candidates of every poll (observe only; must not block).
    #[must_use]
    pub fn on_poisoned(mut self, hook: impl Fn(&[PoisonedClaim]) + Send + Sync + 'static) -> Self {
        self.on_poisoned = Some(Arc::new(hook));
        self
    }

    /// Observes every launched lease (observe only; must not block).
    #[must_use]
    pub fn on_lease(mut self, hook: impl Fn(&ClaimLease) + Send + Sync + 'static) -> Self {
        self.on_lease = Some(Arc::new(hook));
        self
    }

    /// Starts the dispatcher (and the pruner, if configured) on the current tokio runtime.
    ///
    /// # Panics
    /// Outside a tokio runtime (as `tokio::spawn` does).
    #[must_use]
    pub fn start(self) -> Worker {
        let e = self.engine.inner();
        let config = &e.config;
        let (stop, stop_rx) = watch::channel(false);
        let (requests, requests_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        let launcher = self.launcher.unwrap_or_else(|| {
            Arc::new(VehicleLauncher::new(
                Vehicle::new(&self.engine, Arc::clone(&self.stats))
                    .with_stop(stop_rx.clone())
                    .with_finishing(Finishing::new(Arc::clone(&shared), requests.clone())),
            ))
        });
        let dispatcher = Dispatcher {
            backend: Arc::clone(&e.backend),
            clock: Arc::clone(&e.clock),
            jitter: Arc::clone(&e.jitter),
            settings: Settings {
                concurrency: config.concurrency,
                poll_interval_ms: config.poll_interval_ms,
                orphan_ttl_ms: config.orphan_ttl_ms,
                max_claim_attempts: config.max_claim_attempts,
                drain_timeout_ms: config.drain_timeout_ms,
                claim_policy: config.claim_policy,
            },
            admission: Arc::new(AdmissionPhase::new()),
            launcher,
            stats: Arc::clone(&self.stats),
            shared: Arc::clone(&shared),
            on_poisoned: self.on_poisoned,
            on_lease: self.on_lease,
        };
        let pruner = config.pruner.map(|p| {
            tokio::spawn(pruner::run(
                Arc::clone(&e.backend),
                Arc::clone(&e.clock),
                p,
                stop_rx.clone(),
            ))
        });
        let dispatcher = tokio::spawn(dispatcher.run(stop_rx, requests_rx));
        Worker {
            stop,
            requests,
            dispatcher: Some(dispatcher),
            pruner,
            ended: None,
            stats: self.stats,
            shared,
        }
    }
}

impl Worker {
    /// Starts a worker of `engine` with fresh counters.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    #[must_use]
    pub fn start(engine: &Engine) -> Worker {
        Worker::builder(engine).start()
    }

    /// A builder for a worker of `engine`.
    #[must_use]
    pub fn builder(engine: &Engine) -> WorkerBuilder {
        WorkerBuilder {
            engine: engine.clone(),
            stats: Arc::new(WorkerStats::new()),
            launcher: None,
            on_poisoned: None,
            on_lease: None,
        }
    }

    /// This worker's counters.
    #[must_use]
    pub fn stats(&self) -> &Arc<WorkerStats> {
        &self.stats
    }

    /// Runs whose claims this worker's live vehicles hold, sorted.
    #[must_use]
    pub fn live_claims(&self) -> Vec<RunId> {
        self.shared.live_runs()
    }

    /// Asks for a claim poll now (coalesced with one in flight).
    pub fn request_poll(&self) {
        let _ = self.requests.send(());
    }

    /// Starts a graceful shutdown without waiting for it: no poll starts after this returns,
    /// and vehicles yield after their current moment. [`Worker::shutdown`] waits for the end.
    pub fn begin_shutdown(&self) {
        let _ = self.stop.send(true);
    }

    /// Resolves when a background task of this worker (the dispatcher with its claim polls,
    /// or the pruner) ends although no shutdown was asked for — it panicked, was cancelled, or
    /// the dispatcher gave up after permanent store errors — and says why. Never resolves while the worker is healthy, nor after
    /// [`Worker::begin_shutdown`] for a task that then ends normally.
    ///
    /// Cancel safe: dropping the future loses nothing, so it can sit in a `select!` loop.
    pub async fn failure(&mut self) -> WorkerFailure {
        loop {
            tokio::select! {
                joined = join_or_pending(&mut self.dispatcher) => {
                    self.dispatcher = None;
                    match joined {
                        Ok(DispatcherExit { report, failure }) => {
                            self.ended = Some(report);
                            if let Some(error) = failure {
                                return WorkerFailure::Store {
                                    error,
                                    attempts: MAX_PERMANENT_POLL_FAILURES,
                                };
                            }
                        }
                        Err(e) => return WorkerFailure::from_join("dispatcher", e),
                    }
                }
                joined = join_or_pending(&mut self.pruner) => {
                    self.pruner = None;
                    if let Err(e) = joined {
                        return WorkerFailure::from_join("pruner", e);
                    }
                }
            }
        }
    }

    /// Graceful shutdown: stop claiming, release the leases of an in-flight poll, let
    /// vehicles commit their current moment (continuing moments become yields), bounded by
    /// `drain_timeout_ms`; vehicles still running then are aborted and their claims expire.
    ///
    /// In a service, call it when the service stops (on Ctrl-C or SIGTERM, see
    /// `examples/embedded_worker.rs`): node work in flight is committed, so nothing is done
    /// twice and the next worker goes on from there.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use docket::core::model::RunStatus;
    /// use docket::{AwaitOptions, Docket, StartOptions};
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// let graph = docket
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "slow",
    ///         "nodes": {"work": {"implementation": "std.sleep_ms", "config": {"ms": 100}},
    ///                   "more": {"implementation": "std.sleep_ms", "config": {"ms": 100}}},
    ///         "edges": {"a": {"from": "$start", "to": "work"}, "b": {"from": "work", "to": "more"},
    ///                   "c": {"from": "more", "to": "$finish"}}}"#)
    ///     .await?
    ///     .graph_ref;
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    ///
    /// let worker = docket.start_worker();
    /// // Wait until the worker holds the run, then stop it while the node sleeps.
    /// let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    /// while worker.live_claims().is_empty() {
    ///     assert!(tokio::time::Instant::now() < deadline, "the worker never claimed the run");
    ///     tokio::time::sleep(Duration::from_millis(5)).await;
    /// }
    /// let report = worker.shutdown().await;
    /// assert!(report.drained, "{report:?}");
    /// // The moment in flight was committed: the run is not done, but nothing is lost.
    /// assert!(docket.fetch_run(&run.id).await?.checkpoint_seq >= 2);
    ///
    /// // A later worker (after a restart, say) carries the run to its end.
    /// let worker = docket.start_worker();
    /// let wait = AwaitOptions { timeout: Duration::from_secs(30), ..AwaitOptions::default() };
    /// assert_eq!(docket.await_run(&run.id, wait).await?.status, RunStatus::Done);
    /// worker.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(mut self) -> ShutdownReport {
        self.begin_shutdown();
        let report = match self.dispatcher.take() {
            Some(handle) => handle.await.map_or(
                ShutdownReport {
                    drained: false,
                    vehicles_remaining: 0,
                    duration: Duration::ZERO,
                },
                |exit| exit.report,
            ),
            None => self.ended.take().unwrap_or(ShutdownReport {
                drained: false,
                vehicles_remaining: 0,
                duration: Duration::ZERO,
            }),
        };
        if let Some(pruner) = self.pruner.take() {
            let _ = pruner.await;
        }
        report
    }

    /// Kills the worker as a crash would: every task (dispatcher, claim poll, vehicles and
    /// their node work, pruner) is aborted mid-flight and nothing is released. Returns the
    /// runs whose claims it held; they are recovered by claim expiry.
    pub fn kill(mut self) -> Vec<RunId> {
        let held = self.shared.live_runs();
        self.abort();
        held
    }

    fn abort(&mut self) {
        if let Some(handle) = self.dispatcher.take() {
            handle.abort();
        }
        if let Some(handle) = self.pruner.take() {
            handle.abort();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Awaits the task in `slot`, or never resolves when there is none.
async fn join_or_pending<T>(slot: &mut Option<JoinHandle<T>>) -> Result<T, tokio::task::JoinError> {
    match slot {
        Some(handle) => handle.await,
        None => std::future::pending().await,
    }
}
