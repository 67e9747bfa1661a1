//! Mapping of driver failures into the portable [`StoreError`] algebra.
//!
//! No sqlx type crosses the store traits: every driver error is rendered into a
//! [`DriverError`] (SQLSTATE, constraint and message only) before it becomes the source of a
//! `StoreError`.

use docket_core::store::StoreError;
use sqlx::postgres::PgDatabaseError;

/// A driver failure reduced to plain data: what PostgreSQL (or the socket, or a pooler in
/// front of the server) said.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{message}{}{}",
    code.as_deref().map(|c| format!(" (SQLSTATE {c})")).unwrap_or_default(),
    hint.as_deref().map(|h| format!("; {h}")).unwrap_or_default()
)]
pub struct DriverError {
    /// The SQLSTATE, when the server answered with an error.
    pub code: Option<String>,
    /// The violated constraint, when the server named one.
    pub constraint: Option<String>,
    /// The error's DETAIL field, when present.
    pub detail: Option<String>,
    /// Human-readable description.
    pub message: String,
    /// When a connection pooler caused the failure: what to change, naming the pooler setting
    /// or the Docket URL option that fixes it.
    pub hint: Option<String>,
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
            sqlx::Error::Database(db) => {
                let code = db.code().map(|c| c.into_owned());
                let message = db.message().to_owned();
                DriverError {
                    hint: PoolerCause::of(code.as_deref(), &message).map(|c| c.hint(&message)),
                    code,
                    constraint: db.constraint().map(str::to_owned),
                    detail: db
                        .try_downcast_ref::<PgDatabaseError>()
                        .and_then(PgDatabaseError::detail)
                        .map(str::to_owned),
                    message,
                }
            }
            other => DriverError {
                code: None,
                constraint: None,
                detail: None,
                message: other.to_string(),
                hint: None,
            },
        }
    }
}

/// A failure that a connection pooler in front of the server causes, recognized by what the
/// pooler (PgBouncer) or the server says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PoolerCause {
    /// The pooler refused a startup parameter it does not track (`extra_float_digits`, which
    /// sqlx sends, or `options`, which carries session settings).
    StartupParameter,
    /// A statement's Parse and its Bind, or a prepared statement and its later use, reached
    /// different server connections: a transaction pooler with prepared statements.
    SplitStatement,
    /// The pooler has no entry for the database.
    NoDatabase,
}

impl PoolerCause {
    fn of(code: Option<&str>, message: &str) -> Option<Self> {
        if message.contains("unsupported startup parameter") {
            return Some(PoolerCause::StartupParameter);
        }
        if message.starts_with("no such database") {
            return Some(PoolerCause::NoDatabase);
        }
        // Docket's own kept statements (`docket_<hash>`, pooler mode) are not the driver's.
        let statement = (message.contains("prepared statement") || message.contains("portal"))
            && !message.contains("\"docket_");
        match code {
            // protocol_violation ("bind message supplies 3 parameters, but prepared statement
            // … requires 27"), invalid_sql_statement_name ("prepared statement sqlx_s_1 does
            // not exist"), duplicate_prepared_statement, invalid_cursor_name (a portal).
            Some("08P01" | "26000" | "42P05" | "34000") if statement => {
                Some(PoolerCause::SplitStatement)
            }
            _ => None,
        }
    }

    /// Retrying never helps: the configuration must change.
    fn is_permanent(self) -> bool {
        matches!(
            self,
            PoolerCause::StartupParameter | PoolerCause::NoDatabase
        )
    }

