//! Mapping of driver failures into the portable [`StoreError`] algebra.
//!
//! No sqlx type crosses the store traits: every driver error is rendered into a
//! [`DriverError`] (SQLSTATE, constraint and message only) before it becomes the source of a
//! `StoreError`.

use docket_core::store::StoreError;
use sqlx::postgres::PgDatabaseError;

/// A driver failure reduced to plain data: what PostgreSQL (or the socket) said.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}{}", code.as_deref().map(|c| format!(" (SQLSTATE {c})")).unwrap_or_default())]
pub struct DriverError {
    /// The SQLSTATE, when the server answered with an error.
    pub code: Option<String>,
    /// The violated constraint, when the server named one.
    pub constraint: Option<String>,
    /// The error's DETAIL field, when present.
    pub detail: Option<String>,
    /// Human-readable description.
    pub message: String,
}

/// SQLSTATE of `unique_violation`.
pub(crate) const UNIQUE_VIOLATION: &str = "23505";
/// SQLSTATE of `foreign_key_violation`.
pub(crate) const FOREIGN_KEY_VIOLATION: &str = "23503";
/// Our own SQLSTATE, raised by `raise_event_conflict` inside the fused claimed commit.
pub(crate) const EVENT_CONFLICT: &str = "DK001";

/// Whether a write had possibly reached the server when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Nothing that changes data was sent (reads, acquiring a connection, statements inside a
    /// transaction whose COMMIT was never sent): a lost connection means "not applied".
    Safe,
    /// A data-changing autocommit statement or a COMMIT was sent: a lost connection means the
    /// outcome is unknown.
    Sent,
}

impl DriverError {
    pub(crate) fn from_sqlx(error: &sqlx::Error) -> Self {
        match error {
            sqlx::Error::Database(db) => DriverError {
                code: db.code().map(|c| c.into_owned()),
                constraint: db.constraint().map(str::to_owned),
                detail: db
                    .try_downcast_ref::<PgDatabaseError>()
                    .and_then(PgDatabaseError::detail)
                    .map(str::to_owned),
                message: db.message().to_owned(),
            },
            other => DriverError {
                code: None,
                constraint: None,
                detail: None,
                message: other.to_string(),
            },
        }
    }
}

/// SQLSTATEs that mean "try again later, nothing was applied": serialization failure,
/// deadlock, lock timeout, statement timeout (query canceled), and server shutdown / startup /
/// overload.
fn retryable_sqlstate(code: &str) -> bool {
    matches!(
        code,
        "40001" | "40P01" | "55P03" | "57014" | "57P01" | "57P02" | "57P03" | "53300" | "53400"
    ) || code.starts_with("08")
}

/// Whether the error means the connection itself was lost (socket, TLS, protocol desync, pool
/// worker gone).
fn connection_lost(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
    )
}

/// Maps a driver error to the portable algebra. Callers handle the SQLSTATEs that carry
/// meaning for their operation (unique and foreign-key violations, event conflicts) first.
pub(crate) fn map(error: sqlx::Error, phase: Phase) -> StoreError {
    let driver = DriverError::from_sqlx(&error);
    match &error {
        sqlx::Error::Database(_) => {
            if driver.code.as_deref().is_some_and(retryable_sqlstate) {
                StoreError::retryable(driver)
            } else {
                StoreError::permanent(driver)
            }
        }
        e if connection_lost(e) => match phase {
            Phase::Safe => StoreError::retryable(driver),
            Phase::Sent => StoreError::ambiguous(driver),
        },
        sqlx::Error::PoolTimedOut => StoreError::retryable(driver),
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
            StoreError::corrupt("row", driver.message)
        }
        _ => StoreError::permanent(driver),
    }
}

/// Shorthand for mapping errors of statements that change nothing (or whose transaction has
/// not been committed).
pub(crate) fn safe(error: sqlx::Error) -> StoreError {
    map(error, Phase::Safe)
}

/// Shorthand for mapping errors of autocommit writes and COMMITs.
pub(crate) fn sent(error: sqlx::Error) -> StoreError {
    map(error, Phase::Sent)
}

/// The SQLSTATE of a database error, if it is one.
pub(crate) fn sqlstate(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Database(db) => db.code().map(|c| c.into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_and_serialization_failures_are_retryable() {
        for code in ["40001", "40P01", "55P03", "57014", "08006"] {
            assert!(retryable_sqlstate(code), "{code}");
        }
        for code in ["23505", "42P01", "22P02"] {
            assert!(!retryable_sqlstate(code), "{code}");
        }
    }

    #[test]
    fn a_lost_connection_is_ambiguous_only_after_a_write_was_sent() {
        let io = || sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        assert!(map(io(), Phase::Safe).is_retryable());
        assert!(matches!(
            map(io(), Phase::Sent),
            StoreError::Ambiguous { .. }
        ));
        assert!(map(sqlx::Error::PoolTimedOut, Phase::Sent).is_retryable());
    }
}
