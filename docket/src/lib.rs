//! # docket
//!
//! Durable, graph-shaped workflow runs whose storage is a plug-in: the facade, the worker
//! engine and the `docket` CLI. Pick a backend per deployment by cargo feature: `sqlite`
//! (default, embedded), `postgres`, `redis`.

pub use docket_core as core;
