//! Opening the store under test together with its raw floor, refusing a store that is not
//! fresh, and deleting the bench's store afterwards.
//!
//! The bench claims every due run and counts every commit, so it only runs on a store it
//! creates: a SQLite file that does not exist yet, a PostgreSQL schema that does not exist
//! yet, or a Redis namespace without keys (or `memory://`). That also makes `--cleanup` safe:
//! it can only delete what the bench itself made.

use std::sync::Arc;

use docket_core::memory::MemoryStore;
use docket_core::store::Backend;

use super::floor::{Floor, MemoryFloor};
use super::BenchError;
use docket::connect::BackendUrl;
use docket::error::DocketError;

/// The store under test and its floor.
pub(crate) struct Target {
    /// `sqlite`, `postgres` (`postgres-pooled` behind a transaction pooler), `redis` or
    /// `memory` (or a custom store's name).
    pub backend_name: String,
    /// The store.
    pub backend: Arc<dyn Backend>,
    /// The raw floor on the same server.
    pub floor: Arc<dyn Floor>,
    /// The store's URL (`None` for a custom store): phases that need stores of their own
    /// open them beside it ([`lane_url`]).
    pub url: Option<String>,
}

/// The error for a backend compiled out of this build.
#[cfg_attr(
    all(feature = "sqlite", feature = "postgres", feature = "redis"),
    allow(dead_code)
)]
fn compiled_out(feature: &'static str) -> BenchError {
    BenchError::Docket(DocketError::BackendFeatureDisabled {
        scheme: feature.to_owned(),
        feature,
    })
}

/// Checks that the store named by `url` does not exist yet, then opens it and its floor.
///
/// # Errors
/// [`BenchError::NotFresh`] for an existing store; connection and floor errors.
pub(crate) async fn open(url: &str) -> Result<Target, BenchError> {
    let target = match BackendUrl::parse(url)? {
        BackendUrl::Memory => Ok(Target {
            backend_name: "memory".into(),
            backend: Arc::new(MemoryStore::new()),
            floor: Arc::new(MemoryFloor::default()),
            url: None,
        }),
        BackendUrl::Sqlite(url) => sqlite(&url).await,
        BackendUrl::Postgres(url) => postgres(&url).await,
        BackendUrl::Redis(url) => redis(&url).await,
    }?;
    Ok(Target {
        url: target.backend_name.ne("memory").then(|| url.to_owned()),
        ..target
    })
}

/// The URL of a fresh store beside the one `url` names, for a phase that needs stores of its
/// own (the wakeup lanes): on the same server, the SQLite file, PostgreSQL schema or Redis
/// namespace named with `-lane<n>` appended (`_lane<n>` for a schema). `None` when the store
/// has no such sibling (`memory://`) or the rewritten URL does not name exactly that store.
///
/// # Errors
/// `url` does not parse.
pub(crate) fn lane_url(url: &str, lane: usize) -> Result<Option<String>, BenchError> {
    Ok(match BackendUrl::parse(url)? {
        BackendUrl::Memory => None,
        BackendUrl::Sqlite(url) => sqlite_lane(&url, lane),
        BackendUrl::Postgres(url) => postgres_lane(&url, lane),
        BackendUrl::Redis(url) => redis_lane(&url, lane),
    })
}

/// `url` with the query parameter `key` set to `value` (replacing any it had).
#[cfg_attr(not(any(feature = "postgres", feature = "redis")), allow(dead_code))]
fn with_param(url: &str, key: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(key))
        .collect();
    let set = format!("{key}={value}");
    params.push(&set);
    format!("{base}?{}", params.join("&"))
}

#[cfg(feature = "sqlite")]
fn sqlite_lane(url: &str, lane: usize) -> Option<String> {
    let path = docket_sqlite::parse_url(url).ok()?.path;
    let text = path.to_str()?;
    let lane_path = format!("{text}-lane{lane}");
    let lane_url = url.replacen(text, &lane_path, 1);
    let parsed = docket_sqlite::parse_url(&lane_url).ok()?;
    (parsed.path == std::path::Path::new(&lane_path)).then_some(lane_url)
}

#[cfg(not(feature = "sqlite"))]
fn sqlite_lane(_url: &str, _lane: usize) -> Option<String> {
    None
}

#[cfg(feature = "postgres")]
fn postgres_lane(url: &str, lane: usize) -> Option<String> {
    let schema = format!(
        "{}_lane{lane}",
        docket_postgres::driver_options(url).ok()?.1.schema
    );
    let lane_url = with_param(url, "schema", &schema);
    let parsed = docket_postgres::driver_options(&lane_url).ok()?.1;
    (parsed.schema == schema).then_some(lane_url)
}

