//! Versioned schema migrations with our own bookkeeping table inside the Docket schema.
//!
//! Everything Docket creates lives in its schema (`{schema}.docket_schema_migrations`
//! included), so an application's own migration table (e.g. sqlx's `public._sqlx_migrations`)
//! is never read or written. Migrations run in one transaction under a transaction-scoped
//! advisory lock, so concurrent starters serialize and a failed migration leaves nothing
//! behind. Running them again is a no-op; a schema recorded at a newer version than this
//! build knows is refused rather than used.

use docket_core::store::{Message, StoreError};
use sqlx::{Connection, Executor, PgConnection};

use crate::error;

/// One migration: its version, a description and its SQL (`{s}` stands for the schema).
struct Migration {
    version: i32,
    description: &'static str,
    sql: &'static str,
}

/// The newest schema version this build knows.
pub const LATEST_VERSION: i32 = 1;

const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "runs, events, graph versions, claim indexes",
    sql: include_str!("sql/v1.sql"),
}];

/// Applies every pending migration to `schema` (already validated) on `conn`.
///
/// # Errors
/// `Unavailable` (permanent) when the schema is newer than [`LATEST_VERSION`]; driver errors.
pub(crate) async fn migrate(conn: &mut PgConnection, schema: &str) -> Result<(), StoreError> {
    let mut tx = conn.begin().await.map_err(error::safe)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('docket:migrate:' || $1, 0))")
        .bind(schema)
        .execute(&mut *tx)
        .await
        .map_err(error::safe)?;
    let bootstrap = format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.docket_schema_migrations (
             version integer PRIMARY KEY,
             description text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    );
    (&mut *tx)
        .execute(bootstrap.as_str())
        .await
        .map_err(error::safe)?;
    let current: i32 = sqlx::query_scalar(&format!(
        "SELECT COALESCE(max(version), 0) FROM {schema}.docket_schema_migrations"
    ))
    .fetch_one(&mut *tx)
    .await
    .map_err(error::safe)?;
    if current > LATEST_VERSION {
        return Err(StoreError::permanent(Message(format!(
            "schema {schema} is at version {current}, newer than this build's {LATEST_VERSION}; \
             refusing to use it"
        ))));
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
        let sql = migration.sql.replace("{s}", schema);
        (&mut *tx)
            .execute(sql.as_str())
            .await
            .map_err(error::safe)?;
        sqlx::query(&format!(
            "INSERT INTO {schema}.docket_schema_migrations (version, description) VALUES ($1, $2)"
        ))
        .bind(migration.version)
        .bind(migration.description)
        .execute(&mut *tx)
        .await
        .map_err(error::safe)?;
    }
    tx.commit().await.map_err(error::sent)
}

/// Checks, without changing anything, that `schema` is at exactly [`LATEST_VERSION`].
///
/// # Errors
/// `Unavailable` (permanent) when the schema is missing, older or newer; driver errors.
pub(crate) async fn check_version(conn: &mut PgConnection, schema: &str) -> Result<(), StoreError> {
    let table = format!("{schema}.docket_schema_migrations");
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(&table)
        .fetch_one(&mut *conn)
        .await
        .map_err(error::safe)?;
    let current: i32 = if exists {
        sqlx::query_scalar(&format!("SELECT COALESCE(max(version), 0) FROM {table}"))
            .fetch_one(&mut *conn)
            .await
            .map_err(error::safe)?
    } else {
        0
    };
    if current == LATEST_VERSION {
        Ok(())
    } else {
        Err(StoreError::permanent(Message(format!(
            "schema {schema} is at version {current}, this build needs {LATEST_VERSION}; \
             run the migrations"
        ))))
    }
}
