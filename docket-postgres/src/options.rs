//! Connection options and the `postgres://…?schema=name` URL helper.

use std::fmt;

use docket_core::model::excerpt;
use docket_core::ops::rules::Retention;
use docket_core::store::url::{
    boolean, join_query, number, redact, split_query, unknown_option, Param, MAX_TIMEOUT_MS,
};
use docket_core::store::StoreError;

/// The schema used when none is configured.
pub const DEFAULT_SCHEMA: &str = "docket";

/// The pool size used when none is configured.
pub const DEFAULT_POOL_SIZE: u32 = 10;

/// The largest pool size accepted.
pub const MAX_POOL_SIZE: u32 = 1_000;

/// How long establishing a connection may take when none is configured (10 s).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;

/// The `statement_timeout` of every statement when none is configured (30 s).
pub const DEFAULT_STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// The server URL of [`PostgresOptions::default`]: the local server's `postgres` database.
pub const DEFAULT_URL: &str = "postgres://localhost:5432/postgres";

/// How [`crate::PostgresStore::open`] reaches the server and sets itself up. Its `Debug`
/// shows the URLs without their passwords.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// The connection URL handed to the driver: a `postgres://` URL with only the driver's own
    /// query parameters ([`DRIVER_PARAMS`]); Docket's are fields of these options. Default
    /// [`DEFAULT_URL`].
    pub url: String,
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
    /// Allow the `public` schema (default `false`): Docket's tables and function then share
    /// the schema every role sees by default, which is rarely what an operator meant.
    pub allow_public_schema: bool,
    /// `lock_timeout` of the store's sessions, in milliseconds (`None`: the server's).
    /// A statement that waits longer for a row lock fails with a retryable `Unavailable`.
    pub lock_timeout_ms: Option<u64>,
    /// `statement_timeout` of the store's statements, in milliseconds: a statement running
    /// longer fails with a retryable `Unavailable`. `None` means
    /// [`DEFAULT_STATEMENT_TIMEOUT_MS`]. Sent as a session setting on a direct connection and
    /// with `SET LOCAL` in each statement's transaction behind a transaction pooler.
    pub statement_timeout_ms: Option<u64>,
    /// How long establishing a connection may take, in milliseconds (the first connection
    /// at start-up, and every connection the pool opens or waits for). Default
    /// [`DEFAULT_CONNECT_TIMEOUT_MS`]; past it, a retryable `Unavailable`.
    pub connect_timeout_ms: u64,
    /// `idle_in_transaction_session_timeout`, in milliseconds (`None`: the server's). Docket
    /// never keeps a transaction open across user work; this guards against paused processes.
    pub idle_in_transaction_timeout_ms: Option<u64>,
    /// Terminal operation records the registry keeps per owner (URL `ops_retention=`,
    /// default 256): an ending beyond it evicts the owner's oldest terminal records in the
    /// same write.
    pub ops_retention: Retention,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            url: DEFAULT_URL.to_owned(),
            schema: DEFAULT_SCHEMA.to_owned(),
            pool_size: DEFAULT_POOL_SIZE,
            poll_only: false,
            pooler: Pooler::None,
            listen_url: None,
            migrate: true,
            allow_public_schema: false,
            lock_timeout_ms: None,
            statement_timeout_ms: None,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            idle_in_transaction_timeout_ms: None,
            ops_retention: Retention::default(),
        }
    }
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &redact(&self.url))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("poll_only", &self.poll_only)
            .field("pooler", &self.pooler)
            .field("listen_url", &self.listen_url.as_deref().map(redact))
            .field("migrate", &self.migrate)
            .field("allow_public_schema", &self.allow_public_schema)
            .field("lock_timeout_ms", &self.lock_timeout_ms)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field(
                "idle_in_transaction_timeout_ms",
                &self.idle_in_transaction_timeout_ms,
            )
            .field("ops_retention", &self.ops_retention.max_terminal())
            .finish()
    }
}

