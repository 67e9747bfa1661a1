//! Open options, durability knobs and the `sqlite://` URL form.

use std::path::PathBuf;
use std::time::Duration;

use docket_core::model::excerpt;
use docket_core::ops::rules::Retention;
use docket_core::store::url::{number, split_query, unknown_option, Param, MAX_TIMEOUT_MS};
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

/// The default of [`SqliteOptions::connect_timeout`], in milliseconds.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;

/// The default of [`SqliteOptions::statement_timeout`], in milliseconds.
pub const DEFAULT_STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// How a [`crate::SqliteStore`] opens its database file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// The database file (created when missing). Default [`DEFAULT_PATH`] in the working
    /// directory.
    pub path: PathBuf,
    /// Durability of acknowledged commits. Default [`Synchronous::Full`].
    pub synchronous: Synchronous,
    /// How long a connection waits for another process's write lock before the operation fails
    /// with a retryable `Unavailable`. Default 5 s.
    pub busy_timeout: Duration,
    /// Reader connections (each on its own thread). Default 4; must be in `1..=64`.
    pub readers: usize,
    /// Terminal operation records the registry keeps per owner. Default 256.
    pub ops_retention: Retention,
    /// How long opening the store may take (opening the file, WAL, migrating — which waits
    /// for the write lock). Default 10 s; past it, a retryable `Unavailable`.
    pub connect_timeout: Duration,
    /// How long one statement may run before SQLite interrupts it (time spent waiting for
    /// another process's lock is bounded by `busy_timeout` instead). Default 30 s; an
    /// interrupted statement is a retryable `Unavailable` and its transaction is rolled back.
    pub statement_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            path: PathBuf::from(DEFAULT_PATH),
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            readers: 4,
            ops_retention: Retention::default(),
            connect_timeout: Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS),
            statement_timeout: Duration::from_millis(DEFAULT_STATEMENT_TIMEOUT_MS),
        }
    }
}

impl SqliteOptions {
    /// The default options for the database file at `path`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            ..Self::default()
        }
    }

    /// These options with `path` replaced.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = path.into();
        self
    }

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
    /// `InvalidArgument` when `path` is empty, `readers` is outside `1..=64`, `busy_timeout` is longer than
    /// an hour (SQLite takes the timeout as a 32-bit count of milliseconds), or a connect or
    /// statement timeout is outside 1 ms..=1 h.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.path.as_os_str().is_empty() {
            return Err(StoreError::invalid_argument(
                "sqlite options: path must name a database file",
            ));
        }
        for (name, timeout) in [
            ("connect_timeout", self.connect_timeout),
            ("statement_timeout", self.statement_timeout),
        ] {
            if timeout < Duration::from_millis(1) || timeout > Duration::from_millis(MAX_TIMEOUT_MS)
            {
                return Err(StoreError::invalid_argument(format!(
                    "sqlite options: {name} must be in 1..={MAX_TIMEOUT_MS} ms, got {} ms",
                    timeout.as_millis()
                )));
            }
        }
        if self.readers == 0 || self.readers as u64 > MAX_READERS {
            return Err(StoreError::invalid_argument(format!(
                "sqlite options: readers must be in 1..={MAX_READERS}, got {}",
                self.readers
            )));
        }
        if self.busy_timeout > Duration::from_millis(MAX_TIMEOUT_MS) {
            return Err(StoreError::invalid_argument(format!(
                "sqlite options: busy_timeout must be in 0..={MAX_TIMEOUT_MS} ms, got {} ms",
                self.busy_timeout.as_millis()
            )));
        }
        Ok(())
    }
}

/// The default database file of the URL form `sqlite://`.
pub const DEFAULT_PATH: &str = "docket.db";

/// The query options of a `sqlite://` URL.
pub const URL_OPTIONS: &[&str] = &[
    "synchronous",
    "busy_timeout_ms",
    "readers",
    "connect_timeout_ms",
    "statement_timeout_ms",
    "ops_retention",
];

/// Most reader connections a URL may ask for.
pub const MAX_READERS: u64 = 64;

