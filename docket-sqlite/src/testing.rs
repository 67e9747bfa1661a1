//! Test support (cargo feature `testing`): the conformance [`Harness`] for SQLite, a
//! deterministic dump of every stored byte, and helpers that corrupt stored rows with plain SQL.
//!
//! Behind a feature so that production builds do not pull in `tempfile` and the conformance
//! crate; this crate's own integration tests enable it through a self dev-dependency.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags};
use tempfile::TempDir;

use docket_conformance::{Capabilities, Harness};
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::store::{Backend, StoreError};

use crate::error::{permanent, SqlResult};
use crate::options::SqliteOptions;
use crate::store::SqliteStore;

/// Name of the database file inside each harness directory.
pub const DB_FILE: &str = "docket.db";

/// Opens a fresh store in its own temporary directory for every case.
#[derive(Clone, Debug, Default)]
pub struct SqliteHarness {
    /// Options of every store the harness opens.
    pub options: SqliteOptions,
}

/// Owns a case's temporary directory; dropping it deletes the database.
#[derive(Debug)]
pub struct SqliteGuard {
    path: PathBuf,
    _dir: TempDir,
}

impl SqliteGuard {
    /// A fresh temporary directory holding no database yet.
    ///
    /// # Errors
    /// `Unavailable` when the directory cannot be created.
    pub fn new() -> Result<Self, StoreError> {
        let dir =
            tempfile::tempdir().map_err(|e| permanent(format!("cannot create a temp dir: {e}")))?;
        Ok(Self {
            path: dir.path().join(DB_FILE),
            _dir: dir,
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl SqliteHarness {
    /// A harness opening stores with `options`.
    #[must_use]
    pub fn new(options: SqliteOptions) -> Self {
        Self { options }
    }

    /// A fresh store plus its guard, typed (the trait returns `Arc<dyn Backend>`).
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub async fn open_store(&self) -> Result<(SqliteStore, SqliteGuard), StoreError> {
        let guard = SqliteGuard::new()?;
        let store = SqliteStore::open(self.options.clone().with_path(guard.path())).await?;
        Ok((store, guard))
    }
}

#[async_trait]
impl Harness for SqliteHarness {
    type Guard = SqliteGuard;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let (store, guard) = self.open_store().await?;
        Ok((Arc::new(store), guard))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: true,
        }
    }

    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        let path = guard.path.clone();
        blocking(move || raw_tables_snapshot(&path, Some("docket_ops_"))).await
    }

    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        let store = SqliteStore::open(self.options.clone().with_path(guard.path())).await?;
        Ok(Arc::new(store))
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        let path = guard.path.clone();
        blocking(move || raw_snapshot(&path)).await
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        let (path, run_id) = (guard.path.clone(), run_id.clone());
        blocking(move || corrupt_run(&path, &run_id)).await
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        let (path, run_id) = (guard.path.clone(), run_id.clone());
        blocking(move || corrupt_event(&path, &run_id, seq)).await
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        let (path, owner, graph_ref) = (guard.path.clone(), owner.clone(), graph_ref.clone());
        blocking(move || corrupt_graph(&path, &owner, &graph_ref)).await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| permanent(format!("test helper task failed: {e}")))?
}

/// A side connection to an existing file, as an operator's `sqlite3` shell would open it.
fn side_connection(path: &Path) -> Result<Connection, StoreError> {
    open_side(path, OpenFlags::empty())
}

fn open_side(path: &Path, extra: OpenFlags) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | extra,
    )
    .sql()?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .sql()?;
    Ok(conn)
}

fn render(value: &Value, out: &mut String) {
    let _ = match value {
        Value::Null => write!(out, "NULL"),
        Value::Integer(n) => write!(out, "{n}"),
        Value::Real(x) => write!(out, "{x:?}"),
        Value::Text(s) => write!(out, "{s:?}"),
        Value::Blob(bytes) => {
            out.push_str("x'");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
            write!(out, "'")
        }
    };
}

/// Every row of every table of the database at `path`, plus its schema version, rendered
/// deterministically (tables by name, rows ordered by every column).
///
/// # Errors
/// Infrastructure errors.
pub fn raw_snapshot(path: &Path) -> Result<String, StoreError> {
    raw_tables_snapshot(path, None)
}

