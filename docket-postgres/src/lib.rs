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
