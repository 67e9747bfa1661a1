//! Opening the compose store named by a backend URL (the same URLs as `docket::connect`).

use std::sync::Arc;

use docket::BackendUrl;

use crate::ports::error::DetachedJobError;
use crate::ports::evidence::EvidenceGraph;
use crate::ports::ledger::DeliveryLedger;

use super::memory::MemoryComposeStore;

/// One backend's evidence graph and delivery ledger (usually one value behind both).
#[derive(Clone, Debug)]
pub struct ComposeStore {
    /// The evidence graph.
    pub evidence: Arc<dyn EvidenceGraph>,
    /// The delivery ledger.
    pub ledger: Arc<dyn DeliveryLedger>,
}

impl ComposeStore {
    /// Both ports served by one value.
    #[must_use]
    pub fn of<T: EvidenceGraph + DeliveryLedger>(store: T) -> Self {
        let store = Arc::new(store);
        ComposeStore {
            evidence: store.clone(),
            ledger: store,
        }
    }
}

/// Opens the compose tables or keys of the backend named by `url`, creating or upgrading
/// them: `memory://` (a fresh in-memory store), `sqlite://PATH`, `postgres://…` (same
/// `schema=` parameter as the run store), `redis://…` (same `namespace=` parameter).
///
/// # Errors
/// `InvalidInput` for an unknown scheme or a backend whose cargo feature is off; `Store` for
/// a failure to connect or migrate.
pub async fn connect_compose_store(url: &str) -> Result<ComposeStore, DetachedJobError> {
    let parsed =
        BackendUrl::parse(url).map_err(|e| DetachedJobError::InvalidInput(e.to_string()))?;
    match parsed {
        BackendUrl::Memory => Ok(ComposeStore::of(MemoryComposeStore::new())),
        BackendUrl::Sqlite(url) => sqlite(&url).await,
        BackendUrl::Postgres(url) => postgres(&url).await,
        BackendUrl::Redis(url) => redis(&url).await,
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite(url: &str) -> Result<ComposeStore, DetachedJobError> {
    let path = docket_sqlite::parse_url(url)
        .map_err(|e| DetachedJobError::InvalidInput(e.to_string()))?
        .path;
    Ok(ComposeStore::of(
        super::sqlite::SqliteComposeStore::open(path).await?,
    ))
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_: &str) -> Result<ComposeStore, DetachedJobError> {
    Err(disabled("sqlite"))
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str) -> Result<ComposeStore, DetachedJobError> {
    Ok(ComposeStore::of(
        super::postgres::PostgresComposeStore::connect_url(url).await?,
    ))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: &str) -> Result<ComposeStore, DetachedJobError> {
    Err(disabled("postgres"))
}

#[cfg(feature = "redis")]
async fn redis(url: &str) -> Result<ComposeStore, DetachedJobError> {
    Ok(ComposeStore::of(
        super::redis::RedisComposeStore::connect_url(url).await?,
    ))
}

#[cfg(not(feature = "redis"))]
async fn redis(_: &str) -> Result<ComposeStore, DetachedJobError> {
    Err(disabled("redis"))
}

#[cfg_attr(
    all(feature = "sqlite", feature = "postgres", feature = "redis"),
    allow(dead_code)
)]
fn disabled(feature: &str) -> DetachedJobError {
    DetachedJobError::InvalidInput(format!(
        "the {feature} backend is compiled out: enable the `{feature}` feature of meerkat-compose"
    ))
}
