//! # docket
//!
//! Durable, graph-shaped workflow runs whose storage is a plug-in: the [`Docket`] client
//! facade, the worker [`engine`], the standard node library [`nodes`] (`std.*`) and the
//! `docket` CLI.
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
//! * `clap` (derive) for the CLI: typed subcommands and `--help` for free.
//! * `indicatif` for the demo's progress bar (hidden when stderr is not a terminal), and
//!   `comfy-table` for its summary table: both small, widely used, and terminal-aware.
//! * `hdrhistogram` for commit latency percentiles: constant memory, exact enough quantiles,
//!   mergeable across workers.
//! * `tracing-subscriber` only in the binary, to print the engine's events (`RUST_LOG`).
//! * `plotters` (bitmap backend, text through pure-Rust `ab_glyph`) for the PNG chart of
//!   [`bench`](mod@bench); the backend drivers (`rusqlite`, `sqlx`, `redis`) come with their backend
//!   features so the bench can measure each store beside a raw floor on the same server.

pub mod bench;
pub mod client;
pub mod connect;
pub mod engine;
pub mod error;
pub mod examples;
pub mod history;
pub mod nodes;

pub use client::{
    parse_input, AwaitOptions, Docket, DocketBuilder, Publication, StartOptions, TestingMode,
};
pub use connect::{connect_backend, BackendUrl};
pub use docket_core as core;
pub use engine::{Engine, Worker, WorkerConfig};
pub use error::DocketError;
