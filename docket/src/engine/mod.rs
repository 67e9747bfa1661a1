//! The worker engine (`docs/engine.md`): dispatcher, vehicles, graph cache, pruner.
//!
//! * An [`Engine`] holds what every vehicle shares: the backend, the node registry, the
//!   validated [`WorkerConfig`], the clocks, the id generator, the compiler, the graph cache and
//!   the lifecycle (with its checkpoint observers). Build one with [`Engine::builder`]; start
//!   workers from it with [`Worker::start`].
//! * A [`Vehicle`] drains one claim lease: fetch + fence check, graph (cache, compile, host
//!   policy), then moment after moment under the drain budget, committing each under the
//!   double fence. It never refreshes its claim and holds no store transaction while nodes run.
//! * A [`Worker`] is one dispatcher (claim polls, vehicle accounting, admission preference)
//!   plus an optional pruner, on the current tokio runtime.
//!
//! Tracing: spans `docket.vehicle` and `docket.dispatcher.poll`; events
//! `docket.claim.fence_lost`, `docket.vehicle.drain`, `docket.vehicle.discard`,
//! `docket.vehicle.crash`, `docket.vehicle.abandon`, `docket.graph.compile`,
//! `docket.graph_cache.fetch`, `docket.dispatcher.launch`, `docket.dispatcher.shutdown`,
//! `docket.pruner.pass`. Fields carry run ids, seqs, counts and outcomes — never claim
//! tokens or payloads.

mod admission;
mod cache;
mod clock;
mod compiler;
mod config;
mod dispatcher;
mod drain_runs;
mod finishing;
mod group_commit;
mod idle;
mod outcome;
mod poll_pace;
mod pruner;
mod stats;
mod vehicle;
mod worker;

use std::fmt;
use std::sync::Arc;

use docket_core::graph::CompileOptions;
use docket_core::lifecycle::{CheckpointObserver, Lifecycle};
use docket_core::model::{Clock, SystemClock};
use docket_core::node::NodeRegistry;
use docket_core::runtime::{IdGenerator, RandomIds, RuntimeConfig};
use docket_core::store::Backend;

pub use admission::AdmissionPhase;
pub use cache::{CacheLookup, GraphCache};
pub use clock::{
    Jitter, MonotonicClock, NoJitter, ScriptedMonotonic, SystemMonotonic, UniformJitter,
};
pub use compiler::{EffectiveCompiler, GraphCompiler};
pub use config::{
    ConfigError, ConfigProblem, DrainBudget, PrunerConfig, WorkerConfig,
    DEFAULT_COMMIT_BATCHES_IN_FLIGHT, DEFAULT_MAX_SUPERSTEPS,
};
pub use dispatcher::{LaunchError, Launcher, PollSource, VehicleLauncher};
pub use drain_runs::{DrainStopped, DrainSummary};
pub use group_commit::group_commit;
pub use idle::{idle_state, IdleState};
pub use outcome::{BudgetFired, DrainOutcome, Drained, IncompatibleReason, VehicleError};
pub use stats::{merged_latency, StatsSnapshot, WorkerStats};
pub use vehicle::Vehicle;
pub use worker::{ShutdownReport, Worker, WorkerFailure};

/// The shared environment of vehicles and workers. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

pub(crate) struct EngineInner {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) nodes: NodeRegistry,
    pub(crate) config: WorkerConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) runtime: RuntimeConfig,
    pub(crate) monotonic: Arc<dyn MonotonicClock>,
    pub(crate) jitter: Arc<dyn Jitter>,
    pub(crate) compiler: Arc<dyn GraphCompiler>,
    pub(crate) cache: GraphCache,
    pub(crate) lifecycle: Lifecycle,
}

