//! The inline entry points (`docs/runs-and-moments.md`, “The processless driver”).

use std::borrow::Cow;

use serde_json::{json, Value};

use super::driver::Driver;
use super::{InlineError, InlineGraph, InlineOptions, InlineRun, Stop};
use crate::graph::{compile_for_publication, CompileOptions, RuntimeGraph};
use crate::model::Run;
use crate::node::NodeRegistry;
use crate::runtime::{
    build_initial_run, check_execution_policy, input_map, propose_init, resolve_interrupt,
    Disposition, ErrorKind, Initialization, Mutation, ParkKind, Phase, RuntimeError,
};

/// Compiles (if needed), checks the host execution policy, builds and initializes a run from
/// `input`, then drives it to a stop.
///
/// # Errors
/// [`InlineError`] with no checkpoints when the graph does not compile
/// ([`ErrorKind::InvalidGraph`], `details.diagnostics`), a node's timeout exceeds the host
/// ceiling ([`ErrorKind::IncompatibleExecutionPolicy`]) or the input is invalid
/// ([`ErrorKind::InvalidInput`]); otherwise any runtime error, with the checkpoints committed
/// before it.
pub async fn run_inline(
    graph: impl Into<InlineGraph<'_>>,
    input: Value,
    nodes: &NodeRegistry,
    options: &InlineOptions,
) -> Result<InlineRun, InlineError> {
    let rtg = prepare(graph.into(), nodes, options).map_err(bare)?;
    let input = input_map(input).map_err(bare)?;
    let created = build_initial_run(
        &rtg,
        input,
        options.run_id.clone(),
        options.metadata.clone(),
        options.config.ids(),
    )
    .map_err(bare)?;
    let mut driver = Driver::new(&rtg, nodes, options, created.clone());
    match propose_init(&rtg, &created, options.config.now()).map_err(bare)? {
        Initialization::Moment(moment) => driver.accept(&moment)?,
        Initialization::Terminal(_) => return Ok(driver.finish(Stop::Terminal)),
    }
    driver.drive().await
}

/// Re-initializes a saved run (one `run_initialized` fact with `{"resumed": true}`) and
/// drives it to a stop. A terminal run is returned unchanged, with no checkpoint.
///
/// # Errors
/// [`ErrorKind::GraphMismatch`] when `run` is bound to another graph; compile and host-policy
/// errors as [`run_inline`]; any runtime error while driving.
pub async fn resume_inline(
    graph: impl Into<InlineGraph<'_>>,
    run: &Run,
    nodes: &NodeRegistry,
    options: &InlineOptions,
) -> Result<InlineRun, InlineError> {
    let rtg = prepare(graph.into(), nodes, options).map_err(bare)?;
    let mut driver = Driver::new(&rtg, nodes, options, run.clone());
    match propose_init(&rtg, run, options.config.now()).map_err(bare)? {
        Initialization::Terminal(_) => Ok(driver.finish(Stop::Terminal)),
        Initialization::Moment(moment) => {
            driver.accept(&moment)?;
            if moment.disposition
                == (Disposition::Park {
                    kind: ParkKind::External,
                    reason: crate::runtime::ParkReason::AwaitingInterrupts,
                })
            {
                return Ok(driver.finish(Stop::Waiting));
            }
            driver.drive().await
        }
    }
}

/// Commits exactly one transition of `run` (serving a not-yet-due retry park by sleeping
/// first). Returns with [`Stop::Waiting`] or [`Stop::Terminal`] and no checkpoint when there is
/// nothing to commit.
///
/// # Errors
/// Compile and host-policy errors as [`run_inline`]; any runtime error.
pub async fn step_inline(
    graph: impl Into<InlineGraph<'_>>,
    run: &Run,
    nodes: &NodeRegistry,
    options: &InlineOptions,
) -> Result<InlineRun, InlineError> {
    let rtg = prepare(graph.into(), nodes, options).map_err(bare)?;
    Driver::new(&rtg, nodes, options, run.clone()).step().await
}

/// Resolves open interrupt `interrupt_id` of `run` with `value`, commits the resolution and
/// drives the run to its next stop.
///
/// # Errors
/// The resolution errors of [`crate::runtime::resolve_interrupt`] (with no checkpoint);
/// compile and host-policy errors as [`run_inline`]; any runtime error while driving.
pub async fn resolve_interrupt_inline(
    graph: impl Into<InlineGraph<'_>>,
    run: &Run,
    interrupt_id: &str,
    value: Value,
    nodes: &NodeRegistry,
    options: &InlineOptions,
) -> Result<InlineRun, InlineError> {
    let rtg = prepare(graph.into(), nodes, options).map_err(bare)?;
    let mut driver = Driver::new(&rtg, nodes, options, run.clone());
    match resolve_interrupt(&rtg, run, interrupt_id, value, options.config.now()).map_err(bare)? {
        Mutation::Commit(moment) => driver.accept(&moment)?,
        Mutation::Unchanged(_) => return Ok(driver.finish(Stop::Stepped)),
    }
    driver.drive().await
}

/// Compiles a document (or borrows a runtime graph) and checks the host execution policy.
fn prepare<'g>(
    graph: InlineGraph<'g>,
    nodes: &NodeRegistry,
    options: &InlineOptions,
) -> Result<Cow<'g, RuntimeGraph>, RuntimeError> {
    let rtg = match graph {
        InlineGraph::Runtime(rtg) => Cow::Borrowed(rtg),
        InlineGraph::Document(doc) => {
            let compiled = compile_for_publication(
                doc,
                nodes,
                CompileOptions {
                    max_supersteps: options.config.max_supersteps(),
                },
            )
            .map_err(|e| {
                RuntimeError::new(
                    ErrorKind::InvalidGraph,
                    Phase::Compile,
                    format!("graph {:?} does not compile: {e}", doc.id),
                )
                .with_detail("diagnostics", json!(e.diagnostics))
            })?;
            Cow::Owned(compiled.runtime)
        }
    };
    check_execution_policy(&rtg, options.config.max_attempt_elapsed_ms())?;
    Ok(rtg)
}

fn bare(error: RuntimeError) -> InlineError {
    InlineError {
        error,
        checkpoints: Vec::new(),
    }
}
