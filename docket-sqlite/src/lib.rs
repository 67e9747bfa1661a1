#![doc = include_str!("../README.md")]

mod codec;
mod error;
mod ops;
pub mod options;
mod schema;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod workers;

pub use options::{
    parse_url, SqliteOptions, SqliteUrl, Synchronous, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_PATH,
    DEFAULT_STATEMENT_TIMEOUT_MS, MAX_READERS, URL_OPTIONS,
};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{EffectiveSettings, SqliteStore};
