//! # docket-core
//!
//! The storage-free heart of Docket: the domain model, the graph compiler, the pure moment
//! loop, the store traits with the decision tables every backend shares, the lifecycle
//! composer, and the reference in-memory store that every backend is compared against.
//!
//! **No sockets, no files, no wall clock**: time enters through [`model::Clock`], ids through
//! an injected generator, so every runtime decision is reproducible.
//!
//! Crate choices: `serde_json` for portable values and the graph wire format (its `Map` is a
//! `BTreeMap`, and canonical encoding sorts explicitly anyway); `sha2` for content hashes;
//! `uuid` for claim tokens; `regex` for schema patterns; `thiserror` for error types;
//! `async-trait` so the store traits stay object safe (`Arc<dyn Backend>`); `tokio` only to run
//! node activations concurrently.

pub mod graph;
pub mod inline;
pub mod lifecycle;
pub mod memory;
pub mod model;
pub mod node;
pub mod ops;
pub mod runtime;
pub mod store;