    fn hint(self, message: &str) -> String {
        let named = message
            .rsplit(':')
            .next()
            .map(str::trim)
            .filter(|s| !s.is_empty() && !s.contains(' '))
            .unwrap_or("?");
        match self {
            PoolerCause::StartupParameter if named == "options" => {
                "a connection pooler refused the startup parameter `options`, which carries the \
                 session settings (the URL's options[…], lock/statement timeouts): add \
                 pooler=transaction to the Docket URL (settings are then sent with SET LOCAL), \
                 or set them on the role (ALTER ROLE … SET) instead"
                    .to_string()
            }
            PoolerCause::StartupParameter => format!(
                "a connection pooler refused the startup parameter `{named}`: add \
                 pooler=transaction to the Docket URL (Docket then sends none the pooler does \
                 not track), or add `ignore_startup_parameters = {named}` to the pooler's \
                 settings (PgBouncer's [pgbouncer] section)"
            ),
            PoolerCause::SplitStatement => "a statement's protocol exchange reached two \
                different server connections, as happens behind a transaction pooler (PgBouncer \
                pool_mode = transaction): add pooler=transaction and listen_url=<a direct \
                postgres:// URL> (or poll_only=true) to the Docket URL"
                .to_owned(),
            PoolerCause::NoDatabase => format!(
                "the connection pooler has no database `{named}`: add it to the pooler's \
                 [databases] section (PgBouncer), or connect to a database it lists"
            ),
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
    let pooler_config = PoolerCause::of(driver.code.as_deref(), &driver.message)
        .is_some_and(PoolerCause::is_permanent);
    match &error {
        sqlx::Error::Database(_) => {
            if !pooler_config && driver.code.as_deref().is_some_and(retryable_sqlstate) {
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

    /// Each pooler-caused failure names its fix. The refused `extra_float_digits` is also
    /// tested against a real PgBouncer (`tests/pooler.rs`); the other messages are PgBouncer's
    /// and PostgreSQL's own texts, which a correctly configured store never provokes.
    #[test]
    fn pooler_failures_name_the_setting_or_option_that_fixes_them() {
        let hint = |code: &str, message: &str| {
            PoolerCause::of(Some(code), message).map(|cause| (cause, cause.hint(message)))
        };
        let cases = [
            (
                "08P01",
                "unsupported startup parameter: extra_float_digits",
                PoolerCause::StartupParameter,
                vec![
                    "ignore_startup_parameters = extra_float_digits",
                    "pooler=transaction",
                ],
            ),
            (
                "08P01",
                "unsupported startup parameter: options",
                PoolerCause::StartupParameter,
                vec!["options", "pooler=transaction", "SET LOCAL", "ALTER ROLE"],
            ),
            (
                "08P01",
                "bind message supplies 3 parameters, but prepared statement \"\" requires 27",
                PoolerCause::SplitStatement,
                vec![
                    "pool_mode = transaction",
                    "pooler=transaction",
                    "listen_url",
                ],
            ),
            (
                "26000",
                "prepared statement \"sqlx_s_1\" does not exist",
                PoolerCause::SplitStatement,
                vec!["pooler=transaction"],
            ),
            (
                "42P05",
                "prepared statement \"sqlx_s_1\" already exists",
                PoolerCause::SplitStatement,
                vec!["pooler=transaction"],
            ),
            (
                "08P01",
                "no such database: nosuch",
                PoolerCause::NoDatabase,
                vec!["[databases]", "`nosuch`"],
            ),
        ];
        for (code, message, cause, names) in cases {
            let (found, text) = hint(code, message).expect(message);
            assert_eq!(found, cause, "{message}");
            for name in names {
                assert!(text.contains(name), "{message}: {text}");
            }
        }
        assert_eq!(hint("08P01", "invalid message format"), None);
        assert_eq!(
            hint("26000", "prepared statement \"docket_0a1b\" does not exist"),
            None,
            "the pooler mode's own statements are not a misconfiguration"
        );
        assert_eq!(hint("42P01", "relation \"x\" does not exist"), None);
        let refused = DriverError {
            code: Some("08P01".into()),
            constraint: None,
            detail: None,
            message: "unsupported startup parameter: extra_float_digits".into(),
            hint: Some("fix it".into()),
        };
        assert_eq!(
            refused.to_string(),
            "unsupported startup parameter: extra_float_digits (SQLSTATE 08P01); fix it"
        );
    }
}