impl PostgresOptions {
    /// The default options for the server at `url` (a `postgres://` URL carrying only the
    /// driver's parameters; use [`parse_url`] for one that also carries Docket's).
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    /// These options with `url` replaced.
    #[must_use]
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// Options with `schema` and defaults otherwise.
    #[must_use]
    pub fn with_schema(schema: impl Into<String>) -> Self {
        Self {
            schema: schema.into(),
            ..Self::default()
        }
    }

    /// The session settings to send as startup parameters (`-c name=value`): `jit = off`,
    /// then the timeouts that are set.
    ///
    /// JIT compilation is always off for Docket's sessions. PostgreSQL compiles a statement
    /// whose estimated cost passes `jit_above_cost`, on every execution, and the estimates of
    /// a plan made for any arguments grow with the table's size on disk: on a 1.5 GB `runs`
    /// table the tenant-fair claim's probe for an expired claim was estimated at 114,506 and
    /// compiled each time (4.6 ms, where the probe itself took 0.02 ms), which cut fair claims
    /// to a fifth of their rate. Every Docket statement is a handful of index probes, which
    /// compiling never pays for.
    ///
    /// Transaction poolers may refuse startup parameters (PgBouncer: see
    /// `ignore_startup_parameters`); behind one (`pooler=transaction`) these are sent as
    /// `SET LOCAL` in front of each statement instead.
    #[must_use]
    pub fn session_settings(&self) -> Vec<(&'static str, String)> {
        let timeouts = [
            ("lock_timeout", self.lock_timeout_ms),
            ("statement_timeout", self.effective_statement_timeout_ms()),
            (
                "idle_in_transaction_session_timeout",
                self.idle_in_transaction_timeout_ms,
            ),
        ]
        .into_iter()
        .filter_map(|(name, ms)| ms.map(|ms| (name, ms.to_string())));
        std::iter::once(("jit", "off".to_owned()))
            .chain(timeouts)
            .collect()
    }

    /// The `statement_timeout` of every statement (see
    /// [`PostgresOptions::statement_timeout_ms`]).
    #[must_use]
    pub fn effective_statement_timeout_ms(&self) -> Option<u64> {
        Some(
            self.statement_timeout_ms
                .unwrap_or(DEFAULT_STATEMENT_TIMEOUT_MS),
        )
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
    /// `InvalidArgument` for a bad or reserved schema name (see [`check_schema_allowed`]), a
    /// pool size outside `1..=1000`, a connect or statement timeout outside `1..=3600000` ms,
    /// a `listen_url` that is not a PostgreSQL URL or that contradicts `poll_only`, and
    /// `pooler=transaction` without a route for LISTEN (`listen_url`) or `poll_only`.
    pub fn validate(&self) -> Result<(), StoreError> {
        for (name, ms) in [
            ("connect_timeout_ms", Some(self.connect_timeout_ms)),
            ("statement_timeout_ms", self.statement_timeout_ms),
        ] {
            if ms.is_some_and(|ms| !(1..=MAX_TIMEOUT_MS).contains(&ms)) {
                return Err(StoreError::invalid_argument(format!(
                    "{name} must be in 1..={MAX_TIMEOUT_MS}, got {}",
                    ms.unwrap_or_default()
                )));
            }
        }
        validate_schema_name(&self.schema)?;
        check_schema_allowed(&self.schema, self.allow_public_schema)?;
        if self.pool_size == 0 || self.pool_size > MAX_POOL_SIZE {
            return Err(StoreError::invalid_argument(format!(
                "pool_size must be in 1..={MAX_POOL_SIZE}, got {}",
                self.pool_size
            )));
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
            "schema name {:?} must match ^[a-z_][a-z0-9_]*$",
            excerpt(name)
        )));
    }
    if name.len() > 63 {
        return Err(StoreError::invalid_argument(format!(
            "schema name {:?} is longer than 63 bytes",
            excerpt(name)
        )));
    }
    Ok(())
}

/// Docket's own query parameters of a `postgres://` URL (every other one goes to the driver).
pub const URL_OPTIONS: &[&str] = &[
    "schema",
    "pool_size",
    "poll_only",
    "allow_public_schema",
    "connect_timeout_ms",
    "connect_timeout",
    "statement_timeout_ms",
    "pooler",
    "listen_url",
    "ops_retention",
];

