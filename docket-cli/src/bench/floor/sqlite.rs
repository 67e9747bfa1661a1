//! The SQLite floor: bare tables in the store's own database file, written by one connection on
//! its own thread fed by a channel — the same shape as the store's writer — opened with the
//! store's `synchronous`, `busy_timeout` and WAL settings (checked against the store's writer
//! before anything is measured). Every statement is its own transaction, so every floor commit
//! pays the same fsync as a store commit.

use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use async_trait::async_trait;
use rusqlite::{params, Connection, OpenFlags};
use tokio::sync::oneshot;

use docket_sqlite::SqliteStore;

use super::{floor_error, row_id, Floor};
use crate::bench::BenchError;

const COMMITS: &str = "docket_bench_floor_commits";
const CLAIMS: &str = "docket_bench_floor_claims";

type Job = Box<dyn FnOnce(&mut Connection) + Send + 'static>;

/// One connection on one thread.
pub(crate) struct SqliteFloor {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SqliteFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteFloor").finish_non_exhaustive()
    }
}

fn sql_error(e: rusqlite::Error) -> BenchError {
    floor_error("sqlite", e)
}

impl SqliteFloor {
    /// Opens the store's file with the store's settings and checks them against the store's
    /// writer connection.
    ///
    /// # Errors
    /// The file cannot be opened, or a setting differs from the store's.
    pub(crate) async fn open(store: &SqliteStore) -> Result<Self, BenchError> {
        let path = store.path().to_path_buf();
        let options = store.options().clone();
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = oneshot::channel::<Result<(), BenchError>>();
        let thread = std::thread::Builder::new()
            .name("docket-bench-sqlite-floor".into())
            .spawn(move || {
                let mut conn = match open_connection(&path, &options) {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(job) = queue.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| floor_error("sqlite", format!("cannot start the floor thread: {e}")))?;
        let floor = SqliteFloor {
            jobs: Some(jobs),
            thread: Some(thread),
        };
        ready_rx
            .await
            .map_err(|_| floor_error("sqlite", "the floor thread stopped while opening"))??;
        let store_settings = store.effective_settings().await?;
        let (journal, synchronous, busy) = floor
            .call(|conn| {
                let journal: String =
                    conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
                let synchronous: i64 =
                    conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
                let busy: i64 = conn.pragma_query_value(None, "busy_timeout", |r| r.get(0))?;
                Ok((journal, synchronous, busy))
            })
            .await?;
        let ours = (journal.to_ascii_lowercase(), synchronous, busy);
        let theirs = (
            store_settings.journal_mode.to_ascii_lowercase(),
            store_settings.synchronous,
            store_settings.busy_timeout_ms,
        );
        if ours != theirs {
            return Err(floor_error(
                "sqlite",
                format!(
                    "the floor connection's (journal_mode, synchronous, busy_timeout) {ours:?} \
                     differ from the store writer's {theirs:?}"
                ),
            ));
        }
        Ok(floor)
    }

    /// Runs `f` on the floor connection's thread.
    async fn call<T, F>(&self, f: F) -> Result<T, BenchError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| floor_error("sqlite", "the floor is closed"))?;
        let (reply_tx, reply_rx) = oneshot::channel();
        jobs.send(Box::new(move |conn: &mut Connection| {
            let _ = reply_tx.send(f(conn));
        }))
        .map_err(|_| floor_error("sqlite", "the floor thread has stopped"))?;
        reply_rx
            .await
            .map_err(|_| floor_error("sqlite", "the floor thread stopped before answering"))?
            .map_err(sql_error)
    }
}

impl Drop for SqliteFloor {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn open_connection(
    path: &Path,
    options: &docket_sqlite::SqliteOptions,
) -> Result<Connection, BenchError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_error)?;
    conn.busy_timeout(options.busy_timeout).map_err(sql_error)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(sql_error)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(sql_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(floor_error(
            "sqlite",
            format!("journal_mode is {mode:?}, not wal"),
        ));
    }
    conn.pragma_update(None, "synchronous", options.synchronous.as_pragma())
        .map_err(sql_error)?;
    Ok(conn)
}

