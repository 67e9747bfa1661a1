//! Open options, durability knobs and the `sqlite://` URL form.

use std::path::PathBuf;
use std::time::Duration;

use docket_core::ops::rules::Retention;
use docket_core::store::StoreError;

/// The `synchronous` pragma of the writer connection: how hard SQLite pushes a commit to the
/// disk before acknowledging it (WAL mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `synchronous=FULL` (the default): an acknowledged commit survives an application crash
    /// *and* an OS crash or power loss, provided the disk honours fsync.
    #[default]
    Full,
    /// `synchronous=NORMAL`: an explicit opt-in. An acknowledged commit survives an application
    /// crash, and the database always stays consistent, but the most recent acknowledged commits
    /// may roll back after an OS crash or power loss (sqlite.org/pragma.html#pragma_synchronous).
    Normal,
}

impl Synchronous {
    /// The pragma value.
    #[must_use]
    pub fn as_pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }

    /// The value `PRAGMA synchronous` reads back as (`2` = FULL, `1` = NORMAL).
    #[must_use]
    pub fn pragma_code(self) -> i64 {
        match self {
            Synchronous::Full => 2,
            Synchronous::Normal => 1,
        }
    }
}

/// How a [`crate::SqliteStore`] opens its database file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Durability of acknowledged commits. Default [`Synchronous::Full`].
    pub synchronous: Synchronous,
    /// How long a connection waits for another process's write lock before the operation fails
    /// with a retryable `Unavailable`. Default 5 s.
    pub busy_timeout: Duration,
    /// Reader connections (each on its own thread). Default 4; must be at least 1.
    pub readers: usize,
    /// Terminal operation records the registry keeps per owner. Default 256.
    pub ops_retention: Retention,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            readers: 4,
            ops_retention: Retention::default(),
        }
    }
}

impl SqliteOptions {
    /// These options with `synchronous` replaced.
    #[must_use]
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// These options with `busy_timeout` replaced.
    #[must_use]
    pub fn with_busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// These options with `readers` replaced.
    #[must_use]
    pub fn with_readers(mut self, readers: usize) -> Self {
        self.readers = readers;
        self
    }

    /// These options with `ops_retention` replaced.
    #[must_use]
    pub fn with_ops_retention(mut self, ops_retention: Retention) -> Self {
        self.ops_retention = ops_retention;
        self
    }

    /// Checks the options.
    ///
    /// # Errors
    /// `InvalidArgument` when `readers` is zero.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.readers == 0 {
            return Err(StoreError::invalid_argument(
                "sqlite options: readers must be at least 1",
            ));
        }
        Ok(())
    }
}

/// The default database file of the URL form `sqlite://`.
pub const DEFAULT_PATH: &str = "docket.db";

/// A parsed `sqlite://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteUrl {
    /// The database file.
    pub path: PathBuf,
    /// Options from the query string (defaults for the rest).
    pub options: SqliteOptions,
}

/// Parses `sqlite://PATH[?key=value&...]`.
///
/// The path is everything between `sqlite://` and `?`, taken literally: `sqlite://docket.db`
/// is the relative file `docket.db`, `sqlite:///abs/path.db` the absolute `/abs/path.db`, and a
/// bare `sqlite://` means [`DEFAULT_PATH`]. Query keys: `synchronous=full|normal`,
/// `busy_timeout_ms=N`, `readers=N`, `ops_retention=N` (terminal operation records kept per
/// owner, at least 1).
///
/// # Errors
/// `InvalidArgument` for another scheme, an unknown key or a malformed value.
pub fn parse_url(url: &str) -> Result<SqliteUrl, StoreError> {
    let rest = url
        .strip_prefix("sqlite://")
        .ok_or_else(|| StoreError::invalid_argument(format!("not a sqlite:// URL: {url:?}")))?;
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let path = if path.is_empty() { DEFAULT_PATH } else { path };
    let mut options = SqliteOptions::default();
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        if pair.is_empty() {
            continue;
        }
        let (key, value) = pair.split_once('=').ok_or_else(|| {
            StoreError::invalid_argument(format!("sqlite URL option {pair:?} has no value"))
        })?;
        match key {
            "synchronous" => {
                options.synchronous = match value.to_ascii_lowercase().as_str() {
                    "full" => Synchronous::Full,
                    "normal" => Synchronous::Normal,
                    _ => {
                        return Err(StoreError::invalid_argument(format!(
                            "sqlite URL option synchronous must be full or normal, got {value:?}"
                        )))
                    }
                };
            }
            "busy_timeout_ms" => {
                options.busy_timeout = Duration::from_millis(parse_number(key, value)?);
            }
            "readers" => {
                options.readers = usize::try_from(parse_number(key, value)?).map_err(|_| {
                    StoreError::invalid_argument("sqlite URL option readers is too large")
                })?;
            }
            "ops_retention" => {
                let kept = u32::try_from(parse_number(key, value)?).map_err(|_| {
                    StoreError::invalid_argument("sqlite URL option ops_retention is too large")
                })?;
                options.ops_retention = Retention::new(kept)
                    .map_err(|e| StoreError::invalid_argument(e.to_string()))?;
            }
            other => {
                return Err(StoreError::invalid_argument(format!(
                    "unknown sqlite URL option {other:?} \
                     (known: synchronous, busy_timeout_ms, readers, ops_retention)"
                )))
            }
        }
    }
    options.validate()?;
    Ok(SqliteUrl {
        path: PathBuf::from(path),
        options,
    })
}

fn parse_number(key: &str, value: &str) -> Result<u64, StoreError> {
    value.parse::<u64>().map_err(|_| {
        StoreError::invalid_argument(format!(
            "sqlite URL option {key} must be a non-negative integer, got {value:?}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_absolute_and_default_paths() {
        assert_eq!(
            parse_url("sqlite://docket.db").ok().map(|u| u.path),
            Some(PathBuf::from("docket.db"))
        );
        assert_eq!(
            parse_url("sqlite:///abs/path.db").ok().map(|u| u.path),
            Some(PathBuf::from("/abs/path.db"))
        );
        assert_eq!(
            parse_url("sqlite://").ok().map(|u| u.path),
            Some(PathBuf::from(DEFAULT_PATH))
        );
    }

    #[test]
    fn query_options_are_parsed_and_unknown_ones_refused() {
        let url = parse_url(
            "sqlite://x.db?synchronous=normal&busy_timeout_ms=250&readers=2&ops_retention=3",
        )
        .expect("valid url");
        assert_eq!(url.options.synchronous, Synchronous::Normal);
        assert_eq!(url.options.busy_timeout, Duration::from_millis(250));
        assert_eq!(url.options.readers, 2);
        assert_eq!(url.options.ops_retention.max_terminal(), 3);
        for bad in [
            "postgres://x",
            "sqlite://x.db?mode=ro",
            "sqlite://x.db?synchronous=off",
            "sqlite://x.db?readers=0",
            "sqlite://x.db?busy_timeout_ms=-1",
            "sqlite://x.db?readers",
            "sqlite://x.db?ops_retention=0",
        ] {
            assert!(
                matches!(parse_url(bad), Err(StoreError::InvalidArgument { .. })),
                "{bad} should be refused"
            );
        }
    }
}
