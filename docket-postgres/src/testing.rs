//! Test support (feature `testing`): the conformance-suite [`Harness`] for PostgreSQL and SQL
//! helpers that tests need (raw snapshots, corruption, the operational row with its token).
//!
//! Each harness case gets its own schema `docket_t_<uuid>`, dropped (CASCADE) when its
//! [`SchemaGuard`] is dropped. The server is found through `DOCKET_TEST_POSTGRES_URL`
//! (default [`DEFAULT_TEST_URL`]); an unreachable server fails the case, it never skips it.

use std::sync::Arc;

use async_trait::async_trait;
use docket_conformance::{Capabilities, Harness};
use docket_core::model::{GraphRef, OperationalState, OwnerScope, RunId, Scope};
use docket_core::store::{Backend, StoreError};
use sqlx::postgres::PgPool;
use sqlx::{Connection, Row};

use crate::codec::decode_run_row;
use crate::error;
use crate::options::PostgresOptions;
use crate::store::{scope_binds, PostgresStore};

/// The test server used when `DOCKET_TEST_POSTGRES_URL` is unset.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The test server URL: `DOCKET_TEST_POSTGRES_URL` or [`DEFAULT_TEST_URL`].
#[must_use]
pub fn test_url() -> String {
    std::env::var("DOCKET_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_TEST_URL.to_owned())
}

/// A fresh schema name for one test: `docket_t_<uuid without hyphens>`.
#[must_use]
pub fn fresh_schema_name() -> String {
    format!("docket_t_{}", uuid::Uuid::new_v4().simple())
}

/// The conformance harness: every case gets a store in its own fresh schema.
#[derive(Clone, Debug)]
pub struct PostgresHarness {
    url: String,
    pool_size: u32,
    poll_only: bool,
}

impl Default for PostgresHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl PostgresHarness {
    /// A harness for [`test_url`] with a pool of 10 connections per case.
    #[must_use]
    pub fn new() -> Self {
        Self {
            url: test_url(),
            pool_size: 10,
            poll_only: false,
        }
    }

    /// The same harness, opening stores in poll-only (transaction pooler) mode.
    #[must_use]
    pub fn poll_only(mut self) -> Self {
        self.poll_only = true;
        self
    }

    /// The same harness with another pool size per case.
    #[must_use]
    pub fn pool_size(mut self, size: u32) -> Self {
        self.pool_size = size;
        self
    }

    /// The same harness against another server URL.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// A store in a fresh schema, with the guard that drops the schema.
    ///
    /// # Errors
    /// Any failure to reach the server or to migrate the schema.
    pub async fn open_store(&self) -> Result<(PostgresStore, SchemaGuard), StoreError> {
        let schema = fresh_schema_name();
        // The guard exists before the schema does, so a failed migration is cleaned up too.
        let guard_url = self.url.clone();
        let store = PostgresStore::connect(
            &self.url,
            PostgresOptions {
                schema: schema.clone(),
                pool_size: self.pool_size,
                poll_only: self.poll_only,
                ..PostgresOptions::default()
            },
        )
        .await;
        let store = match store {
            Ok(store) => store,
            Err(e) => {
                drop(SchemaGuard {
                    url: guard_url,
                    schema,
                    store: None,
                });
                return Err(e);
            }
        };
        Ok((
            store.clone(),
            SchemaGuard {
                url: guard_url,
                schema,
                store: Some(store),
            },
        ))
    }
}

/// Drops its schema (CASCADE) when dropped. Dropping blocks briefly on a helper thread with
/// its own connection, because `Drop` cannot await.
pub struct SchemaGuard {
    url: String,
    schema: String,
    store: Option<PostgresStore>,
}

impl std::fmt::Debug for SchemaGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaGuard")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl SchemaGuard {
    /// The schema this guard owns.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.schema
    }

    fn store(&self) -> Result<&PostgresStore, StoreError> {
        self.store
            .as_ref()
            .ok_or_else(|| StoreError::invalid_argument("the guard holds no store"))
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let url = self.url.clone();
        let sql = format!(
            "SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS {} CASCADE",
            self.schema
        );
        let dropper = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                    if let Err(error) = sqlx::raw_sql(&sql).execute(&mut conn).await {
                        tracing::warn!(%error, "could not drop a test schema");
                    }
                    let _ = conn.close().await;
                }
            });
        });
        let _ = dropper.join();
    }
}

