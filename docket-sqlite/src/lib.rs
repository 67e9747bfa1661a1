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
