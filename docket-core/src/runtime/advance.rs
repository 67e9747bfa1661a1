//! `propose_advance` (`docs/runs-and-moments.md`, “Planning”): plan → execute → settle, one commit
//! boundary per call.

use super::config::RuntimeConfig;
use super::error::RuntimeError;
use super::moment::Moment;
use super::plan::{plan, Plan};
use super::settle::settle;
use crate::graph::RuntimeGraph;
use crate::model::{Run, Timestamp};
use crate::node::{execute, NodeRegistry};

/// What one call of [`propose_advance`] decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Proposal {
    /// Commit this moment (a barrier, retry park, completion or failure).
    Moment(Box<Moment>),
    /// Only open interrupts remain; nothing to commit (the `waiting` status was committed
    /// at its barrier).
    Wait {
        /// The run, unchanged.
        run: Box<Run>,
        /// Sorted ids of the open interrupts.
        interrupt_ids: Vec<String>,
    },
    /// An active superstep has no attempt due yet; nothing to commit.
    Park {
        /// The run, unchanged.
        run: Box<Run>,
        /// The earliest retry deadline.
        resume_at: Timestamp,
        /// Milliseconds until then (never negative).
        wait_ms: u64,
    },
    /// Already terminal; nothing to commit.
    Terminal(Box<Run>),
}

/// Proposes the next moment of `run`: plans at `max(clock(), resume_floor)`, executes the
/// planned activations with `nodes`, and settles their results at a fresh clock reading.
///
/// # Cancel safety
/// Dropping the future aborts in-flight node attempts and commits nothing.
///
/// # Errors
/// [`super::ErrorKind::InvalidRun`] for a `created` run; [`super::ErrorKind::GraphMismatch`];
/// [`super::ErrorKind::RuntimeUnavailable`] when a node implementation is not registered;
/// an id generator that cannot mint interrupt ids.
pub async fn propose_advance(
    rtg: &RuntimeGraph,
    run: &Run,
    nodes: &NodeRegistry,
    config: &RuntimeConfig,
) -> Result<Proposal, RuntimeError> {
    let planned = plan(rtg, run, config.floored_now(), config.max_supersteps())?;
    let results = match &planned {
        Plan::Terminal => return Ok(Proposal::Terminal(Box::new(run.clone()))),
        Plan::Wait { interrupt_ids } => {
            return Ok(Proposal::Wait {
                run: Box::new(run.clone()),
                interrupt_ids: interrupt_ids.clone(),
            })
        }
        Plan::Park { resume_at, wait_ms } => {
            return Ok(Proposal::Park {
                run: Box::new(run.clone()),
                resume_at: *resume_at,
                wait_ms: *wait_ms,
            })
        }
        Plan::Dispatch(superstep) => {
            execute(
                superstep,
                nodes,
                config.context(),
                config.max_attempt_elapsed_ms(),
            )
            .await?
        }
        Plan::Complete | Plan::Fail(_) => Vec::new(),
    };
    settle(rtg, run, &planned, &results, config.now(), config.ids())
        .map(|m| Proposal::Moment(Box::new(m)))
}
