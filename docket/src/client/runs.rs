//! Starting, reading, signalling and awaiting runs.

use std::time::Duration;

use serde_json::Value;

use docket_core::graph::RuntimeGraph;
use docket_core::lifecycle::Signalled;
use docket_core::model::{GraphRef, Run, RunId, RunInfo, RunPage, RunQuery, RunStatus, ValueMap};
use docket_core::runtime::{self, build_initial_run, propose_init, Initialization};

use super::{Docket, StartOptions};
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
    /// compile the effective document → identity check → initialize → commit. In inline mode
    /// the run is then drained and returned freshly fetched.
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
        let rtg = self.runtime_graph(graph_ref).await?;
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
