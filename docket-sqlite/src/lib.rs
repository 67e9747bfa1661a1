#![doc = include_str!("../README.md")]

mod claims;
mod codec;
mod error;
mod fairness;
mod graphs;
mod ops;
pub mod options;
mod prune;
mod reads;
mod schema;
mod sql;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod traits;
mod transitions;
mod wakeups;
mod workers;

pub use options::{
    parse_url, SqliteOptions, Synchronous, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_PATH,
    DEFAULT_STATEMENT_TIMEOUT_MS, MAX_READERS, URL_OPTIONS,
};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{EffectiveSettings, SqliteStore};

/// The claimed commits per `commit_claimed_batch` call this store asks a worker's group
/// commit for when the worker leaves the choice to the store
/// (`RunStore::preferred_commit_batch`). Every commit is a write transaction on the one
/// writer connection and pays its own fsync (`synchronous=FULL`); a batch is one
/// transaction with a savepoint per member, so its members share one. Measured on a
/// 2-core machine with 10 and 16 committing tasks: fenced commits/s 1.7–2.3× of one commit
/// per call, end-to-end runs/s 1.1–1.5× (`BENCHMARKS.md`, “Group commit”).
pub const PREFERRED_COMMIT_BATCH: usize = 64;
