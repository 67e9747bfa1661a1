//! Test support (feature `testing`): the conformance-suite [`Harness`](docket_conformance::Harness)
//! for PostgreSQL ([`PostgresHarness`]), SQL helpers that tests need (raw snapshots,
//! corruption, the operational row with its token, bulk fills, judging the claim plan) and a
//! private PgBouncer ([`PgBouncer`]) for tests of transaction-pooler mode.
//!
//! Each harness case gets its own schema `docket_t_<uuid>`, dropped (CASCADE) after its
//! [`SchemaGuard`] is dropped. The server is found through `DOCKET_TEST_POSTGRES_URL`
//! (default [`DEFAULT_TEST_URL`]); an unreachable server fails the case, it never skips it.

mod bulk;
mod harness;
mod pgbouncer;
mod plan;

use docket_core::model::{GraphRef, OperationalState, OwnerScope, RunId, Scope};
use docket_core::store::StoreError;
use sqlx::postgres::PgPool;
use sqlx::Row;

use crate::codec::decode_run_row;
use crate::error;
use crate::store::{scope_binds, PostgresStore};

pub use bulk::{bulk_insert_runs, BulkRuns};
pub use harness::{fresh_schema_name, test_url, PostgresHarness, SchemaGuard, DEFAULT_TEST_URL};
pub use pgbouncer::PgBouncer;
pub use plan::{claim_plan_problems, CLAIM_INDEXES};

/// The store's pool, for tests that need raw SQL.
#[must_use]
pub fn pool(store: &PostgresStore) -> &PgPool {
    store.inner.pool.pool()
}

/// Tables of the store's schema with the key they are dumped in.
const SNAPSHOT_ORDER: &[(&str, &str)] = &[
    ("claim_cursor", "singleton"),
    ("docket_schema_migrations", "version"),
    ("events", "run_id, seq"),
    ("graph_versions", "scope_key, graph_id, graph_hash"),
    ("ops_operations", "owner_id, op_id"),
    ("ops_owners", "owner_id"),
    ("run_listing", "run_id"),
    ("runs", "run_id"),
    ("tenant_shares", "tenant_id"),
];

/// The operation registry's tables, in dump order.
const OPS_TABLES: &[&str] = &["ops_owners", "ops_operations"];

/// Every row of every table of the store's schema, one table after another, rows ordered by
/// key (tables Docket does not know are dumped in row-text order), as text.
///
/// # Errors
/// Driver errors.
pub async fn raw_snapshot(store: &PostgresStore) -> Result<String, StoreError> {
    let mut conn = store.conn().await?;
    let tables: Vec<String> = store
        .q("SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY tablename")
        .bind(store.schema())
        .fetch_all(&mut conn)
        .await
        .map_err(error::safe)?
        .iter()
        .map(|row| row.try_get::<String, _>(0))
        .collect::<Result<Vec<_>, _>>()
        .map_err(error::safe)?;
    dump_tables(store, &tables).await
}

/// Every row of the operation registry's tables of the store's schema (owners, then
/// operations, rows ordered by key), as text.
///
/// # Errors
/// Driver errors.
pub async fn raw_ops_snapshot(store: &PostgresStore) -> Result<String, StoreError> {
    let tables: Vec<String> = OPS_TABLES.iter().map(|t| (*t).to_owned()).collect();
    dump_tables(store, &tables).await
}

/// The rows of `tables` of the store's schema, one table after another.
async fn dump_tables(store: &PostgresStore, tables: &[String]) -> Result<String, StoreError> {
    let mut conn = store.conn().await?;
    let mut out = String::new();
    for table in tables {
        let order = SNAPSHOT_ORDER
            .iter()
            .find(|(name, _)| name == table)
            .map_or("t::text", |(_, key)| key);
        let rows: String = store
            .q(&format!(
                "SELECT COALESCE(string_agg(t::text, E'\\n' ORDER BY {order}), '')
                 FROM {}.{table} AS t",
                store.schema()
            ))
            .fetch_one(&mut conn)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(error::safe)?;
        out.push_str(&format!("== {table}\n{rows}\n"));
    }
    Ok(out)
}

/// Runs `claim_due` under `policy` inside a transaction that starts with
/// `synchronous_commit = on` and is rolled back afterwards (nothing stays claimed), and
/// returns how many runs the claim selected and the `synchronous_commit` in force after it:
/// the setting the claim's own commit would have used. A claim commits without waiting for
/// its WAL flush (`off`); the setting is transaction-local, so nothing else of the session
/// changes.
///
/// # Errors
/// Driver errors.
pub async fn claim_commit_setting(
    store: &PostgresStore,
    policy: &docket_core::store::ClaimRequest,
) -> Result<(usize, String), StoreError> {
    let mut conn = store.conn().await?;
    let mut tx = store.begin(&mut conn).await?;
    sqlx::raw_sql("SET LOCAL synchronous_commit = on")
        .execute(&mut *tx)
        .await
        .map_err(error::safe)?;
    let claimed = store
        .claim_query(store.claim_sql(policy), policy)
        .fetch_all(&mut tx)
        .await
        .map_err(error::safe)?
        .len();
    let setting: String = store
        .q("SELECT current_setting('synchronous_commit')")
        .fetch_one(&mut tx)
        .await
        .and_then(|row| row.try_get(0))
        .map_err(error::safe)?;
    tx.rollback().await.map_err(error::safe)?;
    Ok((claimed, setting))
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
    let done = store
        .q(&format!(
            "UPDATE {}.graph_versions SET graph = '\\x7b7d'::bytea
             WHERE scope_key = $1 AND graph_id = $2 AND graph_hash = $3",
            store.schema()
        ))
        .bind(owner.scope_key())
        .bind(graph_ref.graph_id.as_str())
        .bind(graph_ref.graph_hash.as_str())
        .execute(&mut conn)
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
    let mut query = store.q(sql).bind(run_id);
    if let Some(seq) = seq {
        query = query.bind(seq);
    }
    let done = query.execute(&mut conn).await.map_err(error::safe)?;
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
    let done = store
        .q(&store.sql().write_ops)
        .bind(run_id.as_str())
        .bind(columns.claim_token)
        .bind(columns.claimed_at)
        .bind(columns.wake_at)
        .bind(columns.claim_attempts)
        .bind(columns.claim_abandons)
        .bind(columns.poisoned_at)
        .bind(columns.poison_reason)
        .bind(columns.admitted_at)
        .execute(&mut conn)
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
    let row = store
        .q(&format!(
            "SELECT count(*) AS n FROM {}.runs WHERE run_id = $1 AND ($2 OR scope_key = $3)",
            store.schema()
        ))
        .bind(run_id.as_str())
        .bind(system)
        .bind(key)
        .fetch_one(&mut conn)
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
    let row = store
        .q(&store.sql().select_run)
        .bind(run_id.as_str())
        .bind(system)
        .bind(key)
        .fetch_optional(&mut conn)
        .await
        .map_err(error::safe)?
        .ok_or(StoreError::NotFound)?;
    Ok(decode_run_row(&row)?.ops)
}
