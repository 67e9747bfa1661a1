//! Raw floors: the least work the same server can do for a fenced commit or a claim, measured
//! with the same driver, connection settings and concurrency as the store, on bare tables (or
//! keys) next to the store's own.
//!
//! A floor is what no store built on that server can beat: a single-row conditional update
//! (`UPDATE … WHERE id AND seq AND token`, or a compare-and-set script on one Redis hash) and
//! a single-statement claim (`SKIP LOCKED` on PostgreSQL, `UPDATE … RETURNING` on SQLite, a
//! `ZPOPMIN` script on Redis). Reporting each store figure as a ratio to its floor says how
//! much of the server's capacity the store's extra work (documents, events, fences, schedules)
//! costs, independently of how fast this machine happens to be.

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "sqlite")]
mod sqlite;

use async_trait::async_trait;

use super::BenchError;

pub(crate) use memory::MemoryFloor;
#[cfg(feature = "postgres")]
pub(crate) use postgres::PostgresFloor;
#[cfg(feature = "redis")]
pub(crate) use redis::RedisFloor;
#[cfg(feature = "sqlite")]
pub(crate) use sqlite::SqliteFloor;

/// One backend's raw floor operations. Rows are numbered `0..rows`; every commit row starts at
/// seq 0 with its own token, every claim row starts unclaimed and due.
#[async_trait]
pub(crate) trait Floor: Send + Sync {
    /// What the commit floor executes, for the report.
    fn commit_statement(&self) -> &'static str;

    /// What the claim floor executes, for the report.
    fn claim_statement(&self) -> &'static str;

    /// Creates (replacing any previous) `tokens.len()` commit rows: row `i` at seq 0 holding
    /// `tokens[i]`.
    async fn prepare_commits(&self, tokens: &[String]) -> Result<(), BenchError>;

    /// Moves row `row` from `seq` to `seq + 1` if it is at `seq` and holds `token`; returns
    /// whether a row matched.
    async fn commit(&self, row: usize, seq: u64, token: &str) -> Result<bool, BenchError>;

    /// The stored seq of every commit row, by row.
    async fn commit_seqs(&self) -> Result<Vec<u64>, BenchError>;

    /// Creates (replacing any previous) `rows` unclaimed, due claim rows.
    async fn prepare_claims(&self, rows: usize) -> Result<(), BenchError>;

    /// Claims at most `limit` due rows for `token`, oldest first; returns their row numbers.
    async fn claim(&self, limit: u32, token: &str) -> Result<Vec<u64>, BenchError>;

    /// `(unclaimed, claimed)` claim rows.
    async fn claim_counts(&self) -> Result<(u64, u64), BenchError>;

    /// Removes the floor's tables or keys.
    async fn teardown(&self) -> Result<(), BenchError>;

    /// The server's version and the settings every figure depends on (durability, and on
    /// PostgreSQL whether autovacuum reclaims the rows a long run leaves dead), for the report;
    /// `None` where the floor has no server to ask.
    ///
    /// # Errors
    /// The server cannot be reached.
    async fn server_settings(&self) -> Result<Option<String>, BenchError> {
        Ok(None)
    }
}

/// A floor error of `backend`.
pub(crate) fn floor_error(backend: &'static str, message: impl std::fmt::Display) -> BenchError {
    BenchError::Floor {
        backend,
        message: message.to_string(),
    }
}

/// A row number as the databases store it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn row_id(row: usize) -> Result<i64, BenchError> {
    i64::try_from(row).map_err(|_| floor_error("any", format!("row {row} is out of range")))
}