/// [`raw_snapshot`] restricted to the tables whose name starts with `prefix` (all of them
/// for `None`).
fn raw_tables_snapshot(path: &Path, prefix: Option<&str>) -> Result<String, StoreError> {
    let mut conn = side_connection(path)?;
    let tx = conn.transaction().sql()?;
    let mut out = String::new();
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .sql()?;
    let _ = writeln!(out, "user_version={version}");
    let tables: Vec<String> = {
        let mut stmt = tx
            .prepare(
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .sql()?;
        let rows = stmt.query_map([], |row| row.get(0)).sql()?;
        rows.collect::<Result<_, _>>().sql()?
    };
    for table in tables
        .into_iter()
        .filter(|t| prefix.is_none_or(|p| t.starts_with(p)))
    {
        let columns: Vec<String> = {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
                ))
                .sql()?;
            let rows = stmt.query_map([], |row| row.get(0)).sql()?;
            rows.collect::<Result<_, _>>().sql()?
        };
        let order = (1..=columns.len())
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mut stmt = tx
            .prepare(&format!("SELECT * FROM \"{table}\" ORDER BY {order}"))
            .sql()?;
        let mut rows = stmt.query([]).sql()?;
        let _ = writeln!(out, "[{table}]");
        while let Some(row) = rows.next().sql()? {
            for (i, column) in columns.iter().enumerate() {
                let value: Value = row.get(i).sql()?;
                let _ = write!(out, "{}{column}=", if i == 0 { "" } else { " " });
                render(&value, &mut out);
            }
            out.push('\n');
        }
    }
    Ok(out)
}

fn exactly_one(changed: usize, what: &str) -> Result<(), StoreError> {
    if changed == 1 {
        Ok(())
    } else {
        Err(permanent(format!(
            "{what}: expected one row, changed {changed}"
        )))
    }
}

/// Overwrites the stored document of `run_id` with truncated JSON.
///
/// # Errors
/// Infrastructure errors, or no such run.
pub fn corrupt_run(path: &Path, run_id: &RunId) -> Result<(), StoreError> {
    let changed = side_connection(path)?
        .execute(
            "UPDATE docket_runs SET document = '{\"id\": \"trunc' WHERE run_id = ?1",
            [run_id.as_str()],
        )
        .sql()?;
    exactly_one(changed, "corrupt_run")
}

/// Overwrites the payload of event `seq` of `run_id` with bytes that are not JSON.
///
/// # Errors
/// Infrastructure errors, or no such event.
pub fn corrupt_event(path: &Path, run_id: &RunId, seq: u64) -> Result<(), StoreError> {
    let seq = i64::try_from(seq).map_err(|_| permanent("corrupt_event: seq out of range"))?;
    let changed = side_connection(path)?
        .execute(
            "UPDATE docket_events SET payload = '{not json' WHERE run_id = ?1 AND seq = ?2",
            params![run_id.as_str(), seq],
        )
        .sql()?;
    exactly_one(changed, "corrupt_event")
}

/// Overwrites the stored bytes of one graph version with bytes that are not its content.
///
/// # Errors
/// Infrastructure errors, or no such version.
pub fn corrupt_graph(
    path: &Path,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<(), StoreError> {
    let changed = side_connection(path)?
        .execute(
            "UPDATE docket_graph_versions SET graph = x'7b00ff' \
             WHERE scope_key = ?1 AND graph_id = ?2 AND graph_hash = ?3",
            params![
                owner.scope_key(),
                graph_ref.graph_id.as_str(),
                graph_ref.graph_hash.as_str()
            ],
        )
        .sql()?;
    exactly_one(changed, "corrupt_graph")
}

/// Runs arbitrary SQL against the file (created if missing) through a side connection, for
/// tests that need a state no API call produces, e.g. a newer schema version or a column that
/// disagrees with the document.
///
/// # Errors
/// Infrastructure errors.
pub fn execute_sql(path: &Path, sql: &str) -> Result<(), StoreError> {
    open_side(path, OpenFlags::SQLITE_OPEN_CREATE)?
        .execute_batch(sql)
        .sql()
}
