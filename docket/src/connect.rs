//! Backend URLs: `sqlite://path` (default `sqlite://docket.db`), `memory://`,
//! `postgres://…`, `redis://…`.
//!
//! Each backend documents its query options where it parses them
//! (`docket_sqlite::parse_url`, `docket_postgres::parse_url`, `docket_redis::parse_url`):
//! every backend takes `connect_timeout_ms` and `statement_timeout_ms`, range-checks every
//! number, and refuses an unknown option or one given twice; `memory://` takes none.
//!
//! * A `redis://` (or `rediss://`) URL may name the key namespace: `?namespace=prod` (default
//!   `docket`); the Redis client's own parameters are passed on.
//! * PostgreSQL URLs are the driver's (`postgres://user@host:port/db?sslmode=…`) plus Docket's
//!   own parameters, e.g. `schema=NAME` (default `docket`; never a system schema, nor `public`
//!   without `allow_public_schema=true`), `pool_size=N`, and behind a transaction pooler
//!   `pooler=transaction` with `listen_url=URL` or `poll_only=true` (see
//!   `docket_postgres::parse_url`); connecting brings the schema up to date.
//!
//! A URL may carry a password: show one only through [`redact`] (re-exported from
//! `docket_core::store::url`), which every log line, error and `--json` output of this crate
//! and of the CLI uses.

use std::sync::Arc;

use docket_core::memory::MemoryStore;
use docket_core::model::excerpt;
use docket_core::store::url::{split_query, unknown_option};
use docket_core::store::{Backend, StoreError};

use crate::error::DocketError;

pub use docket_core::store::url::redact;

/// The default backend URL of the CLI and of [`crate::Docket::connect`] with no URL.
pub const DEFAULT_URL: &str = "sqlite://docket.db";

/// A parsed backend URL. Its `Debug` shows the URL [`redact`]ed.
#[derive(Clone, PartialEq, Eq)]
pub enum BackendUrl {
    /// `sqlite://PATH[?options]` (the whole URL is kept for the SQLite parser).
    Sqlite(String),
    /// `memory://`: a fresh in-memory store (lost at exit).
    Memory,
    /// `postgres://` or `postgresql://`.
    Postgres(String),
    /// `redis://` or `rediss://`, optionally with `?namespace=NAME` (default `docket`).
    Redis(String),
}

impl std::fmt::Debug for BackendUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = match self {
            BackendUrl::Sqlite(url) | BackendUrl::Postgres(url) | BackendUrl::Redis(url) => {
                redact(url)
            }
            BackendUrl::Memory => "memory://".to_owned(),
        };
        f.debug_tuple(self.scheme()).field(&url).finish()
    }
}

impl BackendUrl {
    /// Parses `url` by scheme.
    ///
    /// # Errors
    /// [`DocketError::UnsupportedBackend`] for an unknown scheme.
    pub fn parse(url: &str) -> Result<Self, DocketError> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("sqlite") => Ok(BackendUrl::Sqlite(url.to_owned())),
            Some("memory") => memory(url),
            Some("postgres" | "postgresql") => Ok(BackendUrl::Postgres(url.to_owned())),
            Some("redis" | "rediss") => Ok(BackendUrl::Redis(url.to_owned())),
            _ => Err(DocketError::UnsupportedBackend {
                url: excerpt(&redact(url)).into_owned(),
                reason: "expected sqlite://PATH, memory://, postgres://… or redis://…".into(),
            }),
        }
    }

    /// The scheme as written in the canonical form.
    #[must_use]
    pub fn scheme(&self) -> &'static str {
        match self {
            BackendUrl::Sqlite(_) => "sqlite",
            BackendUrl::Memory => "memory",
            BackendUrl::Postgres(_) => "postgres",
            BackendUrl::Redis(_) => "redis",
        }
    }
}

