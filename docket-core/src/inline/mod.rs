//! The processless driver (`docs/runs-and-moments.md`, “The processless driver”): runs a graph to a
//! stop in the calling task, with no store, accepting every proposed moment as committed.
//!
//! The inline runtime is not a second interpreter: it drives the same [`crate::runtime`]
//! functions a worker does, only the commit is an in-memory acceptance. Parks are served by a
//! [`Sleeper`] (a [`ManualSleeper`] makes tests instantaneous and observable).

mod driver;
mod entry;
mod sleeper;

use std::sync::Arc;

pub use entry::{resolve_interrupt_inline, resume_inline, run_inline, step_inline};
pub use sleeper::{ManualSleeper, Sleeper, TokioSleeper};

use crate::graph::{GraphDocument, RuntimeGraph};
use crate::model::{Run, RunId, ValueMap};
use crate::runtime::{Checkpoint, RuntimeConfig, RuntimeError};

/// The graph to drive: an authored document (compiled for publication first) or a
/// precompiled runtime graph.
#[derive(Clone, Copy, Debug)]
pub enum InlineGraph<'a> {
    /// Compile this document.
    Document(&'a GraphDocument),
    /// Use this runtime graph as is.
    Runtime(&'a RuntimeGraph),
}

impl<'a> From<&'a GraphDocument> for InlineGraph<'a> {
    fn from(doc: &'a GraphDocument) -> Self {
        InlineGraph::Document(doc)
    }
}

impl<'a> From<&'a RuntimeGraph> for InlineGraph<'a> {
    fn from(rtg: &'a RuntimeGraph) -> Self {
        InlineGraph::Runtime(rtg)
    }
}

/// Options of the inline driver.
#[derive(Clone, Debug)]
pub struct InlineOptions {
    /// Clock, ids and host limits.
    pub config: RuntimeConfig,
    /// Serves parks.
    pub sleeper: Arc<dyn Sleeper>,
    /// Stop after this many committed non-retry moments (initialization excluded).
    pub max_steps: Option<u64>,
    /// Run id for a new run (else generated).
    pub run_id: Option<RunId>,
    /// Host metadata for a new run.
    pub metadata: ValueMap,
}

impl InlineOptions {
    /// Options around `config`, sleeping with tokio's timer, without a step limit.
    #[must_use]
    pub fn new(config: RuntimeConfig) -> Self {
        InlineOptions {
            config,
            sleeper: Arc::new(TokioSleeper),
            max_steps: None,
            run_id: None,
            metadata: ValueMap::new(),
        }
    }

    /// Replaces the sleeper.
    #[must_use]
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Sets the step limit.
    #[must_use]
    pub fn with_max_steps(mut self, max_steps: Option<u64>) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Sets the run id of a new run.
    #[must_use]
    pub fn with_run_id(mut self, run_id: RunId) -> Self {
        self.run_id = Some(run_id);
        self
    }

    /// Sets the host metadata of a new run.
    #[must_use]
    pub fn with_metadata(mut self, metadata: ValueMap) -> Self {
        self.metadata = metadata;
        self
    }
}

/// Why the driver stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The run is terminal.
    Terminal,
    /// Only open interrupts remain.
    Waiting,
    /// `max_steps` committed moments were reached.
    MaxSteps,
    /// `step_inline` committed its one moment.
    Stepped,
}

/// A successful drive.
#[derive(Clone, Debug, PartialEq)]
pub struct InlineRun {
    /// The last committed run.
    pub run: Run,
    /// Every checkpoint committed by this call, in commit order.
    pub checkpoints: Vec<Checkpoint>,
    /// Why the driver stopped.
    pub stop: Stop,
}

/// A failed drive, with the checkpoints committed before the error.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct InlineError {
    /// What went wrong.
    #[source]
    pub error: RuntimeError,
    /// Checkpoints committed before it.
    pub checkpoints: Vec<Checkpoint>,
}
