//! Starting, reading, signalling and awaiting runs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use docket_core::graph::RuntimeGraph;
use docket_core::lifecycle::Signalled;
use docket_core::model::{GraphRef, Run, RunId, RunInfo, RunPage, RunQuery, RunStatus, ValueMap};
use docket_core::runtime::{self, build_initial_run, propose_init, Initialization};

use super::{Docket, StartOptions};
use crate::engine::CacheLookup;
use crate::error::DocketError;

/// Options of [`Docket::await_run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AwaitOptions {
    /// Give up after this long (`ZERO` checks once).
    pub timeout: Duration,
    /// Delay between checks.
    pub poll_interval: Duration,
}

impl Default for AwaitOptions {
    fn default() -> Self {
        AwaitOptions {
            timeout: Duration::from_secs(5),
            poll_interval: Duration::from_millis(50),
        }
    }
}

impl Docket {
    /// Compiles the stored effective document of `graph_ref` (owner-scoped) with this
    /// facade's node registry, and checks that it compiles to that very address: the graph a
    /// worker would run, for tools that build moments themselves (the benchmark does).
    ///
    /// # Errors
    /// `Store` (`NotFound` for an unknown version in this owner's scope, `CorruptGraph`),
    /// `InvalidGraph` (it does not compile with this registry), `GraphMismatch` (it compiles
    /// to another address).
    pub async fn runtime_graph(&self, graph_ref: &GraphRef) -> Result<RuntimeGraph, DocketError> {
        let doc = self.backend().fetch_graph(&self.owner, graph_ref).await?;
        let e = self.engine.inner();
        let rtg = e
            .compiler
            .compile(&doc, &e.nodes, self.engine.compile_options())
            .map_err(|err| DocketError::InvalidGraph {
                diagnostics: err.diagnostics,
            })?;
        if rtg.graph_id != graph_ref.graph_id || rtg.graph_hash != graph_ref.graph_hash {
            return Err(DocketError::GraphMismatch {
                expected: graph_ref.clone(),
                got: GraphRef {
                    graph_id: rtg.graph_id,
                    graph_hash: rtg.graph_hash,
                },
            });
        }
        Ok(rtg)
    }