/// `memory://` takes no path and no option: anything after the scheme is refused rather than
/// silently ignored.
fn memory(url: &str) -> Result<BackendUrl, DocketError> {
    let (base, params) = split_query("memory", url)?;
    if let Some(param) = params.first() {
        return Err(unknown_option("memory", param.key, &[]).into());
    }
    if base.len() > "memory://".len() {
        return Err(StoreError::invalid_argument(format!(
            "a memory:// URL has no path, got {:?}",
            excerpt(&base["memory://".len()..])
        ))
        .into());
    }
    Ok(BackendUrl::Memory)
}

/// Opens the backend named by `url`.
///
/// # Errors
/// [`DocketError::UnsupportedBackend`] for an unknown scheme;
/// [`DocketError::BackendFeatureDisabled`] naming the cargo feature when the backend is
/// compiled out; store errors from opening.
pub async fn connect_backend(url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    match BackendUrl::parse(url)? {
        BackendUrl::Memory => Ok(Arc::new(MemoryStore::new())),
        BackendUrl::Sqlite(url) => sqlite(&url).await,
        BackendUrl::Postgres(url) => postgres(&url).await,
        BackendUrl::Redis(url) => redis(&url).await,
    }
}

#[cfg(feature = "redis")]
async fn redis(url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    Ok(Arc::new(connect_redis(url).await?))
}

#[cfg(not(feature = "redis"))]
async fn redis(_url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    not_available("redis")
}

/// Opens the Redis store named by a `redis://…[?namespace=NAME]` URL (default namespace
/// `docket`), with the server checks of [`docket_redis::RedisStore::open`].
///
/// # Errors
/// A store error for an invalid namespace or URL, an unreachable server, or a server that
/// may evict keys.
#[cfg(feature = "redis")]
pub async fn connect_redis(url: &str) -> Result<docket_redis::RedisStore, DocketError> {
    Ok(docket_redis::RedisStore::connect(url).await?)
}

#[cfg(feature = "sqlite")]
async fn sqlite(url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    let store = docket_sqlite::SqliteStore::connect(url).await?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    not_available("sqlite")
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    let store = docket_postgres::PostgresStore::connect(url).await?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_url: &str) -> Result<Arc<dyn Backend>, DocketError> {
    not_available("postgres")
}

/// The error for a URL whose backend was compiled out: it names the cargo feature to enable.
#[cfg_attr(
    all(feature = "sqlite", feature = "postgres", feature = "redis"),
    allow(dead_code)
)]
fn not_available(feature: &'static str) -> Result<Arc<dyn Backend>, DocketError> {
    Err(DocketError::BackendFeatureDisabled {
        scheme: feature.to_owned(),
        feature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_parse() {
        assert_eq!(
            BackendUrl::parse("memory://").ok(),
            Some(BackendUrl::Memory)
        );
        assert!(matches!(
            BackendUrl::parse("postgresql://x/y"),
            Ok(BackendUrl::Postgres(_))
        ));
        assert!(matches!(
            BackendUrl::parse("mysql://x"),
            Err(DocketError::UnsupportedBackend { .. })
        ));
        assert!(BackendUrl::parse("docket.db").is_err());
    }

    #[tokio::test]
    #[cfg(not(feature = "redis"))]
    async fn redis_names_its_feature_when_compiled_out() {
        let err = connect_backend("redis://127.0.0.1")
            .await
            .expect_err("compiled out");
        assert!(err.to_string().contains("`redis`"), "{err}");
    }

    #[cfg(feature = "redis")]
    #[tokio::test]
    async fn a_bad_redis_namespace_is_refused_before_connecting() {
        // Port 1: nothing listens, so only the namespace check can answer.
        let err = connect_backend("redis://127.0.0.1:1?namespace=a*b")
            .await
            .expect_err("invalid namespace");
        assert!(err.to_string().contains("a*b"), "{err}");
    }

    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn postgres_names_its_feature_when_compiled_out() {
        let err = connect_backend("postgres://localhost/db")
            .await
            .expect_err("compiled out");
        assert!(err.to_string().contains("`postgres`"), "{err}");
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn a_bad_postgres_url_is_refused_before_connecting() {
        let err = connect_backend("postgres://localhost/db?schema=Not-Valid")
            .await
            .expect_err("bad schema name");
        assert!(err.to_string().contains("schema name"), "{err}");
    }
}
