//! Connection options and the `postgres://…?schema=name` URL helper.

use docket_core::store::StoreError;

/// The schema used when none is configured.
pub const DEFAULT_SCHEMA: &str = "docket";

/// The pool size used when none is configured.
pub const DEFAULT_POOL_SIZE: u32 = 10;

/// How [`crate::PostgresStore::connect`] sets itself up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresOptions {
    /// The schema holding every Docket table (validated `^[a-z_][a-z0-9_]*$`, ≤ 63 bytes).
    pub schema: String,
    /// Most pooled connections (the LISTEN connection, when used, is extra).
    pub pool_size: u32,
    /// Transaction-pooler mode: no LISTEN, no named prepared statements, no session settings.
    /// Wakeups are then unavailable and workers rely on polling.
    pub poll_only: bool,
    /// Run the schema migrations at connect (default `true`).
    pub migrate: bool,
    /// `lock_timeout` of the store's sessions, in milliseconds (`None`: the server's).
    /// A statement that waits longer for a row lock fails with a retryable `Unavailable`.
    pub lock_timeout_ms: Option<u64>,
    /// `statement_timeout` of the store's sessions, in milliseconds (`None`: the server's).
    pub statement_timeout_ms: Option<u64>,
    /// `idle_in_transaction_session_timeout`, in milliseconds (`None`: the server's). Docket
    /// never keeps a transaction open across user work; this guards against paused processes.
    pub idle_in_transaction_timeout_ms: Option<u64>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: DEFAULT_SCHEMA.to_owned(),
            pool_size: DEFAULT_POOL_SIZE,
            poll_only: false,
            migrate: true,
            lock_timeout_ms: None,
            statement_timeout_ms: None,
            idle_in_transaction_timeout_ms: None,
        }
    }
}

impl PostgresOptions {
    /// Options with `schema` and defaults otherwise.
    #[must_use]
    pub fn with_schema(schema: impl Into<String>) -> Self {
        Self {
            schema: schema.into(),
            ..Self::default()
        }
    }

    /// The session settings to send as startup parameters (`-c name=value`).
    ///
    /// Transaction poolers may refuse startup parameters (PgBouncer: see
    /// `ignore_startup_parameters`); leave these unset behind one and configure the pooler.
    #[must_use]
    pub fn session_settings(&self) -> Vec<(&'static str, String)> {
        [
            ("lock_timeout", self.lock_timeout_ms),
            ("statement_timeout", self.statement_timeout_ms),
            (
                "idle_in_transaction_session_timeout",
                self.idle_in_transaction_timeout_ms,
            ),
        ]
        .into_iter()
        .filter_map(|(name, ms)| ms.map(|ms| (name, ms.to_string())))
        .collect()
    }

    /// Checks the options.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad schema name or a zero pool size.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_schema_name(&self.schema)?;
        if self.pool_size == 0 {
            return Err(StoreError::invalid_argument("pool_size must be at least 1"));
        }
        Ok(())
    }
}

/// Checks that `name` is a safe, unquoted PostgreSQL identifier: `^[a-z_][a-z0-9_]*$`, at
/// most 63 bytes. Schema names are interpolated into SQL text, so nothing else is accepted.
///
/// # Errors
/// `InvalidArgument` naming the rule that failed.
pub fn validate_schema_name(name: &str) -> Result<(), StoreError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !first_ok || !rest_ok {
        return Err(StoreError::invalid_argument(format!(
            "schema name {name:?} must match ^[a-z_][a-z0-9_]*$"
        )));
    }
    if name.len() > 63 {
        return Err(StoreError::invalid_argument(format!(
            "schema name {name:?} is longer than 63 bytes"
        )));
    }
    Ok(())
}

/// Splits Docket's own query parameters off a connection URL.
///
/// `schema=NAME`, `pool_size=N` and `poll_only=true|false` are removed and returned as
/// options; every other parameter is kept in the returned URL for the driver.
///
/// ```
/// let (url, options) =
///     docket_postgres::parse_url("postgres://u@h/db?schema=jobs&sslmode=disable&poll_only=true")
///         .expect("valid url");
/// assert_eq!(url, "postgres://u@h/db?sslmode=disable");
/// assert_eq!(options.schema, "jobs");
/// assert!(options.poll_only);
/// ```
///
/// # Errors
/// `InvalidArgument` for a scheme other than `postgres`/`postgresql`, a bad schema name or
/// an unparsable value.
pub fn parse_url(url: &str) -> Result<(String, PostgresOptions), StoreError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(StoreError::invalid_argument(
            "a PostgreSQL URL starts with postgres:// or postgresql://",
        ));
    }
    let mut options = PostgresOptions::default();
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "schema" => options.schema = value.to_owned(),
            "pool_size" => {
                options.pool_size = value.parse().map_err(|_| {
                    StoreError::invalid_argument(format!("pool_size {value:?} is not a number"))
                })?;
            }
            "poll_only" => {
                options.poll_only = match value {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    other => {
                        return Err(StoreError::invalid_argument(format!(
                            "poll_only {other:?} is not true or false"
                        )))
                    }
                };
            }
            _ => kept.push(pair),
        }
    }
    options.validate()?;
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_lowercase_identifiers() {
        for ok in ["docket", "_x", "a1_b2", &"a".repeat(63)] {
            assert!(validate_schema_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "Docket",
            "a-b",
            "a;drop",
            "a b",
            "\"x\"",
            &"a".repeat(64),
        ] {
            assert!(validate_schema_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn url_parameters_are_split_from_driver_parameters() {
        let (url, options) =
            parse_url("postgres://u@h:5/db?sslmode=disable&schema=s1&pool_size=3").expect("url");
        assert_eq!(url, "postgres://u@h:5/db?sslmode=disable");
        assert_eq!(
            options,
            PostgresOptions {
                schema: "s1".into(),
                pool_size: 3,
                ..PostgresOptions::default()
            }
        );
        let (url, options) = parse_url("postgresql://h/db").expect("url");
        assert_eq!(
            (url.as_str(), options.schema.as_str()),
            ("postgresql://h/db", "docket")
        );
        assert!(parse_url("postgres://h/db?schema=Bad").is_err());
        assert!(parse_url("postgres://h/db?pool_size=x").is_err());
        assert!(parse_url("postgres://h/db?pool_size=0").is_err());
        assert!(parse_url("mysql://h/db").is_err());
    }
}
