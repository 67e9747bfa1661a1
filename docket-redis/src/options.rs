//! Connection settings and the server checks made at connect time.

use std::sync::Arc;
use std::time::Duration;

use docket_core::model::excerpt;
use docket_core::ops::rules::Retention;
use docket_core::store::url::{
    join_query, number, redact, split_query, unknown_option, Param, MAX_TIMEOUT_MS,
};
use docket_core::store::{Message, StoreError};

use crate::keys::{namespace_is_valid, MAX_NAMESPACE_LEN};

/// How to reach Redis and which namespace to use. Its `Debug` shows the URL without its
/// password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// A `redis://` (or `rediss://`, `unix://`) URL.
    pub url: String,
    /// The namespace: every key lives under the hash tag `{docket:<namespace>}`.
    /// `[A-Za-z0-9._-]`, at most 128 bytes.
    pub namespace: String,
    /// How long to wait for the reply to one command or script (URL option
    /// `statement_timeout_ms`, default 10 s). A read that times out is a retryable
    /// `Unavailable`; a write whose reply times out is [`StoreError::Ambiguous`], so keep this
    /// well above the slowest script.
    pub response_timeout: Duration,
    /// How long establishing a connection may take (URL option `connect_timeout_ms`,
    /// default 10 s): the first connection at start-up, and each reconnection attempt.
    pub connection_timeout: Duration,
    /// How many terminal operation records the registry keeps per owner (URL option
    /// `ops_retention`, default 256): an ending that takes an owner past it evicts the
    /// owner's oldest terminal records in the same script.
    pub ops_retention: Retention,
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &redact(&self.url))
            .field("namespace", &self.namespace)
            .field("response_timeout", &self.response_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("ops_retention", &self.ops_retention.max_terminal())
            .finish()
    }
}

/// The namespace of [`parse_url`] when the URL names none.
pub const DEFAULT_NAMESPACE: &str = "docket";

/// The URL query parameter that names the namespace in [`parse_url`].
pub const NAMESPACE_PARAM: &str = "namespace";

/// Docket's own query parameters of a `redis://` URL (every other one goes to the client).
pub const URL_OPTIONS: &[&str] = &[
    NAMESPACE_PARAM,
    "connect_timeout_ms",
    "statement_timeout_ms",
    "ops_retention",
];

/// The query parameters the Redis client understands (`protocol`; `db`, `user` and `pass`
/// of `unix://` URLs), passed to it unchanged. Any other parameter is refused: the client
/// would silently ignore it.
pub const CLIENT_PARAMS: &[&str] = &["protocol", "db", "user", "pass"];

/// The default of [`RedisOptions::connection_timeout`], in milliseconds.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;

/// The default of [`RedisOptions::response_timeout`], in milliseconds.
pub const DEFAULT_STATEMENT_TIMEOUT_MS: u64 = 10_000;

impl RedisOptions {
    /// Default settings for `url` and `namespace` (10 s replies, 10 s to connect, 256
    /// terminal operation records per owner).
    #[must_use]
    pub fn new(url: impl Into<String>, namespace: impl Into<String>) -> Self {
        RedisOptions {
            url: url.into(),
            namespace: namespace.into(),
            response_timeout: Duration::from_millis(DEFAULT_STATEMENT_TIMEOUT_MS),
            connection_timeout: Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS),
            ops_retention: Retention::default(),
        }
    }

    fn parse(url: &str) -> Result<Self, ConnectError> {
        // Every parameter, Docket's or the client's, at most once.
        let (base, params) = split_query("redis", url).map_err(|e| match e {
            StoreError::InvalidArgument { reason } => ConnectError::InvalidUrl(reason),
            other => ConnectError::Store(other),
        })?;
        let timeout = |key: &str, value: Option<&str>| {
            number("redis", key, value, 1..=MAX_TIMEOUT_MS)
                .map(Duration::from_millis)
                .map_err(|e| ConnectError::InvalidUrl(e.to_string()))
        };
        let mut namespace: Option<&str> = None;
        let mut kept: Vec<&str> = Vec::new();
        let mut connection_timeout = Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS);
        let mut response_timeout = Duration::from_millis(DEFAULT_STATEMENT_TIMEOUT_MS);
        let mut ops_retention = Retention::default();
        for Param { key, value, raw } in params {
            match (key, value) {
                (NAMESPACE_PARAM, Some(value)) => namespace = Some(value),
                (NAMESPACE_PARAM, None) => {
                    return Err(ConnectError::InvalidNamespace(String::new()));
                }
                ("connect_timeout_ms", value) => connection_timeout = timeout(key, value)?,
                ("statement_timeout_ms", value) => response_timeout = timeout(key, value)?,
                ("ops_retention", value) => {
                    let kept = number("redis", key, value, 1..=u64::from(u32::MAX))
                        .map_err(|e| ConnectError::InvalidUrl(e.to_string()))?;
                    // In range, so it fits a u32 and is not zero.
                    ops_retention = Retention::new(u32::try_from(kept).unwrap_or(u32::MAX))
                        .map_err(|e| ConnectError::InvalidUrl(e.to_string()))?;
                }
                (driver, _) if CLIENT_PARAMS.contains(&driver) => kept.push(raw),
                (unknown, _) => {
                    let known = [URL_OPTIONS, CLIENT_PARAMS].concat();
                    return Err(ConnectError::InvalidUrl(
                        unknown_option("redis", unknown, &known).to_string(),
                    ));
                }
            }
        }
        let namespace = namespace.unwrap_or(DEFAULT_NAMESPACE);
        check_namespace(namespace)?;
        Ok(RedisOptions {
            connection_timeout,
            response_timeout,
            ops_retention,
            ..RedisOptions::new(join_query(base, &kept), namespace)
        })
    }
}

