//! [`SqliteStore`]: the value that implements the store traits.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use docket_core::store::StoreError;

use crate::error::SqlResult;
use crate::options::{parse_url, SqliteOptions};
use crate::wakeups::Hints;
use crate::workers::Workers;

/// The embedded SQLite store: one database file, one writer thread, a few reader threads.
/// The same value is the run store, the graph store and the operation registry.
///
/// Cloning is cheap and shares the connections. The file is closed when the last clone is
/// dropped (queued operations finish first).
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) workers: Workers,
    /// Hints that a run may have become due.
    pub(crate) wake: Hints,
    /// Hints that an operation of the registry may have ended.
    pub(crate) ops_wake: Hints,
    path: PathBuf,
    pub(crate) options: SqliteOptions,
}

/// The settings in force on the writer connection, read back from SQLite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveSettings {
    /// `PRAGMA journal_mode` (always `wal`).
    pub journal_mode: String,
    /// `PRAGMA synchronous` (`2` = FULL, `1` = NORMAL).
    pub synchronous: i64,
    /// `PRAGMA foreign_keys`.
    pub foreign_keys: bool,
    /// `PRAGMA busy_timeout` in milliseconds.
    pub busy_timeout_ms: i64,
    /// `PRAGMA journal_size_limit`: the size the WAL is truncated to after a checkpoint.
    pub wal_size_limit_bytes: i64,
    /// `PRAGMA user_version`: the schema version.
    pub schema_version: i64,
    /// The SQLite library version (bundled).
    pub sqlite_version: String,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `options.path`: WAL mode, the configured
    /// `synchronous` level, foreign keys on, the schema migrated to the newest version.
    ///
    /// # Errors
    /// `InvalidArgument` for invalid options; a permanent `Unavailable` when the file cannot be
    /// opened, WAL cannot be enabled, the schema is newer than this build knows, or the file
    /// belongs to another application; a retryable `Unavailable` when another process holds the
    /// write lock beyond the busy timeout.
    pub async fn open(options: SqliteOptions) -> Result<Self, StoreError> {
        options.validate()?;
        let path = options.path.clone();
        let workers = Workers::start(&path, &options).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                workers,
                wake: Hints::new(),
                ops_wake: Hints::new(),
                path,
                options,
            }),
        })
    }

    /// Opens the store named by a `sqlite://` URL (see [`crate::parse_url`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL, then as [`SqliteStore::open`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::open(parse_url(url)?).await
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The options the store was opened with.
    #[must_use]
    pub fn options(&self) -> &SqliteOptions {
        &self.inner.options
    }

    /// Reads back the durability and schema settings in force on the writer connection (for
    /// start-up logs and chaos reports).
    ///
    /// # Errors
    /// Infrastructure errors.
    pub async fn effective_settings(&self) -> Result<EffectiveSettings, StoreError> {
        self.inner
            .workers
            .write(|conn| {
                let text = |name: &str| -> Result<String, StoreError> {
                    conn.pragma_query_value(None, name, |row| row.get(0)).sql()
                };
                let int = |name: &str| -> Result<i64, StoreError> {
                    conn.pragma_query_value(None, name, |row| row.get(0)).sql()
                };
                Ok(EffectiveSettings {
                    journal_mode: text("journal_mode")?,
                    synchronous: int("synchronous")?,
                    foreign_keys: int("foreign_keys")? == 1,
                    busy_timeout_ms: int("busy_timeout")?,
                    wal_size_limit_bytes: int("journal_size_limit")?,
                    schema_version: int("user_version")?,
                    sqlite_version: rusqlite::version().to_owned(),
                })
            })
            .await
    }

    /// Sends a wake hint to every subscriber (nobody listening is fine).
    pub(crate) fn hint(&self) {
        self.inner.wake.send();
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}
