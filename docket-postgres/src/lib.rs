#![doc = include_str!("../README.md")]

mod bulk;
mod claims;
mod codec;
mod commit_batch;
mod error;
mod fair;
mod graphs;
mod migrations;
mod ops;
mod options;
mod pooler;
mod prune;
mod reads;
mod sql;
mod statement;
mod store;
mod traits;
mod transitions;
mod wakeups;
mod warm_pool;

#[cfg(feature = "testing")]
pub mod testing;

pub use error::DriverError;
pub use migrations::LATEST_VERSION;
pub use options::{
    check_schema_allowed, parse_url, validate_schema_name, Pooler, PostgresOptions,
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA, DEFAULT_STATEMENT_TIMEOUT_MS,
    DEFAULT_URL, DRIVER_PARAMS, MAX_POOL_SIZE, URL_OPTIONS,
};
pub use pooler::driver_options;
pub use store::PostgresStore;
pub use wakeups::{listener_application_name, ops_wake_payload, WAKE_CHANNEL};
pub use warm_pool::{WarmConnection, WarmPool, COOL_AFTER};

/// The claimed commits per `commit_claimed_batch` call this store asks a worker's group
/// commit for when the worker leaves the choice to the store
/// (`RunStore::preferred_commit_batch`). A batch of distinct runs is one statement: one
/// round trip and one transaction for all its members, each still fenced on its own row.
/// Group commit only forms batches when more commits are pending than it has calls in
/// flight, so a worker with a few vehicles commits every moment alone as before; measured on
/// a 2-core machine (2026-12-04), batches of up to 64 were level with one commit per call at
/// 10 vehicles, and ahead from 16 (fenced commits/s 1.2–1.35×, end-to-end 3-node runs/s
/// 1.25–1.35×) to 64 (fenced commits/s 2.0–2.9×, the 1-node drain 1.5–1.9×)
/// (`BENCHMARKS.md`, “Group commit”).
pub const PREFERRED_COMMIT_BATCH: usize = 64;
