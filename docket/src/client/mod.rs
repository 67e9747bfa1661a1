//! The [`Docket`] client facade (`docs/engine.md`, “The facade”): graphs, runs, signals, events and
//! bounded drains over any [`Backend`], scoped to one owner.
//!
//! A handle is tenantless by default; [`Docket::tenant`] returns a handle scoped to one
//! tenant. The facade never accepts the system scope: only the engine (claims, vehicles,
//! recovery) works across owners. Handles are cheap to clone and share one engine.

mod bulk;
mod drain;
mod events;
mod graphs;
mod input;
mod ops;
mod runs;
mod tenants;

use std::fmt;
use std::sync::Arc;

use docket_core::lifecycle::CheckpointObserver;
use docket_core::model::{Clock, OwnerScope, RunId, Scope, TenantId, ValueMap};
use docket_core::node::NodeRegistry;
use docket_core::runtime::IdGenerator;
use docket_core::store::Backend;

use crate::connect::connect_backend;
use crate::engine::{
    AdmissionPhase, Engine, EngineBuilder, GraphCompiler, Jitter, MonotonicClock, Worker,
    WorkerConfig, WorkerStats,
};
use crate::error::DocketError;

pub use bulk::START_BATCH_LIMIT;
pub use graphs::Publication;
pub use input::parse_input;
pub use runs::AwaitOptions;

/// How the facade advances runs by itself (`docs/engine.md`, “Bounded drains and testing modes”).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TestingMode {
    /// Production: workers advance runs; [`Docket::drain_runs`] is refused.
    #[default]
    Off,
    /// Runs advance only through [`Docket::drain_runs`].
    Manual,
    /// `start_run`, interrupt resolution and poison recovery drain in the caller and return
    /// the freshly fetched run.
    Inline,
}

/// Options of [`Docket::start_run`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StartOptions {
    /// The run id (default: generated).
    pub run_id: Option<RunId>,
    /// Host metadata stored with the run.
    pub metadata: ValueMap,
}

/// The client facade. Cheap to clone.
#[derive(Clone)]
pub struct Docket {
    engine: Engine,
    owner: OwnerScope,
    shared: Arc<Shared>,
}

struct Shared {
    testing: TestingMode,
    admission: AdmissionPhase,
    stats: Arc<WorkerStats>,
}

impl fmt::Debug for Docket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Docket")
            .field("owner", &self.owner)
            .field("testing", &self.shared.testing)
            .field("engine", &self.engine)
            .finish()
    }
}

/// Builds a [`Docket`].
pub struct DocketBuilder {
    engine: EngineBuilder,
    testing: TestingMode,
}

impl fmt::Debug for DocketBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DocketBuilder")
            .field("engine", &self.engine)
            .field("testing", &self.testing)
            .finish()
    }
}

impl DocketBuilder {
    /// Replaces the worker configuration (validated by [`DocketBuilder::build`]).
    #[must_use]
    pub fn config(mut self, config: WorkerConfig) -> Self {
        self.engine = self.engine.config(config);
        self
    }

    /// Replaces the wall clock.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.engine = self.engine.clock(clock);
        self
    }

    /// Replaces the id generator.
    #[must_use]
    pub fn ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.engine = self.engine.ids(ids);
        self
    }

    /// Replaces the monotonic clock of drain budgets.
    #[must_use]
    pub fn monotonic(mut self, clock: Arc<dyn MonotonicClock>) -> Self {
        self.engine = self.engine.monotonic(clock);
        self
    }

    /// Replaces the jitter source.
    #[must_use]
    pub fn jitter(mut self, jitter: Arc<dyn Jitter>) -> Self {
        self.engine = self.engine.jitter(jitter);
        self
    }

    /// Replaces the graph compiler used for stored graphs.
    #[must_use]
    pub fn compiler(mut self, compiler: Arc<dyn GraphCompiler>) -> Self {
        self.engine = self.engine.compiler(compiler);
        self
    }

    /// Adds a checkpoint observer (sees every commit of this facade and its workers).
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn CheckpointObserver>) -> Self {
        self.engine = self.engine.observer(observer);
        self
    }

    /// Sets the testing mode (default [`TestingMode::Off`]).
    #[must_use]
    pub fn testing(mut self, mode: TestingMode) -> Self {
        self.testing = mode;
        self
    }

    /// Validates the configuration and builds a tenantless handle.
    ///
    /// # Errors
    /// [`DocketError::Config`] naming the offending options.
    pub fn build(self) -> Result<Docket, DocketError> {
        let engine = self.engine.build()?;
        Ok(Docket {
            engine,
            owner: OwnerScope::Tenantless,
            shared: Arc::new(Shared {
                testing: self.testing,
                admission: AdmissionPhase::new(),
                stats: Arc::new(WorkerStats::new()),
            }),
        })
    }
}

