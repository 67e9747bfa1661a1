//! How a vehicle turns a stored effective document into a runtime graph.

use std::fmt;

use docket_core::graph::{
    compile_effective, CompileError, CompileOptions, GraphDocument, RuntimeGraph,
};
use docket_core::node::NodeRegistry;

/// Compiles stored (effective) graph documents. Injectable so tests can count compilations or
/// simulate a compiler that disagrees with the stored address.
pub trait GraphCompiler: Send + Sync + fmt::Debug + 'static {
    /// Compiles `doc` with the config schemas of `nodes`.
    ///
    /// # Errors
    /// [`CompileError`] with every diagnostic.
    fn compile(
        &self,
        doc: &GraphDocument,
        nodes: &NodeRegistry,
        options: CompileOptions,
    ) -> Result<RuntimeGraph, CompileError>;
}

/// The production compiler: [`compile_effective`] (no default materialization, so a node's
/// later default changes never alter a published version).
#[derive(Debug, Clone, Copy, Default)]
pub struct EffectiveCompiler;

impl GraphCompiler for EffectiveCompiler {
    fn compile(
        &self,
        doc: &GraphDocument,
        nodes: &NodeRegistry,
        options: CompileOptions,
    ) -> Result<RuntimeGraph, CompileError> {
        compile_effective(doc, nodes, options).map(|c| c.runtime)
    }
}