#[cfg(not(feature = "postgres"))]
fn postgres_lane(_url: &str, _lane: usize) -> Option<String> {
    None
}

#[cfg(feature = "redis")]
fn redis_lane(url: &str, lane: usize) -> Option<String> {
    let namespace = format!(
        "{}-lane{lane}",
        docket_redis::parse_url(url).ok()?.namespace
    );
    let lane_url = with_param(url, docket_redis::NAMESPACE_PARAM, &namespace);
    let parsed = docket_redis::parse_url(&lane_url).ok()?;
    (parsed.namespace == namespace).then_some(lane_url)
}

#[cfg(not(feature = "redis"))]
fn redis_lane(_url: &str, _lane: usize) -> Option<String> {
    None
}

/// Deletes the store named by `url` with everything in it: the SQLite file (and its WAL and
/// shared-memory files), the PostgreSQL schema, or the Redis namespace's keys. Returns what
/// was deleted. Only for stores the bench created (see the module docs).
///
/// # Errors
/// The store cannot be reached or the files cannot be removed.
pub async fn purge(url: &str) -> Result<String, BenchError> {
    match BackendUrl::parse(url)? {
        BackendUrl::Memory => Ok("nothing (memory://)".into()),
        BackendUrl::Sqlite(url) => purge_sqlite(&url),
        BackendUrl::Postgres(url) => purge_postgres(&url).await,
        BackendUrl::Redis(url) => purge_redis(&url).await,
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite(url: &str) -> Result<Target, BenchError> {
    let parsed = docket_sqlite::parse_url(url)?;
    if parsed.path.exists() {
        return Err(BenchError::NotFresh(format!(
            "the SQLite file {} already exists; name a new file",
            parsed.path.display()
        )));
    }
    let store = docket_sqlite::SqliteStore::connect(url).await?;
    let floor = super::floor::SqliteFloor::open(&store).await?;
    Ok(Target {
        backend_name: "sqlite".into(),
        backend: Arc::new(store),
        floor: Arc::new(floor),
        url: None,
    })
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_url: &str) -> Result<Target, BenchError> {
    Err(compiled_out("sqlite"))
}

#[cfg(feature = "sqlite")]
fn purge_sqlite(url: &str) -> Result<String, BenchError> {
    let path = docket_sqlite::parse_url(url)?.path;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(BenchError::Io {
                    what: format!("removing {}", std::path::Path::new(&file).display()),
                    source,
                })
            }
        }
    }
    Ok(format!("the SQLite file {}", path.display()))
}

#[cfg(not(feature = "sqlite"))]
fn purge_sqlite(_url: &str) -> Result<String, BenchError> {
    Err(compiled_out("sqlite"))
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str) -> Result<Target, BenchError> {
    use sqlx::Connection as _;

    // The store's own driver options, so a URL through a transaction pooler works too; the
    // schema name is a validated identifier, so one simple query checks it.
    let (connect, options) = docket_postgres::driver_options(url)?;
    let mut conn = sqlx::PgConnection::connect_with(&connect)
        .await
        .map_err(|e| BenchError::Setup(format!("cannot reach PostgreSQL: {e}")))?;
    let exists: bool = sqlx::raw_sql(&format!(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '{}')",
        options.schema
    ))
    .fetch_one(&mut conn)
    .await
    .and_then(|row| sqlx::Row::try_get(&row, 0))
    .map_err(|e| BenchError::Setup(format!("checking the schema: {e}")))?;
    let _ = conn.close().await;
    if exists {
        return Err(BenchError::NotFresh(format!(
            "the PostgreSQL schema {} already exists; name a new one with ?schema=",
            options.schema
        )));
    }
    let store = docket_postgres::PostgresStore::connect(url).await?;
    let floor = super::floor::PostgresFloor::connect(url).await?;
    Ok(Target {
        // Its own name behind a transaction pooler, so its figures never mix with the direct
        // ones in a JSON-lines history.
        backend_name: if options.transaction_pooled() {
            "postgres-pooled".into()
        } else {
            "postgres".into()
        },
        backend: Arc::new(store),
        floor: Arc::new(floor),
        url: None,
    })
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_url: &str) -> Result<Target, BenchError> {
    Err(compiled_out("postgres"))
}

#[cfg(feature = "postgres")]
async fn purge_postgres(url: &str) -> Result<String, BenchError> {
    let schema = docket_postgres::PostgresStore::drop_schema(url).await?;
    Ok(format!("the PostgreSQL schema {schema}"))
}

