#![doc = include_str!("../README.md")]
//!
//! ## The crate
//!
//! The [`Docket`] client
//! facade, the worker [`engine`] and the standard node library [`nodes`] (`std.*`). The
//! `docket` command (demo, worker process, administration, bench) is the `docket-cli`
//! package, built on this library.
//!
//! ## Cargo features (backends)
//!
//! | feature | default | backend | URL |
//! | --- | --- | --- | --- |
//! | `sqlite` | yes | `docket-sqlite`, embedded | `sqlite://docket.db` |
//! | `postgres` | no | `docket-postgres` | `postgres://…` |
//! | `redis` | no | `docket-redis` | `redis://…` |
//! | — | always | the in-memory reference store | `memory://` |
//!
//! A URL whose backend feature is off fails with an error naming the feature to enable. Any
//! other store plugs in through [`Docket::with_backend`] with no engine change.
//!
//! ## Crate choices
//!
//! * `tokio` runs vehicles, node attempts and timers (the only async runtime the workspace
//!   uses); `tracing` carries spans and decision events (never tokens or payloads).
//! * `hdrhistogram` for commit latency percentiles in the engine's statistics: constant
//!   memory, exact enough quantiles, mergeable across workers.

pub mod client;
pub mod connect;
pub mod engine;
pub mod error;
pub mod examples;
pub mod history;
pub mod nodes;

pub use client::{
    parse_input, AwaitOptions, Docket, DocketBuilder, Publication, StartOptions, TestingMode,
    START_BATCH_LIMIT,
};
pub use connect::{connect_backend, BackendUrl};
pub use docket_core as core;
pub use engine::{Engine, Worker, WorkerConfig};
pub use error::DocketError;