/// Refuses the schemas PostgreSQL keeps for itself — `information_schema` and every `pg_*`
/// name (`pg_catalog`, `pg_toast`, …; PostgreSQL reserves the prefix) — and `public` unless
/// `allow_public`: Docket creates tables and a function in its schema, and migrating into a
/// system schema (or, by accident, the shared default one) is never wanted.
///
/// # Errors
/// `InvalidArgument` naming the schema and how to choose another.
pub fn check_schema_allowed(name: &str, allow_public: bool) -> Result<(), StoreError> {
    if name == "information_schema" || name.starts_with("pg_") {
        return Err(StoreError::invalid_argument(format!(
            "schema {name:?} belongs to PostgreSQL itself; give Docket its own schema \
             (?schema=NAME, default {DEFAULT_SCHEMA:?})"
        )));
    }
    if name == "public" && !allow_public {
        return Err(StoreError::invalid_argument(
            "schema \"public\" is shared by every role by default; give Docket its own schema \
             (?schema=NAME), or add allow_public_schema=true to use it anyway",
        ));
    }
    Ok(())
}

/// The query parameters the driver (sqlx) understands, passed to it unchanged; with
/// `options[NAME]`. Any other parameter is refused: the driver would ignore it with a mere
/// warning (as it did libpq's `connect_timeout`), leaving the operator to believe it applied.
pub const DRIVER_PARAMS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
];

fn is_driver_param(key: &str) -> bool {
    DRIVER_PARAMS.contains(&key) || (key.starts_with("options[") && key.ends_with(']'))
}

