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

/// Maps a failed `COMMIT`. Lock contention means nothing was written (retryable). So does a
/// full disk: `SQLITE_FULL` comes from writing the transaction's frames (or journal), the
/// commit record is the last of them and never became valid, and SQLite rolls the
/// transaction back — a retryable `Unavailable` saying so, not an `Ambiguous` that would send
/// the caller re-reading. Anything else (an fsync error after the commit record was written)
/// may have left a complete transaction in the WAL that recovery would replay, so the
/// outcome is unknown.
pub(crate) fn commit_error(error: rusqlite::Error) -> StoreError {
    let code = match &error {
        rusqlite::Error::SqliteFailure(failure, _) => Some(failure.code),
        _ => None,
    };
    match (code, sql_error(error)) {
        (Some(ErrorCode::DiskFull), StoreError::Unavailable { source, .. }) => {
            StoreError::retryable(Message(format!(
                "the commit was not applied (SQLite rolled it back): {source}"
            )))
        }
        (Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked), mapped) => mapped,
        (_, StoreError::Unavailable { source, .. }) => StoreError::Ambiguous { source },
        (_, mapped) => mapped,
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

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::store::StoreErrorKind;

    fn failure(code: std::os::raw::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_commit_refused_for_a_full_disk_was_not_applied_but_an_io_error_is_ambiguous() {
        let full = commit_error(failure(rusqlite::ffi::SQLITE_FULL));
        assert_eq!(full.kind(), StoreErrorKind::Unavailable, "{full}");
        assert!(full.is_retryable());
        assert!(full.to_string().contains("not applied"), "{full}");
        let busy = commit_error(failure(rusqlite::ffi::SQLITE_BUSY));
        assert!(busy.is_retryable(), "{busy}");
        let io = commit_error(failure(rusqlite::ffi::SQLITE_IOERR));
        assert_eq!(io.kind(), StoreErrorKind::Ambiguous, "{io}");
    }
}
