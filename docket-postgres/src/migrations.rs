//! Versioned schema migrations with our own bookkeeping table inside the Docket schema.
//!
//! Everything Docket creates lives in its schema (`{schema}.docket_schema_migrations`
//! included), so an application's own migration table (e.g. sqlx's `public._sqlx_migrations`)
//! is never read or written. Migrations run as one script (one round trip, one transaction)
//! under a transaction-scoped advisory lock, so concurrent starters serialize and a failed
//! migration leaves nothing behind. Running them again is a no-op; a schema recorded at a
//! newer version than this build knows is refused rather than used.

use docket_core::store::{Message, StoreError};
use sqlx::{Executor, PgConnection, Row};

use crate::error::{self, UNIQUE_VIOLATION};

/// One migration: its version, a description and its SQL (`{s}` stands for the schema).
struct Migration {
    version: i32,
    description: &'static str,
    sql: &'static str,
}

/// The newest schema version this build knows.
pub const LATEST_VERSION: i32 = 13;

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "runs, events, graph versions, claim indexes",
        sql: include_str!("sql/v1.sql"),
    },
    Migration {
        version: 2,
        description: "docket_prepare, the statement cache of transaction-pooler mode",
        sql: include_str!("sql/v2.sql"),
    },
    Migration {
        version: 3,
        description: "the operation registry: owners, operations and their write functions",
        sql: include_str!("sql/v3.sql"),
    },
    Migration {
        version: 4,
        description: "tenant-fair claiming: admission marker, tenant shares, claim cursor",
        sql: include_str!("sql/v4.sql"),
    },
    Migration {
        version: 5,
        description: "tenant-fair claims that lock the cursor only to write it",
        sql: include_str!("sql/v5.sql"),
    },
    Migration {
        version: 6,
        description: "tenant-fair claims picked one run at a time with index probes",
        sql: include_str!("sql/v6.sql"),
    },
    Migration {
        version: 7,
        description: "the member-naming event conflict of one-statement commit batches",
        sql: include_str!("sql/v7.sql"),
    },
    Migration {
        version: 8,
        description: "tenant-fair claims that step over owners with nothing due",
        sql: include_str!("sql/v8.sql"),
    },
    Migration {
        version: 9,
        description: "the row invariants of runs as one constraint calling one function",
        sql: include_str!("sql/v9.sql"),
    },
    Migration {
        version: 10,
        description: "commits that keep their claim touch no index (HOT updates)",
        sql: include_str!("sql/v10.sql"),
    },
    Migration {
        version: 11,
        description: "the tenant-fair claim plans no sequential scan, whatever the table's size",
        sql: include_str!("sql/v11.sql"),
    },
    Migration {
        version: 12,
        description: "events without a foreign key: the statements that append them hold their run",
        sql: include_str!("sql/v12.sql"),
    },
    Migration {
        version: 13,
        description: "run listing and graph references in a table written once per run",
        sql: include_str!("sql/v13.sql"),
    },
];

/// SQLSTATE raised by the migration script when the schema is newer than this build.
const SCHEMA_TOO_NEW: &str = "DK002";

/// Applies every pending migration to `schema` (already validated) on `conn`.
///
/// An up-to-date schema costs two reads and takes no lock. Otherwise everything — the
/// advisory lock, the bootstrap, the version check and every pending migration — is one
/// script sent in one round trip, which PostgreSQL runs as one transaction: concurrent
/// starters serialize on the lock, and a failure anywhere leaves nothing behind.
///
/// A starter that waited for the lock has been seen to fail on the schema the one before it
/// created (`unique_violation` on `pg_namespace`, four starters through PgBouncer under
/// load): `CREATE SCHEMA IF NOT EXISTS` looks the name up in the session's catalog caches,
/// which a wait for an advisory lock does not refresh. Nothing of its script was applied, so
/// it starts over once, in a new transaction, which sees the schema.
///
/// # Errors
/// `Unavailable` (permanent) when the schema is newer than [`LATEST_VERSION`]; driver errors.
pub(crate) async fn migrate(conn: &mut PgConnection, schema: &str) -> Result<(), StoreError> {
    let mut raced = false;
    loop {
        let current = current_version(conn, schema).await?;
        if current == LATEST_VERSION {
            return Ok(());
        }
        if current > LATEST_VERSION {
            return Err(too_new(schema, current));
        }
        let script = migration_script(schema);
        // A plain string without arguments goes out as one simple query.
        match (&mut *conn).execute(script.as_str()).await {
            Ok(_) => return Ok(()),
            Err(e) if error::sqlstate(&e).as_deref() == Some(SCHEMA_TOO_NEW) => {
                return Err(StoreError::permanent(error::DriverError::from_sqlx(&e)))
            }
            Err(e) if !raced && error::sqlstate(&e).as_deref() == Some(UNIQUE_VIOLATION) => {
                raced = true;
            }
            Err(e) => return Err(error::sent(e)),
        }
    }
}