#[async_trait]
impl Harness for PostgresHarness {
    type Guard = SchemaGuard;

    async fn open(&self) -> Result<(Arc<dyn Backend>, SchemaGuard), StoreError> {
        let (store, guard) = self.open_store().await?;
        Ok((Arc::new(store), guard))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: !self.poll_only,
        }
    }

    async fn raw_snapshot(&self, guard: &SchemaGuard) -> Result<String, StoreError> {
        raw_snapshot(guard.store()?).await
    }

    async fn corrupt_run(&self, guard: &SchemaGuard, run_id: &RunId) -> Result<(), StoreError> {
        corrupt_run(guard.store()?, run_id).await
    }

    async fn corrupt_event(
        &self,
        guard: &SchemaGuard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        corrupt_event(guard.store()?, run_id, seq).await
    }

    async fn corrupt_graph(
        &self,
        guard: &SchemaGuard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        corrupt_graph(guard.store()?, owner, graph_ref).await
    }
}

/// The store's pool, for tests that need raw SQL.
#[must_use]
pub fn pool(store: &PostgresStore) -> &PgPool {
    &store.inner.pool
}

/// Tables of the store's schema with the key they are dumped in.
const SNAPSHOT_ORDER: &[(&str, &str)] = &[
    ("docket_schema_migrations", "version"),
    ("events", "run_id, seq"),
    ("graph_versions", "scope_key, graph_id, graph_hash"),
    ("runs", "run_id"),
];

/// Every row of every table of the store's schema, one table after another, rows ordered by
/// key (tables Docket does not know are dumped in row-text order), as text.
///
/// # Errors
/// Driver errors.
pub async fn raw_snapshot(store: &PostgresStore) -> Result<String, StoreError> {
    let mut conn = store.conn().await?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
    )
    .bind(store.schema())
    .fetch_all(&mut *conn)
    .await
    .map_err(error::safe)?;
    let mut out = String::new();
    for table in tables {
        let order = SNAPSHOT_ORDER
            .iter()
            .find(|(name, _)| *name == table)
            .map_or("t::text", |(_, key)| key);
        let rows: String = sqlx::query_scalar(&format!(
            "SELECT COALESCE(string_agg(t::text, E'\\n' ORDER BY {order}), '')
             FROM {}.{table} AS t",
            store.schema()
        ))
        .fetch_one(&mut *conn)
        .await
        .map_err(error::safe)?;
        out.push_str(&format!("== {table}\n{rows}\n"));
    }
    Ok(out)
}

/// Overwrites a run's stored document with bytes that are not JSON.
///
/// # Errors
/// Driver errors; `NotFound` when no such run is stored.
pub async fn corrupt_run(store: &PostgresStore, run_id: &RunId) -> Result<(), StoreError> {
    exec_one(
        store,
        &format!(
            "UPDATE {}.runs SET document = '\\xfffe7b2274727563'::bytea WHERE run_id = $1",
            store.schema()
        ),
        run_id.as_str(),
        None,
    )
    .await
}

/// Overwrites a stored event's payload with bytes that are not JSON.
///
/// # Errors
/// Driver errors; `NotFound` when no such event is stored.
pub async fn corrupt_event(
    store: &PostgresStore,
    run_id: &RunId,
    seq: u64,
) -> Result<(), StoreError> {
    let seq = i64::try_from(seq).map_err(|_| StoreError::NotFound)?;
    exec_one(
        store,
        &format!(
            "UPDATE {}.events SET payload = '\\x7b2274727563'::bytea
             WHERE run_id = $1 AND seq = $2",
            store.schema()
        ),
        run_id.as_str(),
        Some(seq),
    )
    .await
}