impl Docket {
    /// A builder over any backend with the node implementations in `nodes`: set the worker
    /// configuration, clocks, observers or a testing mode, then [`DocketBuilder::build`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::node::{FnNode, NodeOutcome};
    /// use docket::engine::WorkerConfig;
    /// use docket::{Docket, DocketError};
    ///
    /// let backend = docket::connect_backend("memory://").await?;
    /// let nodes = docket::nodes::registry()
    ///     .with("app.noop", FnNode::new(|_, _, _| NodeOutcome::Update(Default::default())))?;
    /// let config = WorkerConfig { concurrency: 4, poll_interval_ms: 200, ..WorkerConfig::default() };
    /// let docket = Docket::builder(backend.clone(), nodes.clone()).config(config).build()?;
    /// assert_eq!(docket.engine().config().concurrency, 4);
    ///
    /// // A configuration that cannot work is refused, naming the options involved.
    /// let bad = WorkerConfig { concurrency: 0, ..WorkerConfig::default() };
    /// match Docket::builder(backend, nodes).config(bad).build() {
    ///     Err(DocketError::Config(error)) => assert!(error.names("concurrency"), "{error}"),
    ///     other => panic!("expected a configuration error, got {other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn builder(backend: Arc<dyn Backend>, nodes: NodeRegistry) -> DocketBuilder {
        DocketBuilder {
            engine: Engine::builder(backend, nodes),
            testing: TestingMode::Off,
        }
    }

    /// A tenantless handle over any backend (a custom store plugs in here, with no engine
    /// change) with the default configuration.
    ///
    /// # Errors
    /// Never with the defaults; kept fallible for symmetry with [`DocketBuilder::build`].
    pub fn with_backend(
        backend: Arc<dyn Backend>,
        nodes: NodeRegistry,
    ) -> Result<Docket, DocketError> {
        Docket::builder(backend, nodes).build()
    }

    /// Opens the backend named by `url` (see [`crate::connect`]) with the standard node
    /// library and the default configuration. To add your own nodes, use
    /// [`crate::connect_backend`] with [`Docket::with_backend`] or [`Docket::builder`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::{Docket, DocketError};
    ///
    /// // The embedded SQLite store: one file, created and migrated on connect.
    /// let dir = tempfile::tempdir()?;
    /// let docket = Docket::connect(&format!("sqlite://{}", dir.path().join("app.db").display())).await?;
    /// assert!(docket.owner().tenant_id().is_none());
    ///
    /// // A fresh in-memory store, for tests (lost when dropped).
    /// let _scratch = Docket::connect("memory://").await?;
    ///
    /// // An unknown scheme is refused before anything is opened.
    /// let err = Docket::connect("mysql://localhost/app").await.unwrap_err();
    /// assert!(matches!(err, DocketError::UnsupportedBackend { .. }), "{err}");
    ///
    /// // A backend whose cargo feature is off says which feature to enable.
    /// # #[cfg(not(feature = "redis"))] {
    /// let err = Docket::connect("redis://127.0.0.1:6379").await.unwrap_err();
    /// assert!(err.to_string().contains("enable the cargo feature `redis`"), "{err}");
    /// # }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`connect_backend`].
    pub async fn connect(url: &str) -> Result<Docket, DocketError> {
        let backend = connect_backend(url).await?;
        Docket::with_backend(backend, crate::nodes::registry())
    }

    /// The same facade scoped to `tenant`: graphs, runs and events of one tenant are
    /// invisible to every other owner (an unknown run and another tenant's run look alike).
    /// Handles share one engine and backend; derive one per request, it costs a clone.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::TenantId;
    /// use docket::{Docket, DocketError, StartOptions};
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// let acme = docket.tenant(TenantId::new("acme")?);
    /// let globex = docket.tenant(TenantId::new("globex")?);
    ///
    /// let graph = acme
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "hello",
    ///         "nodes": {"hi": {"implementation": "std.set"}},
    ///         "edges": {"a": {"from": "$start", "to": "hi"}, "b": {"from": "hi", "to": "$finish"}}}"#)
    ///     .await?
    ///     .graph_ref;
    /// let run = acme.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// assert_eq!(acme.fetch_run(&run.id).await?.id, run.id);
    ///
    /// // Another tenant (or the tenantless handle) sees neither the graph nor the run.
    /// assert!(matches!(globex.fetch_run(&run.id).await, Err(DocketError::NotFound)));
    /// assert!(matches!(docket.fetch_run(&run.id).await, Err(DocketError::NotFound)));
    /// let err = globex.start_run(&graph, Default::default(), StartOptions::default()).await;
    /// assert!(matches!(err, Err(DocketError::NotFound)));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn tenant(&self, tenant: TenantId) -> Docket {
        Docket {
            owner: OwnerScope::Tenant(tenant),
            ..self.clone()
        }
    }

    /// The same facade, tenantless.
    #[must_use]
    pub fn tenantless(&self) -> Docket {
        Docket {
            owner: OwnerScope::Tenantless,
            ..self.clone()
        }
    }

    /// The owner this handle reads and writes as.
    #[must_use]
    pub fn owner(&self) -> &OwnerScope {
        &self.owner
    }

    pub(crate) fn scope(&self) -> Scope {
        Scope::from(&self.owner)
    }

    /// The engine (backend, registry, configuration, clocks) behind this facade.
    #[must_use]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The backend.
    #[must_use]
    pub fn backend(&self) -> &Arc<dyn Backend> {
        self.engine.backend()
    }

    /// The testing mode.
    #[must_use]
    pub fn testing_mode(&self) -> TestingMode {
        self.shared.testing
    }

    /// Counters of this facade's own drains ([`Docket::drain_runs`]).
    #[must_use]
    pub fn drain_stats(&self) -> &Arc<WorkerStats> {
        &self.shared.stats
    }

    /// Starts a worker (dispatcher + vehicles + optional pruner) on the current tokio runtime.
    /// It claims due runs of every owner of the backend and advances them until
    /// [`Worker::shutdown`] (graceful: current moments are committed) — or until it is dropped
    /// or [`Worker::kill`]ed, which a crash resembles: its claims then expire and another
    /// worker recovers the runs. Any number of workers, in any number of processes, may
    /// share one backend.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::RunStatus;
    /// use docket::{AwaitOptions, Docket, StartOptions};
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// // Generous: a loaded machine may be slow to schedule the worker.
    /// let wait = AwaitOptions { timeout: std::time::Duration::from_secs(30), ..AwaitOptions::default() };
    /// let graph = docket
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "count",
    ///         "fields": {"n": {"schema": {"type": "integer"}}}, "outputs": {"n": {}},
    ///         "nodes": {"inc": {"implementation": "std.increment", "config": {"field": "n"}}},
    ///         "edges": {"a": {"from": "$start", "to": "inc"}, "b": {"from": "inc", "to": "$finish"}}}"#)
    ///     .await?
    ///     .graph_ref;
    ///
    /// let mut worker = docket.start_worker();
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// let run = tokio::select! {
    ///     run = docket.await_run(&run.id, wait) => run?,
    ///     // A worker whose background task dies says why instead of idling.
    ///     failure = worker.failure() => panic!("the worker stopped: {failure}"),
    /// };
    /// assert_eq!(run.status, RunStatus::Done);
    /// assert_eq!(run.output.unwrap_or_default()["n"], 1);
    ///
    /// let report = worker.shutdown().await;
    /// assert!(report.drained);
    /// # Ok(()) }
    /// ```
    ///
    /// # Panics
    /// Outside a tokio runtime.
    #[must_use]
    pub fn start_worker(&self) -> Worker {
        Worker::start(&self.engine)
    }
}