    /// Starts a run of a published graph version: fetch the graph in this owner's scope →
    /// compile the effective document → identity check → initialize → commit. A version this
    /// process has compiled before comes from the engine's graph cache instead, with no read
    /// (the store's `initialize` still refuses a version no longer stored). In inline mode
    /// the run is then drained and returned freshly fetched.
    ///
    /// The run is due at once: a worker of any process on the same backend picks it up.
    /// Input is checked against the graph's declared inputs before anything is stored.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::{RunId, RunStatus};
    /// use docket::{parse_input, Docket, DocketError, StartOptions};
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// # let approval = r#"{"schema_version": 1, "id": "expense",
    /// #     "inputs": {"amount": {"schema": {"type": "integer", "min": 0}, "required": true}},
    /// #     "fields": {"approved": {"schema": {"type": "boolean"}}}, "outputs": {"approved": {}},
    /// #     "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
    /// #     "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;
    /// // `approval`: one required integer input `amount`, then a `std.approval` node.
    /// let graph = docket.publish_graph_json(approval).await?.graph_ref;
    ///
    /// // Your own run id makes the start idempotent on your side (a retried request).
    /// let options = StartOptions { run_id: Some(RunId::new("expense-1042")?), ..StartOptions::default() };
    /// let run = docket.start_run(&graph, parse_input(r#"{"amount": 120}"#)?, options.clone()).await?;
    /// assert_eq!((run.id.as_str(), run.status), ("expense-1042", RunStatus::Running));
    ///
    /// // Starting the same id again is a conflict: the first run stays as it is.
    /// let err = docket.start_run(&graph, parse_input(r#"{"amount": 120}"#)?, options).await.unwrap_err();
    /// assert!(matches!(err, DocketError::Store(_)), "{err}");
    ///
    /// // Input that does not fit the graph's inputs is refused, with the reasons.
    /// let err = docket
    ///     .start_run(&graph, parse_input(r#"{"amount": "lots"}"#)?, StartOptions::default())
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), "invalid_input", "{err}");
    ///
    /// // A graph this store does not know (here: published elsewhere) is not found.
    /// let elsewhere = Docket::connect("memory://").await?;
    /// let err = elsewhere.start_run(&graph, Default::default(), StartOptions::default()).await;
    /// assert!(matches!(err, Err(DocketError::NotFound)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`] for an unknown or forged reference;
    /// [`DocketError::Runtime`] for invalid input; store errors (`Conflict` for a taken id).
    pub async fn start_run(
        &self,
        graph_ref: &GraphRef,
        input: ValueMap,
        options: StartOptions,
    ) -> Result<Run, DocketError> {
        let rtg = self.start_graph(graph_ref).await?;
        let e = self.engine.inner();
        let run = build_initial_run(
            &rtg,
            input,
            options.run_id,
            options.metadata,
            e.runtime.ids(),
        )?;
        let moment = match propose_init(&rtg, &run, e.clock.now())? {
            Initialization::Moment(moment) => *moment,
            Initialization::Terminal(run) => return Ok(*run),
        };
        let committed = e
            .lifecycle
            .start(e.backend.as_ref(), &self.owner, moment)
            .await?;
        self.after_signal(committed.run).await
    }

    /// The compiled graph [`Docket::start_run`] builds a run of: the engine's graph cache
    /// when it holds `graph_ref` for this owner (the one the worker's vehicles use, unless
    /// the engine's `graph_cache` is off), else [`Docket::runtime_graph`], whose graph is
    /// then cached for the next start and for this process's vehicles. A cached graph needs
    /// no read: a version is immutable and content-addressed, and the store's `initialize`
    /// checks that it is still stored in this owner's scope, in the same atomic step as the
    /// insert, so a version pruned since it was cached fails the start with `NotFound` just
    /// as a fetch would have.
    async fn start_graph(&self, graph_ref: &GraphRef) -> Result<Arc<RuntimeGraph>, DocketError> {
        let e = self.engine.inner();
        if !e.config.graph_cache {
            return Ok(Arc::new(self.runtime_graph(graph_ref).await?));
        }
        if let CacheLookup::Compiled(rtg) =
            e.cache.fetch(&self.owner, graph_ref, e.monotonic.now_ms())
        {
            return Ok(rtg);
        }
        let rtg = Arc::new(self.runtime_graph(graph_ref).await?);
        e.cache
            .put_compiled(&self.owner, graph_ref, Arc::clone(&rtg));
        Ok(rtg)
    }

    /// The last committed document.
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; store errors.
    pub async fn fetch_run(&self, run_id: &RunId) -> Result<Run, DocketError> {
        Ok(self.backend().fetch_run(&self.scope(), run_id).await?)
    }

    /// The document plus its operational state (wake, claim time, counters, poison).
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; store errors.
    pub async fn inspect_run(&self, run_id: &RunId) -> Result<RunInfo, DocketError> {
        Ok(self.backend().inspect_run(&self.scope(), run_id).await?)
    }

    /// Runs of this owner, newest first.
    ///
    /// # Errors
    /// Store errors (`InvalidArgument` for a bad limit or an empty status filter).
    pub async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, DocketError> {
        Ok(self.backend().list_runs(&self.scope(), query).await?)
    }

    /// Resolves open interrupt `interrupt_id` of `run_id` with `value`, waking the run.
    /// The value is written to the interrupt's resume field (checked against its schema);
    /// a worker then carries the run on. Resolving twice is refused, so a retried or
    /// duplicated signal (two people clicking "approve") cannot act twice.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::RunStatus;
    /// use docket::{parse_input, AwaitOptions, Docket, StartOptions};
    /// use serde_json::json;
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// // Generous: a loaded machine may be slow to schedule the worker.
    /// let wait = AwaitOptions { timeout: std::time::Duration::from_secs(30), ..AwaitOptions::default() };
    /// # let approval = r#"{"schema_version": 1, "id": "expense",
    /// #     "inputs": {"amount": {"schema": {"type": "integer", "min": 0}, "required": true}},
    /// #     "fields": {"approved": {"schema": {"type": "boolean"}}}, "outputs": {"approved": {}},
    /// #     "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
    /// #     "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;
    /// let graph = docket.publish_graph_json(approval).await?.graph_ref;
    /// let worker = docket.start_worker();
    /// let run = docket.start_run(&graph, parse_input(r#"{"amount": 120}"#)?, StartOptions::default()).await?;
    ///
    /// // The worker runs the graph up to the `std.approval` node, which asks for a decision.
    /// let waiting = docket.await_run(&run.id, wait).await?;
    /// assert_eq!(waiting.status, RunStatus::Waiting);
    /// assert!(waiting.interrupts.contains_key("approve"));
    ///
    /// // A value that does not fit the field's schema is refused.
    /// let err = docket.resolve_interrupt(&run.id, "approve", json!("yes")).await.unwrap_err();
    /// assert_eq!(err.kind(), "invalid_input", "{err}");
    ///
    /// docket.resolve_interrupt(&run.id, "approve", json!(true)).await?;
    /// let done = docket.await_run(&run.id, wait).await?;
    /// assert_eq!(done.status, RunStatus::Done);
    /// assert_eq!(done.output.unwrap_or_default()["approved"], true);
    ///
    /// // A stale signal (the run is over) changes nothing.
    /// let err = docket.resolve_interrupt(&run.id, "approve", json!(false)).await.unwrap_err();
    /// assert_eq!(err.kind(), "inactive_run", "{err}");
    /// worker.shutdown().await;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`] (run); [`DocketError::Runtime`] with `inactive_run`,
    /// `already_resolved`, `not_found` (interrupt) or `invalid_input`; store errors.
    pub async fn resolve_interrupt(
        &self,
        run_id: &RunId,
        interrupt_id: &str,
        value: Value,
    ) -> Result<Run, DocketError> {
        let run = self.fetch_run(run_id).await?;
        let rtg = self
            .runtime_graph(&GraphRef {
                graph_id: run.graph_id.clone(),
                graph_hash: run.graph_hash.clone(),
            })
            .await?;
        let e = self.engine.inner();
        let clock = &e.clock;
        let signalled = e
            .lifecycle
            .signal(e.backend.as_ref(), &self.scope(), run_id, |current| {
                runtime::resolve_interrupt(&rtg, current, interrupt_id, value.clone(), clock.now())
            })
            .await?;
        self.after_signal(signalled.into_run()).await
    }

    /// Cancels a running or waiting run. Concurrent cancels converge on one committed
    /// `run_cancelled` (a cancelled run is returned unchanged).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::RunStatus;
    /// use docket::{parse_input, AwaitOptions, Docket, DocketError, StartOptions};
    /// use serde_json::json;
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// // Generous: a loaded machine may be slow to schedule the worker.
    /// let wait = AwaitOptions { timeout: std::time::Duration::from_secs(30), ..AwaitOptions::default() };
    /// # let approval = r#"{"schema_version": 1, "id": "expense",
    /// #     "inputs": {"amount": {"schema": {"type": "integer", "min": 0}, "required": true}},
    /// #     "fields": {"approved": {"schema": {"type": "boolean"}}}, "outputs": {"approved": {}},
    /// #     "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
    /// #     "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;
    /// let graph = docket.publish_graph_json(approval).await?.graph_ref;
    /// let run = docket.start_run(&graph, parse_input(r#"{"amount": 5}"#)?, StartOptions::default()).await?;
    ///
    /// let cancelled = docket.cancel_run(&run.id).await?;
    /// assert_eq!(cancelled.status, RunStatus::Cancelled);
    /// // Cancelling again is harmless: the same run comes back.
    /// assert_eq!(docket.cancel_run(&run.id).await?, cancelled);
    ///
    /// // A finished run cannot be cancelled any more.
    /// let worker = docket.start_worker();
    /// let other = docket.start_run(&graph, parse_input(r#"{"amount": 7}"#)?, StartOptions::default()).await?;
    /// docket.await_run(&other.id, wait).await?;
    /// docket.resolve_interrupt(&other.id, "approve", json!(false)).await?;
    /// assert_eq!(docket.await_run(&other.id, wait).await?.status, RunStatus::Done);
    /// assert_eq!(docket.cancel_run(&other.id).await.unwrap_err().kind(), "inactive_run");
    /// worker.shutdown().await;
    ///
    /// // An unknown run is not found.
    /// let missing = docket::core::model::RunId::new("no-such-run")?;
    /// assert!(matches!(docket.cancel_run(&missing).await, Err(DocketError::NotFound)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; [`DocketError::Runtime`] `inactive_run` for a done or
    /// failed run; store errors.
    pub async fn cancel_run(&self, run_id: &RunId) -> Result<Run, DocketError> {
        let e = self.engine.inner();
        let clock = &e.clock;
        let signalled: Signalled = e
            .lifecycle
            .signal(e.backend.as_ref(), &self.scope(), run_id, |current| {
                runtime::cancel_run(current, clock.now())
            })
            .await?;
        Ok(signalled.into_run())
    }

    /// Recovers a poisoned run (wake now, counters zeroed); a healthy run is returned
    /// unchanged. In inline mode the run is then drained.
    ///
    /// A run is poisoned when its claims keep ending without progress
    /// ([`crate::WorkerConfig::max_claim_attempts`] in a row: a node that crashes its worker
    /// every time, a worker killed again and again). Workers then leave it alone until an
    /// operator — after fixing the cause — calls this.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::num::NonZeroU32;
    /// use docket::core::model::RunStatus;
    /// use docket::core::store::ClaimRequest;
    /// use docket::engine::WorkerConfig;
    /// use docket::{AwaitOptions, Docket, DocketError, StartOptions, TestingMode};
    ///
    /// // Manual testing mode: runs advance only through `drain_runs`, in this task.
    /// let config = WorkerConfig { max_claim_attempts: 1, ..WorkerConfig::default() };
    /// let backend = docket::connect_backend("memory://").await?;
    /// let docket = Docket::builder(backend, docket::nodes::registry())
    ///     .config(config)
    ///     .testing(TestingMode::Manual)
    ///     .build()?;
    /// // Generous: a loaded machine may be slow to schedule the worker.
    /// let wait = AwaitOptions { timeout: std::time::Duration::from_secs(30), ..AwaitOptions::default() };
    /// let graph = docket
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "hello",
    ///         "nodes": {"hi": {"implementation": "std.set"}},
    ///         "edges": {"a": {"from": "$start", "to": "hi"}, "b": {"from": "hi", "to": "$finish"}}}"#)
    ///     .await?
    ///     .graph_ref;
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    ///
    /// // A worker claims the run and hands it back without progress, spending its one attempt.
    /// let policy = ClaimRequest {
    ///     policy: Default::default(),
    ///     now: docket.engine().clock().now(),
    ///     limit: NonZeroU32::MIN,
    ///     orphan_ttl_ms: 60_000,
    ///     max_claim_attempts: NonZeroU32::MIN,
    ///     preference: None,
    /// };
    /// let lease = docket.backend().claim_due(&policy).await?.leases.remove(0);
    /// docket.backend().release_claim(&lease.run_id, &lease.claim_token, policy.now).await?;
    ///
    /// // The next claim finds it out of attempts and poisons it; awaiting it fails at once.
    /// assert_eq!(docket.drain_runs(1).await?.poisoned.len(), 1);
    /// let err = docket.await_run(&run.id, wait).await.unwrap_err();
    /// assert!(matches!(err, DocketError::Poisoned(_)), "{err}");
    ///
    /// // Recover it; it runs to the end.
    /// docket.retry_poisoned_run(&run.id).await?;
    /// docket.drain_runs(10).await?;
    /// assert_eq!(docket.fetch_run(&run.id).await?.status, RunStatus::Done);
    ///
    /// // A finished run has nothing to recover.
    /// let err = docket.retry_poisoned_run(&run.id).await.unwrap_err();
    /// assert!(matches!(err, DocketError::Store(_)), "{err}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; [`DocketError::Store`] `InactiveRun` for a terminal run.
    pub async fn retry_poisoned_run(&self, run_id: &RunId) -> Result<Run, DocketError> {
        let run = self
            .backend()
            .retry_poisoned_run(&self.scope(), run_id, self.engine.clock().now())
            .await?;
        self.after_signal(run).await
    }

    /// Polls the run until it waits for a signal or is terminal. A poisoned run fails at
    /// once (it cannot progress without an operator).
    ///
    /// Awaiting does not run anything: a worker (here or in another process) must. Cancel
    /// safe: dropping the future stops the polling and changes nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use docket::core::model::RunStatus;
    /// use docket::{AwaitOptions, Docket, DocketError, StartOptions};
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// let graph = docket
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "nap",
    ///         "nodes": {"nap": {"implementation": "std.sleep_ms", "config": {"ms": 20}}},
    ///         "edges": {"a": {"from": "$start", "to": "nap"}, "b": {"from": "nap", "to": "$finish"}}}"#)
    ///     .await?
    ///     .graph_ref;
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    ///
    /// // No worker yet: the run stays due, and a short await gives up.
    /// let brief = AwaitOptions { timeout: Duration::from_millis(30), ..AwaitOptions::default() };
    /// let err = docket.await_run(&run.id, brief).await.unwrap_err();
    /// assert!(matches!(err, DocketError::Timeout { .. }), "{err}");
    ///
    /// let worker = docket.start_worker();
    /// let patient = AwaitOptions { timeout: Duration::from_secs(30), poll_interval: Duration::from_millis(10) };
    /// assert_eq!(docket.await_run(&run.id, patient).await?.status, RunStatus::Done);
    /// worker.shutdown().await;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::Poisoned`]; [`DocketError::Timeout`]; [`DocketError::NotFound`];
    /// store errors.
    pub async fn await_run(
        &self,
        run_id: &RunId,
        options: AwaitOptions,
    ) -> Result<Run, DocketError> {
        let deadline = tokio::time::Instant::now() + options.timeout;
        loop {
            let info = self.inspect_run(run_id).await?;
            if info.is_poisoned() {
                return Err(DocketError::Poisoned(Box::new(info)));
            }
            if info.run.status == RunStatus::Waiting || info.run.status.is_terminal() {
                return Ok(info.run);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(DocketError::Timeout {
                    run_id: run_id.clone(),
                });
            }
            tokio::time::sleep(options.poll_interval.min(deadline - now)).await;
        }
    }
}
