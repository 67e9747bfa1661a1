//! Durable homes for the evidence graph and the delivery ledger, one per backend, each in
//! its own tables or keys next to (never inside) the run store's.

pub mod connect;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use connect::{connect_compose_store, ComposeStore};
pub use memory::MemoryComposeStore;