/// The options [`crate::RedisStore::open`] takes, from one URL that may carry Docket's options
/// ([`URL_OPTIONS`]) as query parameters, e.g.
/// `redis://host:6379/0?namespace=prod&connect_timeout_ms=3000`. They are removed from the
/// URL handed to the Redis client; the client's own ([`CLIENT_PARAMS`]) are kept for it, and
/// any other is refused. Every parameter may appear at most once.
///
/// | option | values | default |
/// | --- | --- | --- |
/// | `namespace` | 1..=128 characters from `[A-Za-z0-9._-]` | `docket` |
/// | `connect_timeout_ms` | `1..=3600000` | `10000` |
/// | `statement_timeout_ms` | `1..=3600000` (each command or script reply) | `10000` |
/// | `ops_retention` | `1..=4294967295` (terminal operation records kept per owner) | `256` |
///
/// # Errors
/// `InvalidArgument` for an empty or invalid namespace, an unknown parameter or one given
/// more than once, or a malformed or out-of-range timeout or retention (the message names
/// the range).
pub fn parse_url(url: &str) -> Result<RedisOptions, StoreError> {
    RedisOptions::parse(url).map_err(StoreError::from)
}

/// Why [`crate::RedisStore::open`] refused to start. The store's constructors return it
/// inside a [`StoreError`]: the namespace and URL errors as `InvalidArgument`, an evicting
/// server as a permanent `Unavailable` whose source is [`ConnectError::EvictionPolicy`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The namespace is empty, too long or uses characters outside `[A-Za-z0-9._-]`.
    #[error("invalid namespace {0:?}: use 1..={MAX_NAMESPACE_LEN} characters from [A-Za-z0-9._-]")]
    InvalidNamespace(String),
    /// The URL cannot be parsed.
    #[error("invalid Redis URL: {0}")]
    InvalidUrl(String),
    /// The server may evict keys, which would silently delete runs, claims and events.
    #[error(
        "Redis maxmemory-policy is {policy:?}: Docket requires `noeviction` \
         (run `CONFIG SET maxmemory-policy noeviction` and persist it in redis.conf)"
    )]
    EvictionPolicy {
        /// The policy the server reported.
        policy: String,
    },
    /// The server could not be reached or answered with an error.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ConnectError> for StoreError {
    fn from(err: ConnectError) -> Self {
        match err {
            ConnectError::Store(e) => e,
            ConnectError::InvalidNamespace(_) | ConnectError::InvalidUrl(_) => {
                StoreError::invalid_argument(err.to_string())
            }
            ConnectError::EvictionPolicy { .. } => StoreError::Unavailable {
                retryable: false,
                source: Arc::new(err),
            },
        }
    }
}

/// Checks a namespace.
///
/// # Errors
/// [`ConnectError::InvalidNamespace`].
pub fn check_namespace(namespace: &str) -> Result<(), ConnectError> {
    if namespace_is_valid(namespace) {
        Ok(())
    } else {
        Err(ConnectError::InvalidNamespace(
            excerpt(namespace).into_owned(),
        ))
    }
}

/// The eviction check made at connect: anything but `noeviction` is refused, because an evicted
/// run hash, claim entry or event would be lost without any error.
///
/// # Errors
/// [`ConnectError::EvictionPolicy`] naming the policy.
pub fn check_eviction_policy(policy: &str) -> Result<(), ConnectError> {
    if policy.eq_ignore_ascii_case("noeviction") {
        Ok(())
    } else {
        Err(ConnectError::EvictionPolicy {
            policy: policy.to_owned(),
        })
    }
}

