//! Mapping of SQLite failures onto the portable [`StoreError`]: no rusqlite type crosses the
//! store traits, only a message.

use docket_core::store::{Message, StoreError};
use rusqlite::ErrorCode;

/// Maps a driver error. Lock contention (`SQLITE_BUSY`, `SQLITE_LOCKED`, including the
/// `BUSY_SNAPSHOT` extended code), a full disk and an interrupted statement are retryable: the
/// transaction rolled back, so retrying later may succeed. Everything else is permanent.
pub(crate) fn sql_error(error: rusqlite::Error) -> StoreError {
    let retryable = match &error {
        rusqlite::Error::SqliteFailure(failure, _) => matches!(
            failure.code,
            ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::OperationInterrupted
        ),
        _ => false,
    };
    let message = match &error {
        rusqlite::Error::SqliteFailure(failure, detail) => format!(
            "sqlite error {} ({:?}): {}",
            failure.extended_code,
            failure.code,
            detail.as_deref().unwrap_or("no detail")
        ),
        other => format!("sqlite: {other}"),
    };
    if retryable {
        StoreError::retryable(Message(message))
    } else {
        StoreError::permanent(Message(message))
    }
}

/// Maps a failed `COMMIT`. Lock contention means nothing was written (retryable); anything
/// else may have left a complete transaction in the WAL that recovery would replay, so the
/// outcome is unknown.
pub(crate) fn commit_error(error: rusqlite::Error) -> StoreError {
    let contention = matches!(
        &error,
        rusqlite::Error::SqliteFailure(failure, _)
            if matches!(failure.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    match sql_error(error) {
        StoreError::Unavailable { source, .. } if !contention => StoreError::Ambiguous { source },
        mapped => mapped,
    }
}

/// A permanent failure described by `message`.
pub(crate) fn permanent(message: impl Into<String>) -> StoreError {
    StoreError::permanent(Message(message.into()))
}

/// Extension to map `rusqlite::Result` into `Result<_, StoreError>`.
pub(crate) trait SqlResult<T> {
    /// Maps the error with [`sql_error`].
    fn sql(self) -> Result<T, StoreError>;
}

impl<T> SqlResult<T> for rusqlite::Result<T> {
    fn sql(self) -> Result<T, StoreError> {
        self.map_err(sql_error)
    }
}
