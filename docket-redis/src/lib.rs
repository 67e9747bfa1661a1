#![doc = include_str!("../README.md")]

mod admin;
mod claims;
mod codec;
mod error;
mod graphs;
pub mod keys;
mod layout;
mod ops;
pub mod options;
mod prune;
mod reads;
mod scripts;
mod shares;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod traits;
mod transitions;
mod wakeups;

pub use layout::LAYOUT_VERSION;
pub use options::{
    check_eviction_policy, check_namespace, parse_url, persistence_warnings, ConnectError,
    RedisOptions, CLIENT_PARAMS, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_NAMESPACE,
    DEFAULT_STATEMENT_TIMEOUT_MS, NAMESPACE_PARAM, URL_OPTIONS,
};
pub use store::{RedisStore, MAX_CLAIM_BATCH};