/// Overwrites the stored bytes of a graph version (they no longer hash to the address).
///
/// # Errors
/// Driver errors; `NotFound` when no such version is stored.
pub async fn corrupt_graph(
    store: &PostgresStore,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    let done = sqlx::query(&format!(
        "UPDATE {}.graph_versions SET graph = '\\x7b7d'::bytea
         WHERE scope_key = $1 AND graph_id = $2 AND graph_hash = $3",
        store.schema()
    ))
    .bind(owner.scope_key())
    .bind(graph_ref.graph_id.as_str())
    .bind(graph_ref.graph_hash.as_str())
    .execute(&mut *conn)
    .await
    .map_err(error::safe)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(StoreError::NotFound)
    }
}

async fn exec_one(
    store: &PostgresStore,
    sql: &str,
    run_id: &str,
    seq: Option<i64>,
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    let mut query = sqlx::query(sql).bind(run_id);
    if let Some(seq) = seq {
        query = query.bind(seq);
    }
    let done = query.execute(&mut *conn).await.map_err(error::safe)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(StoreError::NotFound)
    }
}

/// The whole operational state of a run, claim token included (tests compare it with the
/// result of the shared rules).
///
/// # Errors
/// `NotFound`, `Corrupt`, driver errors.
pub async fn operational_state(
    store: &PostgresStore,
    run_id: &RunId,
) -> Result<OperationalState, StoreError> {
    let stored = store
        .read_run(&Scope::System, run_id)
        .await?
        .ok_or(StoreError::NotFound)?;
    Ok(stored.ops)
}

/// Overwrites a run's operational columns directly (tests use it to build states such as
/// "attempts already at the maximum" without replaying claims). Constraints still apply.
///
/// # Errors
/// Driver errors (a CHECK violation included); `NotFound` when no such run is stored.
pub async fn write_operational_state(
    store: &PostgresStore,
    run_id: &RunId,
    ops: &OperationalState,
) -> Result<(), StoreError> {
    let columns = crate::codec::encode_ops(ops);
    let mut conn = store.conn().await?;
    let done = sqlx::query(&store.sql().write_ops)
        .bind(run_id.as_str())
        .bind(columns.claim_token)
        .bind(columns.claimed_at)
        .bind(columns.wake_at)
        .bind(columns.claim_attempts)
        .bind(columns.claim_abandons)
        .bind(columns.poisoned_at)
        .bind(columns.poison_reason)
        .execute(&mut *conn)
        .await
        .map_err(error::safe)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(StoreError::NotFound)
    }
}

/// Whether a run row exists in the store's schema, whatever its scope (a raw check that
/// needs no decoding).
///
/// # Errors
/// Driver errors.
pub async fn run_row_exists(store: &PostgresStore, run_id: &RunId) -> Result<bool, StoreError> {
    let (system, key) = scope_binds(&Scope::System);
    let mut conn = store.conn().await?;
    let row = sqlx::query(&format!(
        "SELECT count(*) AS n FROM {}.runs WHERE run_id = $1 AND ($2 OR scope_key = $3)",
        store.schema()
    ))
    .bind(run_id.as_str())
    .bind(system)
    .bind(key)
    .fetch_one(&mut *conn)
    .await
    .map_err(error::safe)?;
    let n: i64 = row.try_get("n").map_err(error::safe)?;
    Ok(n == 1)
}

/// Decodes a run row the way every read does (exposed so tests can prove that decoding is
/// what reports corruption).
///
/// # Errors
/// `NotFound`, `Corrupt`, driver errors.
pub async fn decode_stored_run(
    store: &PostgresStore,
    run_id: &RunId,
) -> Result<OperationalState, StoreError> {
    let (system, key) = scope_binds(&Scope::System);
    let mut conn = store.conn().await?;
    let row = sqlx::query(&store.sql().select_run)
        .bind(run_id.as_str())
        .bind(system)
        .bind(key)
        .fetch_optional(&mut *conn)
        .await
        .map_err(error::safe)?
        .ok_or(StoreError::NotFound)?;
    Ok(decode_run_row(&row)?.ops)
}
