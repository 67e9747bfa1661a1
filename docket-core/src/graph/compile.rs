//! The compiler pipeline (`docs/graphs.md`, “The compiler pipeline”): node contracts → materialize
//! → validate → lower → runtime validation.
//!
//! * [`compile_for_publication`] materializes node config defaults and returns the effective
//!   document whose hash becomes the graph's content address;
//! * [`compile_effective`] compiles an already-effective (stored) document without
//!   materializing, so later changes to a node's defaults never alter a published version;
//! * [`verify`] runs the same pipeline as publication and returns every diagnostic.
//!
//! Reading JSON with diagnostics (the ingest step) is [`super::ingest::parse_document`].
//!
//! ```
//! use docket_core::graph::{compile_for_publication, CompileOptions, GraphDocument, NodeContracts, FINISH, START};
//! use serde_json::{json, Value};
//!
//! struct Registry;
//! impl NodeContracts for Registry {
//!     fn config_schema(&self, name: &str) -> Option<Value> {
//!         (name == "std.noop").then(|| json!({"type": "object", "fields": {
//!             "retries": {"type": "integer", "default": 3}
//!         }}))
//!     }
//! }
//!
//! let doc = GraphDocument::builder("hello")
//!     .node("only", "std.noop")
//!     .edge("begin", START, "only")
//!     .edge("end", "only", FINISH)
//!     .build()?;
//! let compiled = compile_for_publication(&doc, &Registry, CompileOptions::default())?;
//! // The default is now part of the stored document, and of its hash.
//! assert_eq!(compiled.effective.nodes["only"].config["retries"], json!(3));
//! assert_eq!(compiled.runtime.graph_hash, docket_core::graph::graph_hash(&compiled.effective));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::contracts::NodeContracts;
use super::diagnostic::{sort_diagnostics, CompileError, Diagnostic};
use super::document::GraphDocument;
use super::hash::graph_hash;
use super::lower::lower;
use super::runtime_check::check_runtime;
use super::runtime_graph::RuntimeGraph;
use super::validate;

pub use super::contracts::NodeSchemas;
pub use super::materialize::{materialize, validate_config};

/// Host options that shape compilation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// Host fallback for graphs that declare no `max_supersteps` policy. Used by cycle
    /// analysis and baked into the runtime graph.
    pub max_supersteps: Option<u64>,
}

/// A successful compilation.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    /// The effective document (what stores keep and what the hash covers).
    pub effective: GraphDocument,
    /// The runtime graph.
    pub runtime: RuntimeGraph,
    /// Non-blocking diagnostics (warnings and infos).
    pub warnings: Vec<Diagnostic>,
}

/// Compiles an authored document for publication: materializes config defaults, validates,
/// hashes the effective document and lowers it.
///
/// # Errors
/// [`CompileError`] with every diagnostic when any error-severity diagnostic is found.
pub fn compile_for_publication(
    doc: &GraphDocument,
    contracts: &dyn NodeContracts,
    options: CompileOptions,
) -> Result<Compiled, CompileError> {
    let schemas = NodeSchemas::collect(doc, contracts);
    let effective = materialize(doc, &schemas);
    finish(effective, &schemas, options)
}

/// Compiles an already-effective (stored) document without materializing defaults.
///
/// # Errors
/// [`CompileError`] with every diagnostic when any error-severity diagnostic is found.
pub fn compile_effective(
    doc: &GraphDocument,
    contracts: &dyn NodeContracts,
    options: CompileOptions,
) -> Result<Compiled, CompileError> {
    let schemas = NodeSchemas::collect(doc, contracts);
    finish(doc.clone(), &schemas, options)
}

/// Runs the publication pipeline and returns every diagnostic (errors and warnings, sorted:
/// errors first, then by path). Lowering and runtime validation run only when the passes find
/// no error, as in compilation.
#[must_use]
pub fn verify(
    doc: &GraphDocument,
    contracts: &dyn NodeContracts,
    options: CompileOptions,
) -> Vec<Diagnostic> {
    let schemas = NodeSchemas::collect(doc, contracts);
    let effective = materialize(doc, &schemas);
    match finish(effective, &schemas, options) {
        Ok(compiled) => compiled.warnings,
        Err(error) => error.diagnostics,
    }
}

fn finish(
    effective: GraphDocument,
    schemas: &NodeSchemas,
    options: CompileOptions,
) -> Result<Compiled, CompileError> {
    let mut diagnostics = validate::validate(&effective, schemas, options);
    if !diagnostics.iter().any(Diagnostic::is_error) {
        let hash = graph_hash(&effective);
        match lower(&effective, &hash, options.max_supersteps) {
            Ok(runtime) => {
                let problems = check_runtime(&runtime);
                if problems.is_empty() {
                    sort_diagnostics(&mut diagnostics);
                    return Ok(Compiled {
                        effective,
                        runtime,
                        warnings: diagnostics,
                    });
                }
                diagnostics.extend(problems);
            }
            Err(problems) => diagnostics.extend(problems),
        }
    }
    sort_diagnostics(&mut diagnostics);
    Err(CompileError { diagnostics })
}
