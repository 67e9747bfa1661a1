//! The graph model and compiler (spec §5.10, §6): the authored document, schemas, reducers,
//! guards, policies, diagnostics, the compiler pipeline, the content hash and the runtime graph.

pub mod compile;
pub mod contracts;
pub mod diagnostic;
pub mod document;
pub mod guard;
pub mod hash;
pub mod lower;
pub mod policy;
pub mod reducer;
pub mod runtime_graph;
pub mod schema;
pub mod validate;

pub use compile::{compile_effective, compile_for_publication, verify, CompileOptions, Compiled};
pub use contracts::{NoContracts, NodeContracts};
pub use diagnostic::{CompileError, Diagnostic, Severity};
pub use document::{
    DocumentError, EdgeDecl, EdgeFrom, FieldDecl, GraphDocument, InputDecl, NodeDecl, OutputDecl,
    FINISH, SCHEMA_VERSION, START,
};
pub use guard::{Guard, GuardError, StateView};
pub use hash::{canonical_bytes, graph_hash, hash_bytes};
pub use policy::{NodePolicies, RetryPolicy};
pub use reducer::Reducer;
pub use runtime_graph::{
    Channel, FieldKind, RuntimeEdge, RuntimeGraph, RuntimeNode, RuntimeOutput,
};
pub use schema::{Schema, SchemaType};
