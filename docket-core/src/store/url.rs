//! Backend URL helpers every backend shares: the query string (each option at most once),
//! range-checked numbers and booleans, and credential redaction.
//!
//! Backends keep their own option names and defaults; these helpers only make sure every
//! backend refuses the same malformed inputs the same way, with the allowed range in the
//! message and never a panic. [`redact`] is the one function that makes a URL safe to show in
//! logs, errors and machine-readable output.

use std::ops::RangeInclusive;

use super::error::StoreError;
use crate::model::text::excerpt;

/// Most milliseconds any backend accepts for a timeout option (one hour).
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// One `key[=value]` item of a URL query string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// The key.
    pub key: &'a str,
    /// The value, `None` for a bare `key` without `=`.
    pub value: Option<&'a str>,
    /// The item as written (`key=value`), to hand on to a driver unchanged.
    pub raw: &'a str,
}

/// Splits `url` at its first `?` into the part before it and the query items (empty items,
/// as in `a=1&&b=2`, are skipped).
///
/// # Errors
/// `InvalidArgument` naming the key when a key appears twice: a repeated option is refused,
/// never resolved by "last one wins".
pub fn split_query<'a>(
    backend: &str,
    url: &'a str,
) -> Result<(&'a str, Vec<Param<'a>>), StoreError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<Param<'a>> = Vec::new();
    for raw in query.split('&').filter(|item| !item.is_empty()) {
        let (key, value) = match raw.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (raw, None),
        };
        if params.iter().any(|p| p.key == key) {
            return Err(StoreError::invalid_argument(format!(
                "{backend} URL option {} is given more than once; give it once",
                excerpt(key)
            )));
        }
        params.push(Param { key, value, raw });
    }
    Ok((base, params))
}

/// `base` followed by the kept query items, if any.
#[must_use]
pub fn join_query(base: &str, kept: &[&str]) -> String {
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

/// The value of option `key`, which must be an integer within `range`.
///
/// # Errors
/// `InvalidArgument` naming the option, the allowed range and (an excerpt of) the value.
pub fn number(
    backend: &str,
    key: &str,
    value: Option<&str>,
    range: RangeInclusive<u64>,
) -> Result<u64, StoreError> {
    let refuse = || {
        StoreError::invalid_argument(format!(
            "{backend} URL option {key} must be an integer in {}..={}, got {}",
            range.start(),
            range.end(),
            value.map_or_else(|| "no value".to_owned(), |v| format!("{:?}", excerpt(v))),
        ))
    };
    let parsed = value
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(refuse)?;
    if range.contains(&parsed) {
        Ok(parsed)
    } else {
        Err(refuse())
    }
}

/// The value of a boolean option `key`: `true`/`1` or `false`/`0`.
///
/// # Errors
/// `InvalidArgument` naming the option and (an excerpt of) the value.
pub fn boolean(backend: &str, key: &str, value: Option<&str>) -> Result<bool, StoreError> {
    match value {
        Some("true" | "1") => Ok(true),
        Some("false" | "0") => Ok(false),
        other => Err(StoreError::invalid_argument(format!(
            "{backend} URL option {key} must be true or false, got {}",
            other.map_or_else(|| "no value".to_owned(), |v| format!("{:?}", excerpt(v))),
        ))),
    }
}

/// The error for an option this backend does not know.
#[must_use]
pub fn unknown_option(backend: &str, key: &str, known: &[&str]) -> StoreError {
    let known = if known.is_empty() {
        "it takes none".to_owned()
    } else {
        format!("known: {}", known.join(", "))
    };
    StoreError::invalid_argument(format!(
        "unknown {backend} URL option {:?} ({known})",
        excerpt(key)
    ))
}

/// What stands in for a redacted secret.
pub const REDACTED: &str = "***";

/// `url` safe to show: the password of the user-info part (`scheme://user:PASSWORD@host`)
/// and the value of any query option whose name contains `password` (or is `pass`) are
/// replaced by [`REDACTED`]; everything else is kept, so the operator still sees which server,
/// database, schema or namespace is meant. `sqlite://` and `memory://` URLs carry no
/// credentials and are returned unchanged.
///
/// Every place that shows a backend URL (log lines, error messages, `--json` output, tracing
/// fields) goes through this function.
#[must_use]
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    if matches!(scheme.to_ascii_lowercase().as_str(), "sqlite" | "memory") {
        return url.to_owned();
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    // The user-info ends at the last `@` before the query: a password that (wrongly) holds an
    // unencoded `/` or `@` is still hidden whole.
    let location = match before_query.rfind('@') {
        Some(at) => {
            let (userinfo, host) = before_query.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:{REDACTED}{host}"),
                None => before_query.to_owned(),
            }
        }
        None => before_query.to_owned(),
    };
    let mut out = format!("{scheme}://{location}");
    if let Some(query) = query {
        let items: Vec<String> = query
            .split('&')
            .map(|item| match item.split_once('=') {
                Some((key, _)) if is_secret_key(key) => format!("{key}={REDACTED}"),
                _ => item.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&items.join("&"));
    }
    out
}

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key == "pass"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_and_the_rest_is_kept() {
        for (url, shown) in [
            (
                "postgres://app:s3cret@db:5432/prod?schema=jobs",
                "postgres://app:***@db:5432/prod?schema=jobs",
            ),
            (
                "postgresql://app:p%40ss@db/prod?password=x&sslpassword=y&sslmode=require",
                "postgresql://app:***@db/prod?password=***&sslpassword=***&sslmode=require",
            ),
            (
                "redis://:hunter2@127.0.0.1:6379/0",
                "redis://:***@127.0.0.1:6379/0",
            ),
            (
                "rediss://default:pa/ss@wd@cache:6380?namespace=n",
                "rediss://default:***@cache:6380?namespace=n",
            ),
            (
                "redis://127.0.0.1:6379?namespace=n",
                "redis://127.0.0.1:6379?namespace=n",
            ),
            ("postgres://app@db/prod", "postgres://app@db/prod"),
            ("sqlite:///tmp/a:b@c.db", "sqlite:///tmp/a:b@c.db"),
            ("memory://", "memory://"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn repeated_keys_are_refused_and_values_kept_raw() {
        let (base, params) = split_query("x", "x://h/db?a=1&&b&c=").expect("valid");
        assert_eq!(base, "x://h/db");
        assert_eq!(
            params,
            vec![
                Param {
                    key: "a",
                    value: Some("1"),
                    raw: "a=1"
                },
                Param {
                    key: "b",
                    value: None,
                    raw: "b"
                },
                Param {
                    key: "c",
                    value: Some(""),
                    raw: "c="
                },
            ]
        );
        let err = split_query("x", "x://h?a=1&b=2&a=3").expect_err("repeated");
        assert!(
            err.to_string().contains("option a is given more than once"),
            "{err}"
        );
    }

    #[test]
    fn numbers_are_range_checked_with_the_range_in_the_error() {
        assert_eq!(number("x", "n", Some("5"), 1..=10).ok(), Some(5));
        for bad in [
            Some("0"),
            Some("11"),
            Some("-1"),
            Some("+5"),
            Some(""),
            None,
            Some("1e3"),
            Some("99999999999999999999999"),
        ] {
            let err = number("x", "n", bad, 1..=10).expect_err("out of range or malformed");
            assert!(matches!(err, StoreError::InvalidArgument { .. }));
            assert!(err.to_string().contains("1..=10"), "{err}");
        }
        let long = "9".repeat(100_000);
        assert!(
            number("x", "n", Some(&long), 1..=10)
                .expect_err("long")
                .to_string()
                .len()
                < 300
        );
    }
}
