//! The compiler pipeline (spec §6.2): ingest → node contracts → materialize → validate →
//! lower → runtime validation.
//!
//! * [`compile_for_publication`] materializes node config defaults and returns the effective
//!   document whose hash becomes the graph's content address;
//! * [`compile_effective`] compiles an already-effective (stored) document without
//!   materializing, so later changes to a node's defaults never alter a published version.

use std::collections::BTreeMap;

use serde_json::Value;

use super::contracts::NodeContracts;
use super::diagnostic::{CompileError, Diagnostic};
use super::document::GraphDocument;
use super::hash::graph_hash;
use super::lower::lower;
use super::runtime_graph::RuntimeGraph;
use super::schema::{Schema, SchemaType};
use super::validate;

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

/// Config schemas of the implementations a document uses, looked up once per compile.
#[derive(Clone, Debug, Default)]
pub struct NodeSchemas {
    /// Implementation name → parsed config schema, or the reasons it failed to parse.
    pub by_implementation: BTreeMap<String, Result<Schema, Vec<String>>>,
    /// Implementation names with no registered implementation.
    pub missing: Vec<String>,
}

impl NodeSchemas {
    /// Asks `contracts` once for each distinct implementation named by `doc`.
    #[must_use]
    pub fn collect(doc: &GraphDocument, contracts: &dyn NodeContracts) -> Self {
        let mut out = NodeSchemas::default();
        for node in doc.nodes.values() {
            let Some(name) = &node.implementation else {
                continue;
            };
            if out.by_implementation.contains_key(name) || out.missing.contains(name) {
                continue;
            }
            match contracts.config_schema(name) {
                Some(raw) => {
                    out.by_implementation
                        .insert(name.clone(), Schema::parse(&raw));
                }
                None => out.missing.push(name.clone()),
            }
        }
        out
    }
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

/// Runs every validation pass and returns all diagnostics (errors and warnings) without
/// lowering.
#[must_use]
pub fn verify(
    doc: &GraphDocument,
    contracts: &dyn NodeContracts,
    options: CompileOptions,
) -> Vec<Diagnostic> {
    let schemas = NodeSchemas::collect(doc, contracts);
    validate::validate(&materialize(doc, &schemas), &schemas, options)
}

fn finish(
    effective: GraphDocument,
    schemas: &NodeSchemas,
    options: CompileOptions,
) -> Result<Compiled, CompileError> {
    let mut diagnostics = validate::validate(&effective, schemas, options);
    sort_diagnostics(&mut diagnostics);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(CompileError { diagnostics });
    }
    let hash = graph_hash(&effective);
    let runtime = lower(&effective, &hash, options.max_supersteps).map_err(|mut errors| {
        errors.extend(diagnostics.iter().cloned());
        sort_diagnostics(&mut errors);
        CompileError {
            diagnostics: errors,
        }
    })?;
    Ok(Compiled {
        effective,
        runtime,
        warnings: diagnostics,
    })
}

/// Errors first, then by path and code, so output is stable.
fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.severity, &a.path, &a.code, &a.message).cmp(&(b.severity, &b.path, &b.code, &b.message))
    });
}

/// Inserts every config-schema field default that the node's config does not set.
/// Explicit config always wins.
#[must_use]
pub fn materialize(doc: &GraphDocument, schemas: &NodeSchemas) -> GraphDocument {
    let mut out = doc.clone();
    for node in out.nodes.values_mut() {
        let Some(name) = &node.implementation else {
            continue;
        };
        let Some(Ok(schema)) = schemas.by_implementation.get(name) else {
            continue;
        };
        if let SchemaType::Object { fields, .. } = &schema.ty {
            for (key, field) in fields {
                if let Some(default) = &field.default {
                    node.config
                        .entry(key.clone())
                        .or_insert_with(|| default.clone());
                }
            }
        }
    }
    out
}

/// Validates a node config against its implementation's schema.
///
/// # Errors
/// Human-readable reasons.
pub fn validate_config(
    schema: &Schema,
    config: &serde_json::Map<String, Value>,
) -> Result<(), Vec<String>> {
    schema.validate(&Value::Object(config.clone()))
}