fn too_new(schema: &str, current: i32) -> StoreError {
    StoreError::permanent(Message(format!(
        "schema {schema} is at version {current}, newer than this build's {LATEST_VERSION}; \
         refusing to use it"
    )))
}

/// The whole migration as one multi-statement script (a simple query: one implicit
/// transaction). The version check runs after the lock, so two starters never both apply a
/// migration; each pending migration is `EXECUTE`d from a dollar-quoted literal.
fn migration_script(schema: &str) -> String {
    let mut pending = String::new();
    for migration in MIGRATIONS {
        let tag = format!("$docket_v{}$", migration.version);
        pending.push_str(&format!(
            "    IF current < {version} THEN
        EXECUTE {tag}{sql}{tag};
        INSERT INTO {schema}.docket_schema_migrations (version, description)
            VALUES ({version}, '{description}');
    END IF;
",
            version = migration.version,
            sql = migration.sql.replace("{s}", schema),
            description = migration.description.replace('\'', "''"),
        ));
    }
    format!(
        "SELECT pg_advisory_xact_lock(hashtextextended('docket:migrate:{schema}', 0));
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.docket_schema_migrations (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
DO $docket_migrate$
DECLARE
    current integer;
BEGIN
    SELECT COALESCE(max(version), 0) INTO current FROM {schema}.docket_schema_migrations;
    IF current > {LATEST_VERSION} THEN
        RAISE EXCEPTION 'schema {schema} is at version %, newer than this build''s {LATEST_VERSION}; refusing to use it', current
            USING ERRCODE = '{SCHEMA_TOO_NEW}';
    END IF;
{pending}END
$docket_migrate$;"
    )
}

/// The schema's recorded version, 0 when it has no bookkeeping table yet.
///
/// Simple queries without parameters (the schema name is a validated identifier): one round
/// trip each, and safe behind a transaction pooler.
async fn current_version(conn: &mut PgConnection, schema: &str) -> Result<i32, StoreError> {
    let table = format!("{schema}.docket_schema_migrations");
    let exists: bool = conn
        .fetch_one(sqlx::raw_sql(&format!(
            "SELECT to_regclass('{table}') IS NOT NULL"
        )))
        .await
        .and_then(|row| row.try_get(0))
        .map_err(error::safe)?;
    if !exists {
        return Ok(0);
    }
    conn.fetch_one(sqlx::raw_sql(&format!(
        "SELECT COALESCE(max(version), 0) FROM {table}"
    )))
    .await
    .and_then(|row| row.try_get(0))
    .map_err(error::safe)
}

/// Checks, without changing anything, that `schema` is at exactly [`LATEST_VERSION`].
///
/// # Errors
/// `Unavailable` (permanent) when the schema is missing, older or newer; driver errors.
pub(crate) async fn check_version(conn: &mut PgConnection, schema: &str) -> Result<(), StoreError> {
    let current = current_version(conn, schema).await?;
    if current == LATEST_VERSION {
        Ok(())
    } else {
        Err(StoreError::permanent(Message(format!(
            "schema {schema} is at version {current}, this build needs {LATEST_VERSION}; \
             run the migrations"
        ))))
    }
}