/// Splits Docket's own query parameters off a connection URL: the options
/// [`crate::PostgresStore::open`] takes.
///
/// Docket's parameters ([`URL_OPTIONS`]) are removed and become fields of the options; the
/// driver's ([`DRIVER_PARAMS`]) are kept in [`PostgresOptions::url`] for it, and any other is
/// refused. Every
/// parameter, Docket's or the driver's, may appear at most once.
///
/// | parameter | values | default |
/// | --- | --- | --- |
/// | `schema` | `^[a-z_][a-z0-9_]*$`, ≤ 63 bytes | `docket` |
/// | `pool_size` | `1..=1000` | `10` |
/// | `poll_only` | `true`/`1` or `false`/`0` | `false` |
/// | `allow_public_schema` | `true`/`1` or `false`/`0` | `false` |
/// | `connect_timeout_ms` | `1..=3600000` | `10000` |
/// | `connect_timeout` | seconds, `1..=3600` (libpq's name; not with `connect_timeout_ms`) | |
/// | `statement_timeout_ms` | `1..=3600000` | `30000` |
/// | `pooler` | `none` or `transaction` | `none` |
/// | `listen_url` | a direct `postgres://` URL, percent-encoded | the store's URL |
/// | `ops_retention` | `1..=4294967295` (terminal operation records kept per owner) | `256` |
///
/// `schema` may not name a PostgreSQL system schema (`information_schema`, `pg_*`), nor
/// `public` without `allow_public_schema=true` (see [`check_schema_allowed`]).
///
/// ```
/// let options =
///     docket_postgres::parse_url("postgres://u@h/db?schema=jobs&sslmode=disable&poll_only=true")
///         .expect("valid url");
/// assert_eq!(options.url, "postgres://u@h/db?sslmode=disable");
/// assert_eq!(options.schema, "jobs");
/// assert!(options.poll_only);
/// ```
///
/// # Errors
/// `InvalidArgument` for a scheme other than `postgres`/`postgresql`, an unknown or repeated
/// parameter, a bad schema name, or a malformed or out-of-range value (the message names the
/// range).
pub fn parse_url(url: &str) -> Result<PostgresOptions, StoreError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(StoreError::invalid_argument(
            "a PostgreSQL URL starts with postgres:// or postgresql://",
        ));
    }
    let mut options = PostgresOptions::default();
    // Every parameter, Docket's and the driver's, at most once: a repeated one is refused
    // rather than resolved by whichever the parser happens to read last.
    let (base, params) = split_query("postgres", url)?;
    let mut kept = Vec::new();
    let mut connect_timeout_given = false;
    for Param { key, value, raw } in params {
        match key {
            "schema" => options.schema = value.unwrap_or_default().to_owned(),
            "pool_size" => {
                // In range, so it fits a u32.
                options.pool_size = u32::try_from(number(
                    "postgres",
                    key,
                    value,
                    1..=u64::from(MAX_POOL_SIZE),
                )?)
                .unwrap_or(DEFAULT_POOL_SIZE);
            }
            "poll_only" => options.poll_only = boolean("postgres", key, value)?,
            "allow_public_schema" => {
                options.allow_public_schema = boolean("postgres", key, value)?;
            }
            "connect_timeout_ms" | "connect_timeout" => {
                if connect_timeout_given {
                    return Err(StoreError::invalid_argument(
                        "give one of connect_timeout (seconds) and connect_timeout_ms",
                    ));
                }
                connect_timeout_given = true;
                options.connect_timeout_ms = if key == "connect_timeout" {
                    number("postgres", key, value, 1..=MAX_TIMEOUT_MS / 1_000)? * 1_000
                } else {
                    number("postgres", key, value, 1..=MAX_TIMEOUT_MS)?
                };
            }
            "statement_timeout_ms" => {
                options.statement_timeout_ms =
                    Some(number("postgres", key, value, 1..=MAX_TIMEOUT_MS)?);
            }
            "pooler" => {
                options.pooler = match value {
                    Some("none") => Pooler::None,
                    Some("transaction") => Pooler::Transaction,
                    other => {
                        return Err(StoreError::invalid_argument(format!(
                            "postgres URL option pooler must be none or transaction, got {:?}",
                            excerpt(other.unwrap_or_default())
                        )))
                    }
                };
            }
            "listen_url" => {
                let decoded = percent_encoding::percent_decode_str(value.unwrap_or_default())
                    .decode_utf8()
                    .map_err(|_| StoreError::invalid_argument("listen_url is not UTF-8"))?;
                options.listen_url = Some(decoded.into_owned());
            }
            "ops_retention" => {
                let kept = number("postgres", key, value, 1..=u64::from(u32::MAX))?;
                // In range, so it fits a u32 and is not 0.
                options.ops_retention = Retention::new(u32::try_from(kept).unwrap_or(u32::MAX))
                    .map_err(|e| StoreError::invalid_argument(e.to_string()))?;
            }
            driver if is_driver_param(driver) => kept.push(raw),
            unknown => {
                let known = [URL_OPTIONS, DRIVER_PARAMS, &["options[NAME]"]].concat();
                return Err(unknown_option("postgres", unknown, &known));
            }
        }
    }
    options.validate()?;
    options.url = join_query(base, &kept);
    Ok(options)
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
        let options =
            parse_url("postgres://u@h:5/db?sslmode=disable&schema=s1&pool_size=3").expect("url");
        assert_eq!(
            options,
            PostgresOptions {
                url: "postgres://u@h:5/db?sslmode=disable".into(),
                schema: "s1".into(),
                pool_size: 3,
                ..PostgresOptions::default()
            }
        );
        let options = parse_url("postgresql://h/db").expect("url");
        assert_eq!(
            (options.url.as_str(), options.schema.as_str()),
            ("postgresql://h/db", "docket")
        );
        assert!(parse_url("postgres://h/db?schema=Bad").is_err());
        assert!(parse_url("postgres://h/db?pool_size=x").is_err());
        assert!(parse_url("postgres://h/db?pool_size=0").is_err());
        let options = parse_url("postgres://h/db?ops_retention=3").expect("retention");
        assert_eq!(options.ops_retention.max_terminal(), 3);
        assert_eq!(PostgresOptions::default().ops_retention.max_terminal(), 256);
        for bad in [
            "postgres://h/db?ops_retention=0",
            "postgres://h/db?ops_retention=4294967296",
            "postgres://h/db?ops_retention=x",
            "postgres://h/db?ops_retention",
        ] {
            assert!(
                matches!(parse_url(bad), Err(StoreError::InvalidArgument { .. })),
                "{bad}"
            );
        }
        for bad in [
            "postgres://h/db?pool_size=1001",
            "postgres://h/db?pool_size=4294967296",
            "postgres://h/db?pool_size=-1",
            "postgres://h/db?pool_size",
            "postgres://h/db?poll_only=yes",
            "postgres://h/db?schema=a&schema=b",
            "postgres://h/db?pool_size=2&pool_size=3",
            "postgres://h/db?sslmode=disable&sslmode=require",
            "postgres://h/db?target_session_attrs=any",
            "postgres://h/db?schema_name=x",
        ] {
            let err = parse_url(bad).expect_err(bad);
            assert!(
                matches!(err, StoreError::InvalidArgument { .. }),
                "{bad}: {err}"
            );
        }
        for reserved in [
            "information_schema",
            "pg_catalog",
            "pg_toast",
            "pg_x",
            "public",
        ] {
            let url = format!("postgres://h/db?schema={reserved}");
            let err = parse_url(&url).expect_err(reserved);
            assert!(matches!(err, StoreError::InvalidArgument { .. }), "{err}");
            assert!(err.to_string().contains(reserved), "{err}");
        }
        let options =
            parse_url("postgres://h/db?schema=public&allow_public_schema=true").expect("allowed");
        assert_eq!(options.schema, "public");
        assert!(parse_url("postgres://h/db?schema=pg_x&allow_public_schema=true").is_err());
        assert!(parse_url("postgres://h/db?allow_public_schema=maybe").is_err());
        let options =
            parse_url("postgres://h/db?connect_timeout=3&sslmode=disable&statement_timeout_ms=250")
                .expect("timeouts");
        assert_eq!(options.url, "postgres://h/db?sslmode=disable");
        assert_eq!(options.connect_timeout_ms, 3_000);
        assert_eq!(options.effective_statement_timeout_ms(), Some(250));
        let options = parse_url("postgres://h/db?connect_timeout_ms=1500").expect("ms");
        assert_eq!(options.connect_timeout_ms, 1_500);
        assert_eq!(
            options.effective_statement_timeout_ms(),
            Some(DEFAULT_STATEMENT_TIMEOUT_MS)
        );
        // Behind a pooler the timeout still applies (as `SET LOCAL` in each statement).
        let options = parse_url("postgres://h/db?poll_only=true").expect("poll only");
        assert_eq!(
            options.effective_statement_timeout_ms(),
            Some(DEFAULT_STATEMENT_TIMEOUT_MS)
        );
        for bad in [
            "postgres://h/db?connect_timeout=0",
            "postgres://h/db?connect_timeout=3601",
            "postgres://h/db?connect_timeout_ms=0",
            "postgres://h/db?connect_timeout_ms=3600001",
            "postgres://h/db?connect_timeout=3&connect_timeout_ms=3000",
            "postgres://h/db?statement_timeout_ms=0",
            "postgres://h/db?statement_timeout_ms=x",
        ] {
            assert!(
                matches!(parse_url(bad), Err(StoreError::InvalidArgument { .. })),
                "{bad}"
            );
        }
        let err = parse_url("postgres://h/db?pool_size=5000").expect_err("too large");
        assert!(err.to_string().contains("1..=1000"), "{err}");
        assert!(parse_url("mysql://h/db").is_err());
    }

    #[test]
    fn pooler_options_name_their_fix() {
        let direct = "postgres%3A%2F%2Fu%40h%3A5432%2Fdb%3Fsslmode%3Ddisable";
        let options = parse_url(&format!(
            "postgres://u@h:6432/db?pooler=transaction&listen_url={direct}&sslmode=disable"
        ))
        .expect("url");
        assert_eq!(options.url, "postgres://u@h:6432/db?sslmode=disable");
        assert_eq!(options.pooler, Pooler::Transaction);
        assert_eq!(
            options.listen_url.as_deref(),
            Some("postgres://u@h:5432/db?sslmode=disable")
        );
        assert!(options.transaction_pooled());
        let raw = parse_url("postgres://h/db?pooler=transaction&listen_url=postgres://u@h:5432/db")
            .expect("a raw listen_url without its own query");
        assert_eq!(raw.listen_url.as_deref(), Some("postgres://u@h:5432/db"));
        let polling = parse_url("postgres://h/db?poll_only=true").expect("url");
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