#[cfg(not(feature = "postgres"))]
async fn purge_postgres(_url: &str) -> Result<String, BenchError> {
    Err(compiled_out("postgres"))
}

#[cfg(feature = "redis")]
async fn redis(url: &str) -> Result<Target, BenchError> {
    let store = docket::connect::connect_redis(url).await?;
    let mut conn = redis_connection(url).await?;
    let taken = namespace_has_keys(&mut conn, &store).await?;
    if taken {
        return Err(BenchError::NotFresh(format!(
            "the Redis namespace {} already has keys; name a new one with ?namespace=",
            store.namespace()
        )));
    }
    let floor = super::floor::RedisFloor::connect(url, store.keys().prefix()).await?;
    Ok(Target {
        backend_name: "redis".into(),
        backend: Arc::new(store),
        floor: Arc::new(floor),
        url: None,
    })
}

/// Whether any key matches the namespace's pattern: a full `SCAN` (one page alone may be
/// empty on a big keyspace even when keys match).
#[cfg(feature = "redis")]
async fn namespace_has_keys(
    conn: &mut redis::aio::MultiplexedConnection,
    store: &docket_redis::RedisStore,
) -> Result<bool, BenchError> {
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(store.keys().scan_pattern())
            .arg("COUNT")
            .arg(10_000)
            .query_async(conn)
            .await
            .map_err(|e| BenchError::Setup(format!("checking the namespace: {e}")))?;
        if !keys.is_empty() {
            return Ok(true);
        }
        if next == 0 {
            return Ok(false);
        }
        cursor = next;
    }
}

#[cfg(feature = "redis")]
async fn redis_connection(url: &str) -> Result<redis::aio::MultiplexedConnection, BenchError> {
    let config = docket_redis::parse_url(url).map_err(|e| BenchError::Setup(e.to_string()))?;
    let client = redis::Client::open(config.url.as_str())
        .map_err(|e| BenchError::Setup(format!("Redis URL: {e}")))?;
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| BenchError::Setup(format!("cannot reach Redis: {e}")))
}

#[cfg(not(feature = "redis"))]
async fn redis(_url: &str) -> Result<Target, BenchError> {
    Err(compiled_out("redis"))
}

#[cfg(feature = "redis")]
async fn purge_redis(url: &str) -> Result<String, BenchError> {
    let store = docket::connect::connect_redis(url).await?;
    let deleted = store.purge_namespace().await?;
    Ok(format!(
        "the Redis namespace {} ({deleted} keys)",
        store.namespace()
    ))
}

#[cfg(not(feature = "redis"))]
async fn purge_redis(_url: &str) -> Result<String, BenchError> {
    Err(compiled_out("redis"))
}

#[cfg(test)]
mod tests {
    use super::lane_url;

    fn lane(url: &str, n: usize) -> Option<String> {
        lane_url(url, n).expect("parses")
    }

    #[test]
    fn a_lane_is_the_same_store_name_with_a_lane_suffix_on_the_same_server() {
        assert_eq!(lane("memory://", 1), None);
        #[cfg(feature = "sqlite")]
        assert_eq!(
            lane("sqlite:///tmp/b/bench.db?busy_timeout_ms=900", 3).as_deref(),
            Some("sqlite:///tmp/b/bench.db-lane3?busy_timeout_ms=900")
        );
        #[cfg(feature = "postgres")]
        {
            assert_eq!(
                lane("postgres://u@h:5432/test?schema=bench_a", 2).as_deref(),
                Some("postgres://u@h:5432/test?schema=bench_a_lane2")
            );
            // Without a schema, the lane is named after the default one.
            let default = docket_postgres::driver_options("postgres://u@h/test")
                .expect("options")
                .1
                .schema;
            assert_eq!(
                lane("postgres://u@h/test", 1),
                Some(format!("postgres://u@h/test?schema={default}_lane1"))
            );
        }
        #[cfg(feature = "redis")]
        {
            assert_eq!(
                lane(
                    "redis://127.0.0.1:6379/0?namespace=b1&connect_timeout_ms=900",
                    8
                )
                .as_deref(),
                Some("redis://127.0.0.1:6379/0?connect_timeout_ms=900&namespace=b1-lane8")
            );
            assert_eq!(
                lane("redis://127.0.0.1:6379", 1).as_deref(),
                Some("redis://127.0.0.1:6379?namespace=docket-lane1")
            );
        }
    }
}
