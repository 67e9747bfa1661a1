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
    /// No LISTEN connection: wakeups are unavailable and workers rely on polling. Meant for a
    /// transaction pooler with no direct route to the server, so it implies
    /// [`Pooler::Transaction`] (see [`PostgresOptions::transaction_pooled`]).
    pub poll_only: bool,
    /// The connection pooler between the store and the server (URL `pooler=`; default
    /// [`Pooler::None`]).
    pub pooler: Pooler,
    /// A direct URL (no transaction pooler in between) for the LISTEN connection of wakeups
    /// (URL `listen_url=`, percent-encoded when it has its own `?…`); statements still go to
    /// the store's URL. `None`: LISTEN on the store's URL.
    pub listen_url: Option<String>,
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
            pooler: Pooler::None,
            listen_url: None,
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

    /// Whether statements must be safe behind a transaction pooler: `pooler=transaction`, or
    /// `poll_only=true` (which exists for such deployments).
    #[must_use]
    pub fn transaction_pooled(&self) -> bool {
        self.pooler == Pooler::Transaction || self.poll_only
    }

    /// Checks the options.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad schema name, a zero pool size, a `listen_url` that is not a
    /// PostgreSQL URL or that contradicts `poll_only`, and `pooler=transaction` without a
    /// route for LISTEN (`listen_url`) or `poll_only`.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_schema_name(&self.schema)?;
        if self.pool_size == 0 {
            return Err(StoreError::invalid_argument("pool_size must be at least 1"));
        }
        self.validate_pooler()
    }

    fn validate_pooler(&self) -> Result<(), StoreError> {
        match &self.listen_url {
            Some(_) if self.poll_only => Err(StoreError::invalid_argument(
                "listen_url and poll_only=true exclude each other: poll_only turns LISTEN off",
            )),
            Some(url) if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) => {
                Err(StoreError::invalid_argument(
                    "listen_url must be a postgres:// URL (percent-encode its own ?, & and =)",
                ))
            }
            None if self.pooler == Pooler::Transaction && !self.poll_only => {
                Err(StoreError::invalid_argument(
                    "pooler=transaction: LISTEN cannot work through a transaction pooler; add \
                     listen_url=<a direct postgres:// URL> for push wakeups, or poll_only=true \
                     to rely on polling",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The connection pooler between a store and PostgreSQL (URL `pooler=none|transaction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pooler {
    /// Connected to the server directly, or through a pooler that gives each client its own
    /// server connection (PgBouncer `pool_mode = session`): statements are prepared once per
    /// connection and reused.
    #[default]
    None,
    /// A transaction pooler (PgBouncer `pool_mode = transaction`): consecutive transactions of
    /// one client may run on different server connections. Every statement is then one simple
    /// query carrying its own parameters, nothing is sent as a startup parameter, and session
    /// settings are applied with `SET LOCAL` inside each statement's transaction (crate docs).
    Transaction,
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
/// `schema=NAME`, `pool_size=N`, `poll_only=true|false`, `pooler=none|transaction` and
/// `listen_url=URL` (percent-decoded) are removed and returned as options; every other
/// parameter is kept in the returned URL for the driver.
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
            "pooler" => {
                options.pooler = match value {
                    "none" => Pooler::None,
                    "transaction" => Pooler::Transaction,
                    other => {
                        return Err(StoreError::invalid_argument(format!(
                            "pooler {other:?} is not none or transaction"
                        )))
                    }
                };
            }
            "listen_url" => {
                let decoded = percent_encoding::percent_decode_str(value)
                    .decode_utf8()
                    .map_err(|_| StoreError::invalid_argument("listen_url is not UTF-8"))?;
                options.listen_url = Some(decoded.into_owned());
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

    #[test]
    fn pooler_options_name_their_fix() {
        let direct = "postgres%3A%2F%2Fu%40h%3A5432%2Fdb%3Fsslmode%3Ddisable";
        let (url, options) = parse_url(&format!(
            "postgres://u@h:6432/db?pooler=transaction&listen_url={direct}&sslmode=disable"
        ))
        .expect("url");
        assert_eq!(url, "postgres://u@h:6432/db?sslmode=disable");
        assert_eq!(options.pooler, Pooler::Transaction);
        assert_eq!(
            options.listen_url.as_deref(),
            Some("postgres://u@h:5432/db?sslmode=disable")
        );
        assert!(options.transaction_pooled());
        let (_, raw) =
            parse_url("postgres://h/db?pooler=transaction&listen_url=postgres://u@h:5432/db")
                .expect("a raw listen_url without its own query");
        assert_eq!(raw.listen_url.as_deref(), Some("postgres://u@h:5432/db"));
        let (_, polling) = parse_url("postgres://h/db?poll_only=true").expect("url");
        assert!(
            polling.transaction_pooled(),
            "poll_only keeps meaning a pooler"
        );
        let error = |url: &str| parse_url(url).expect_err(url).to_string();
        for (url, names) in [
            (
                "postgres://h/db?pooler=transaction",
                ["listen_url", "poll_only=true"],
            ),
            (
                "postgres://h/db?poll_only=true&listen_url=postgres://h/db",
                ["listen_url", "poll_only"],
            ),
            (
                "postgres://h/db?listen_url=redis://h",
                ["listen_url", "postgres://"],
            ),
            ("postgres://h/db?pooler=session", ["pooler", "transaction"]),
        ] {
            let message = error(url);
            for name in names {
                assert!(message.contains(name), "{url}: {message}");
            }
        }
    }
}