#[async_trait]
impl Floor for SqliteFloor {
    fn commit_statement(&self) -> &'static str {
        "UPDATE bare_table SET seq = seq + 1 WHERE id = ? AND seq = ? AND token = ? (autocommit)"
    }

    fn claim_statement(&self) -> &'static str {
        "UPDATE bare_table SET token = ? WHERE id IN (SELECT id … WHERE token IS NULL ORDER BY wake_at, id LIMIT ?) RETURNING id"
    }

    async fn prepare_commits(&self, tokens: &[String]) -> Result<(), BenchError> {
        let tokens = tokens.to_vec();
        self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.execute_batch(&format!(
                "DROP TABLE IF EXISTS {COMMITS};
                 CREATE TABLE {COMMITS} (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL,
                                         token TEXT NOT NULL) STRICT;"
            ))?;
            {
                let mut insert = tx.prepare(&format!(
                    "INSERT INTO {COMMITS} (id, seq, token) VALUES (?1, 0, ?2)"
                ))?;
                for (row, token) in tokens.iter().enumerate() {
                    insert.execute(params![row as i64, token])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn commit(&self, row: usize, seq: u64, token: &str) -> Result<bool, BenchError> {
        let (id, seq, token) = (row_id(row)?, seq as i64, token.to_owned());
        self.call(move |conn| {
            let mut update = conn.prepare_cached(&format!(
                "UPDATE {COMMITS} SET seq = seq + 1 WHERE id = ?1 AND seq = ?2 AND token = ?3"
            ))?;
            Ok(update.execute(params![id, seq, token])? == 1)
        })
        .await
    }

    async fn commit_seqs(&self) -> Result<Vec<u64>, BenchError> {
        self.call(|conn| {
            let mut select = conn.prepare(&format!("SELECT seq FROM {COMMITS} ORDER BY id"))?;
            let seqs = select
                .query_map([], |row| row.get::<_, i64>(0))?
                .collect::<Result<Vec<i64>, _>>()?;
            Ok(seqs.into_iter().map(|s| s.max(0) as u64).collect())
        })
        .await
    }

    async fn prepare_claims(&self, rows: usize) -> Result<(), BenchError> {
        let rows = row_id(rows)?;
        self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.execute_batch(&format!(
                "DROP TABLE IF EXISTS {CLAIMS};
                 CREATE TABLE {CLAIMS} (id INTEGER PRIMARY KEY, wake_at INTEGER NOT NULL,
                                        token TEXT NULL, claimed_at INTEGER NULL) STRICT;
                 CREATE INDEX {CLAIMS}_ready ON {CLAIMS} (wake_at, id) WHERE token IS NULL;"
            ))?;
            {
                let mut insert = tx.prepare(&format!(
                    "INSERT INTO {CLAIMS} (id, wake_at) VALUES (?1, ?1)"
                ))?;
                for row in 0..rows {
                    insert.execute(params![row])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn claim(&self, limit: u32, token: &str) -> Result<Vec<u64>, BenchError> {
        let token = token.to_owned();
        let now = docket_core::model::Timestamp::now_utc().as_micros();
        self.call(move |conn| {
            let mut claim = conn.prepare_cached(&format!(
                "UPDATE {CLAIMS} SET token = ?1, claimed_at = ?2 WHERE id IN \
                 (SELECT id FROM {CLAIMS} WHERE token IS NULL AND wake_at <= ?2 \
                  ORDER BY wake_at, id LIMIT ?3) RETURNING id"
            ))?;
            let ids = claim
                .query_map(params![token, now, limit], |row| row.get::<_, i64>(0))?
                .collect::<Result<Vec<i64>, _>>()?;
            Ok(ids.into_iter().map(|id| id.max(0) as u64).collect())
        })
        .await
    }

    async fn claim_counts(&self) -> Result<(u64, u64), BenchError> {
        self.call(|conn| {
            conn.query_row(
                &format!(
                    "SELECT COALESCE(SUM(token IS NULL), 0), COALESCE(SUM(token IS NOT NULL), 0) \
                     FROM {CLAIMS}"
                ),
                [],
                |row| {
                    Ok((
                        row.get::<_, i64>(0)?.max(0) as u64,
                        row.get::<_, i64>(1)?.max(0) as u64,
                    ))
                },
            )
        })
        .await
    }

    async fn teardown(&self) -> Result<(), BenchError> {
        self.call(|conn| {
            conn.execute_batch(&format!(
                "DROP TABLE IF EXISTS {COMMITS}; DROP TABLE IF EXISTS {CLAIMS};"
            ))
        })
        .await
    }
}