/// The warnings logged at connect for a persistence setting that can lose acknowledged
/// commits (`appendonly` and `appendfsync` as `CONFIG GET` reports them).
#[must_use]
pub fn persistence_warnings(appendonly: &str, appendfsync: &str) -> Vec<String> {
    if !appendonly.eq_ignore_ascii_case("yes") {
        return vec![
            "Redis AOF is off (appendonly no): a server crash or restart loses every \
             acknowledged Docket commit since the last RDB snapshot, or all of them without one"
                .to_owned(),
        ];
    }
    if !appendfsync.eq_ignore_ascii_case("always") {
        return vec![format!(
            "Redis appendfsync is {appendfsync:?}, not \"always\": a crash can lose acknowledged \
             Docket commits (about one second with everysec; whatever the OS had not flushed \
             with no)"
        )];
    }
    Vec::new()
}

pub(crate) fn unavailable(detail: impl Into<String>) -> StoreError {
    StoreError::permanent(Message(detail.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::store::StoreErrorKind;

    #[test]
    fn only_noeviction_passes_the_eviction_check() {
        assert!(check_eviction_policy("noeviction").is_ok());
        for policy in [
            "allkeys-lru",
            "volatile-lru",
            "allkeys-random",
            "volatile-ttl",
        ] {
            let err = check_eviction_policy(policy).expect_err("evicting policy");
            assert!(err.to_string().contains(policy));
            let store: StoreError = err.into();
            assert_eq!(store.kind(), StoreErrorKind::Unavailable);
            assert!(!store.is_retryable());
        }
    }

    #[test]
    fn the_namespace_comes_from_the_url_query_and_leaves_the_rest() {
        let c = RedisOptions::parse("redis://127.0.0.1:6379/2?namespace=prod.a-1").expect("valid");
        assert_eq!(c.url, "redis://127.0.0.1:6379/2");
        assert_eq!(c.namespace, "prod.a-1");
        let c = RedisOptions::parse("redis://h?protocol=resp3&namespace=n&db=1").expect("valid");
        assert_eq!(c.url, "redis://h?protocol=resp3&db=1");
        assert_eq!(c.namespace, "n");
        let c =
            RedisOptions::parse("redis://h?connect_timeout_ms=1500&db=1&statement_timeout_ms=2500")
                .expect("valid");
        assert_eq!(c.url, "redis://h?db=1");
        assert_eq!(c.connection_timeout, Duration::from_millis(1_500));
        assert_eq!(c.response_timeout, Duration::from_millis(2_500));
        assert_eq!(c.ops_retention, Retention::default());
        let c = RedisOptions::parse("redis://h?ops_retention=3&db=1").expect("valid");
        assert_eq!(c.url, "redis://h?db=1");
        assert_eq!(c.ops_retention.max_terminal(), 3);
        let c = RedisOptions::parse("redis://h?ops_retention=4294967295").expect("valid");
        assert_eq!(c.ops_retention.max_terminal(), u32::MAX);
        let c = RedisOptions::parse("redis://h:1/").expect("valid");
        assert_eq!(
            (c.url.as_str(), c.namespace.as_str()),
            ("redis://h:1/", DEFAULT_NAMESPACE)
        );
    }

    #[test]
    fn a_bad_or_repeated_namespace_in_the_url_is_refused() {
        for url in [
            "redis://h?namespace=",
            "redis://h?namespace",
            "redis://h?namespace=a*b",
            "redis://h?namespace=%7Bx%7D",
        ] {
            assert!(
                matches!(
                    RedisOptions::parse(url),
                    Err(ConnectError::InvalidNamespace(_))
                ),
                "{url}"
            );
        }
        for url in [
            "redis://h?namespace=a&namespace=b",
            "redis://h?protocol=resp3&protocol=resp2",
            "redis://h?connect_timeout_ms=0",
            "redis://h?connect_timeout_ms=3600001",
            "redis://h?statement_timeout_ms=x",
            "redis://h?statement_timeout_ms",
            "redis://h?statement_timeout_ms=1&statement_timeout_ms=2",
            "redis://h?x=1",
            "redis://h?ops_retention=0",
            "redis://h?ops_retention=4294967296",
            "redis://h?ops_retention=-1",
            "redis://h?ops_retention=x",
            "redis://h?ops_retention",
            "redis://h?ops_retention=1&ops_retention=1",
        ] {
            assert!(
                matches!(RedisOptions::parse(url), Err(ConnectError::InvalidUrl(_))),
                "{url}"
            );
        }
    }

    #[test]
    fn persistence_warnings_name_the_risk() {
        assert!(persistence_warnings("yes", "always").is_empty());
        assert!(persistence_warnings("yes", "everysec")[0].contains("everysec"));
        assert!(persistence_warnings("no", "always")[0].contains("AOF is off"));
    }
}