impl EngineInner {
    pub(crate) fn compile_options(&self) -> CompileOptions {
        CompileOptions {
            max_supersteps: self.config.max_supersteps,
        }
    }
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &self.inner.backend)
            .field("nodes", &self.inner.nodes)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// A builder over `backend` with the implementations in `nodes`.
    #[must_use]
    pub fn builder(backend: Arc<dyn Backend>, nodes: NodeRegistry) -> EngineBuilder {
        EngineBuilder {
            backend,
            nodes,
            config: WorkerConfig::default(),
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            monotonic: Arc::new(SystemMonotonic::new()),
            jitter: Arc::new(UniformJitter),
            compiler: Arc::new(EffectiveCompiler),
            lifecycle: Lifecycle::new(),
        }
    }

    pub(crate) fn inner(&self) -> &EngineInner {
        &self.inner
    }

    /// The backend.
    #[must_use]
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.inner.backend
    }

    /// The node registry.
    #[must_use]
    pub fn nodes(&self) -> &NodeRegistry {
        &self.inner.nodes
    }

    /// The validated configuration.
    #[must_use]
    pub fn config(&self) -> &WorkerConfig {
        &self.inner.config
    }

    /// The wall clock.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The runtime configuration (clock, ids, host limits, context) every advance uses.
    #[must_use]
    pub fn runtime(&self) -> &RuntimeConfig {
        &self.inner.runtime
    }

    /// The lifecycle composer (with the configured observers).
    #[must_use]
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.inner.lifecycle
    }

    /// The compile options graphs are compiled with (the host `max_supersteps`).
    #[must_use]
    pub fn compile_options(&self) -> CompileOptions {
        self.inner.compile_options()
    }

    /// The shared graph cache.
    #[must_use]
    pub fn graph_cache(&self) -> &GraphCache {
        &self.inner.cache
    }
}

/// Builds an [`Engine`]; every part has a production default.
pub struct EngineBuilder {
    backend: Arc<dyn Backend>,
    nodes: NodeRegistry,
    config: WorkerConfig,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    monotonic: Arc<dyn MonotonicClock>,
    jitter: Arc<dyn Jitter>,
    compiler: Arc<dyn GraphCompiler>,
    lifecycle: Lifecycle,
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl EngineBuilder {
    /// Replaces the configuration (validated by [`EngineBuilder::build`]).
    #[must_use]
    pub fn config(mut self, config: WorkerConfig) -> Self {
        self.config = config;
        self
    }

    /// Replaces the wall clock (default: the system clock).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the id generator (default: random ids).
    #[must_use]
    pub fn ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.ids = ids;
        self
    }

    /// Replaces the monotonic clock drain budgets are measured on.
    #[must_use]
    pub fn monotonic(mut self, monotonic: Arc<dyn MonotonicClock>) -> Self {
        self.monotonic = monotonic;
        self
    }

    /// Replaces the jitter source (default: uniform `1..=n`).
    #[must_use]
    pub fn jitter(mut self, jitter: Arc<dyn Jitter>) -> Self {
        self.jitter = jitter;
        self
    }

    /// Replaces the graph compiler (default: `compile_effective`).
    #[must_use]
    pub fn compiler(mut self, compiler: Arc<dyn GraphCompiler>) -> Self {
        self.compiler = compiler;
        self
    }

    /// Adds a checkpoint observer that sees every moment committed through this engine.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn CheckpointObserver>) -> Self {
        self.lifecycle = self.lifecycle.with_observer(observer);
        self
    }

    /// Validates the configuration and builds the engine.
    ///
    /// # Errors
    /// [`ConfigError`] naming every offending option (`docs/engine.md`, “Start-up validation”).
    pub fn build(self) -> Result<Engine, ConfigError> {
        self.config.validate()?;
        let runtime_error =
            |option: &'static str, e: docket_core::runtime::RuntimeError| ConfigError {
                problems: vec![ConfigProblem {
                    options: vec![option],
                    message: e.message,
                }],
            };
        let runtime = RuntimeConfig::new(Arc::clone(&self.clock))
            .with_ids(self.ids)
            .with_context(self.config.context.clone())
            .with_max_attempt_elapsed_ms(self.config.max_attempt_elapsed_ms)
            .map_err(|e| runtime_error("max_attempt_elapsed_ms", e))?
            .with_max_supersteps(self.config.max_supersteps)
            .map_err(|e| runtime_error("max_supersteps", e))?;
        // Vehicles commit through group commit; everything else passes through it unchanged.
        let max_commit_batch = self.config.commit_batch_on(self.backend.as_ref());
        let backend = group_commit(
            self.backend,
            max_commit_batch,
            self.config.commit_batches_in_flight,
        );
        Ok(Engine {
            inner: Arc::new(EngineInner {
                backend,
                nodes: self.nodes,
                cache: GraphCache::new(self.config.incompatible_ttl_ms),
                config: self.config,
                clock: self.clock,
                runtime,
                monotonic: self.monotonic,
                jitter: self.jitter,
                compiler: self.compiler,
                lifecycle: self.lifecycle,
            }),
        })
    }
}