/// Parses `sqlite://PATH[?key=value&...]` into the options [`crate::SqliteStore::open`] takes.
///
/// The path is everything between `sqlite://` and `?`, taken literally: `sqlite://docket.db`
/// is the relative file `docket.db`, `sqlite:///abs/path.db` the absolute `/abs/path.db`, and a
/// bare `sqlite://` means [`DEFAULT_PATH`]. Query options ([`URL_OPTIONS`]), each at most once:
///
/// | option | values | default |
/// | --- | --- | --- |
/// | `synchronous` | `full` or `normal` | `full` |
/// | `busy_timeout_ms` | `0..=3600000` | `5000` |
/// | `readers` | `1..=64` | `4` |
/// | `connect_timeout_ms` | `1..=3600000` | `10000` |
/// | `statement_timeout_ms` | `1..=3600000` | `30000` |
/// | `ops_retention` | `1..=4294967295` (terminal operation records kept per owner) | `256` |
///
/// # Errors
/// `InvalidArgument` for another scheme, an unknown or repeated option, or a malformed or
/// out-of-range value (the message names the allowed range).
pub fn parse_url(url: &str) -> Result<SqliteOptions, StoreError> {
    if !url.starts_with("sqlite://") {
        return Err(StoreError::invalid_argument(format!(
            "not a sqlite:// URL: {:?}",
            excerpt(url)
        )));
    }
    let (base, params) = split_query("sqlite", url)?;
    let path = &base["sqlite://".len()..];
    let path = if path.is_empty() { DEFAULT_PATH } else { path };
    let mut options = SqliteOptions::new(path);
    for Param { key, value, .. } in params {
        match key {
            "synchronous" => {
                options.synchronous = match value.map(str::to_ascii_lowercase).as_deref() {
                    Some("full") => Synchronous::Full,
                    Some("normal") => Synchronous::Normal,
                    _ => {
                        return Err(StoreError::invalid_argument(format!(
                            "sqlite URL option synchronous must be full or normal, got {:?}",
                            excerpt(value.unwrap_or_default())
                        )))
                    }
                };
            }
            "busy_timeout_ms" => {
                options.busy_timeout =
                    Duration::from_millis(number("sqlite", key, value, 0..=MAX_TIMEOUT_MS)?);
            }
            "readers" => {
                // In range, so it fits any usize.
                options.readers =
                    usize::try_from(number("sqlite", key, value, 1..=MAX_READERS)?).unwrap_or(1);
            }
            "ops_retention" => {
                let kept = number("sqlite", key, value, 1..=u64::from(u32::MAX))?;
                // In range, so it fits a u32.
                options.ops_retention = Retention::new(u32::try_from(kept).unwrap_or(u32::MAX))
                    .map_err(|e| StoreError::invalid_argument(e.to_string()))?;
            }
            "connect_timeout_ms" => {
                options.connect_timeout =
                    Duration::from_millis(number("sqlite", key, value, 1..=MAX_TIMEOUT_MS)?);
            }
            "statement_timeout_ms" => {
                options.statement_timeout =
                    Duration::from_millis(number("sqlite", key, value, 1..=MAX_TIMEOUT_MS)?);
            }
            other => return Err(unknown_option("sqlite", other, URL_OPTIONS)),
        }
    }
    options.validate()?;
    Ok(options)
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
            "sqlite://x.db?synchronous=normal&busy_timeout_ms=250&readers=2\
             &connect_timeout_ms=1500&statement_timeout_ms=2500&ops_retention=3",
        )
        .expect("valid url");
        assert_eq!(url.connect_timeout, Duration::from_millis(1_500));
        assert_eq!(url.statement_timeout, Duration::from_millis(2_500));
        assert_eq!(url.synchronous, Synchronous::Normal);
        assert_eq!(url.busy_timeout, Duration::from_millis(250));
        assert_eq!(url.readers, 2);
        assert_eq!(url.ops_retention.max_terminal(), 3);
        for bad in [
            "postgres://x",
            "sqlite://x.db?mode=ro",
            "sqlite://x.db?synchronous=off",
            "sqlite://x.db?readers=0",
            "sqlite://x.db?busy_timeout_ms=-1",
            "sqlite://x.db?readers",
            "sqlite://x.db?ops_retention=0",
            "sqlite://x.db?busy_timeout_ms=3000000000",
            "sqlite://x.db?busy_timeout_ms=18446744073709551616",
            "sqlite://x.db?readers=65",
            "sqlite://x.db?readers=2&readers=3",
            "sqlite://x.db?synchronous=full&synchronous=normal",
            "sqlite://x.db?connect_timeout_ms=0",
            "sqlite://x.db?statement_timeout_ms=3600001",
        ] {
            assert!(
                matches!(parse_url(bad), Err(StoreError::InvalidArgument { .. })),
                "{bad} should be refused"
            );
        }
    }
}
