//! The graph model and compiler (`docs/runs-and-moments.md`,
//! “Reducers, schemas, guards and portable values”; `docs/graphs.md`): the authored document,
//! schemas, reducers, guards, policies, diagnostics, the compiler pipeline, the content hash and
//! the runtime graph.
//!
//! * write graphs as JSON ([`GraphDocument::from_json`], or [`ingest::parse_document`] for
//!   diagnostics with paths) or in Rust ([`GraphDocument::builder`]);
//! * publish with [`compile_for_publication`] (materializes config defaults; the effective
//!   document's [`graph_hash`] is its content address), run stored documents with
//!   [`compile_effective`], lint with [`verify`];
//! * the diagnostic catalogue is [`codes`].

pub mod builder;
pub mod codes;
pub mod compile;
pub mod contracts;
pub mod diagnostic;
pub mod document;
pub mod guard;
pub mod hash;
pub mod ingest;
pub mod lower;
pub mod materialize;
pub mod policy;
pub mod reducer;
pub mod runtime_check;
pub mod runtime_graph;
pub mod schema;
pub mod validate;

pub use builder::{BuildError, GraphBuilder};
pub use compile::{compile_effective, compile_for_publication, verify, CompileOptions, Compiled};
pub use contracts::{NoContracts, NodeContracts, NodeSchemas};
pub use diagnostic::{CompileError, Diagnostic, Severity};
pub use document::{
    DocumentError, EdgeDecl, EdgeFrom, FieldDecl, GraphDocument, InputDecl, NodeDecl, OutputDecl,
    FINISH, SCHEMA_VERSION, START,
};
pub use guard::{Guard, GuardError, StateView};
pub use hash::{canonical_bytes, graph_hash, hash_bytes};
pub use ingest::{parse_document, parse_document_value};
pub use policy::{NodePolicies, PolicyProblem, RetryPolicy};
pub use reducer::Reducer;
pub use runtime_check::check_runtime;
pub use runtime_graph::{
    Channel, FieldKind, RuntimeEdge, RuntimeGraph, RuntimeNode, RuntimeOutput,
};
pub use schema::{Schema, SchemaType};
