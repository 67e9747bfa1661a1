//! Open options and the `map://` URL form.
//!
//! The store keeps nothing outside the process, so its only setting is how many terminal
//! operation records the registry keeps per owner; the URL carries it as a query option so
//! that `map://` opens the same way as every other store's URL.

use docket_core::model::excerpt;
use docket_core::ops::rules::Retention;
use docket_core::store::url::{number, split_query, unknown_option, Param};
use docket_core::store::StoreError;

/// The scheme of the URL form, with its separator.
pub const SCHEME: &str = "map://";

/// The query options of a `map://` URL.
pub const URL_OPTIONS: &[&str] = &["ops_retention"];

/// How a [`crate::MapStore`] is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapOptions {
    /// Terminal operation records the registry keeps per owner. Default 256.
    pub ops_retention: Retention,
}

impl MapOptions {
    /// These options with `ops_retention` replaced.
    #[must_use]
    pub fn with_ops_retention(mut self, ops_retention: Retention) -> Self {
        self.ops_retention = ops_retention;
        self
    }
}

/// Parses `map://[?key=value&...]` into the options [`crate::MapStore::open`] takes.
///
/// Nothing may stand between `map://` and `?`: the store lives in this process, so there is
/// no path or host to name. Query options ([`URL_OPTIONS`]), each at most once:
///
/// | option | values | default |
/// | --- | --- | --- |
/// | `ops_retention` | `1..=4294967295` (terminal operation records kept per owner) | `256` |
///
/// # Errors
/// `InvalidArgument` for another scheme, anything between `map://` and `?`, an unknown or
/// repeated option, or a malformed or out-of-range value (the message names the allowed
/// range).
pub fn parse_url(url: &str) -> Result<MapOptions, StoreError> {
    if !url.starts_with(SCHEME) {
        return Err(StoreError::invalid_argument(format!(
            "not a map:// URL: {:?}",
            excerpt(url)
        )));
    }
    let (base, params) = split_query("map", url)?;
    let rest = &base[SCHEME.len()..];
    if !rest.is_empty() {
        return Err(StoreError::invalid_argument(format!(
            "a map:// URL names no path or host, got {:?}",
            excerpt(rest)
        )));
    }
    let mut options = MapOptions::default();
    for Param { key, value, .. } in params {
        match key {
            "ops_retention" => {
                let kept = number("map", key, value, 1..=u64::from(u32::MAX))?;
                // In range, so it fits a u32.
                options.ops_retention = Retention::new(u32::try_from(kept).unwrap_or(u32::MAX))
                    .map_err(|e| StoreError::invalid_argument(e.to_string()))?;
            }
            other => return Err(unknown_option("map", other, URL_OPTIONS)),
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_url_means_the_defaults() {
        assert_eq!(parse_url("map://").ok(), Some(MapOptions::default()));
        assert_eq!(parse_url("map://?").ok(), Some(MapOptions::default()));
    }

    #[test]
    fn ops_retention_is_parsed() {
        let options = parse_url("map://?ops_retention=3").expect("valid url");
        assert_eq!(options.ops_retention.max_terminal(), 3);
        let most = parse_url("map://?ops_retention=4294967295").expect("valid url");
        assert_eq!(most.ops_retention.max_terminal(), u32::MAX);
    }

    #[test]
    fn other_schemes_paths_and_unknown_repeated_or_bad_options_are_refused() {
        for bad in [
            "memory://",
            "sqlite://x.db",
            "map:/",
            "map://x",
            "map://x?ops_retention=3",
            "map://?mode=ro",
            "map://?ops_retention",
            "map://?ops_retention=",
            "map://?ops_retention=0",
            "map://?ops_retention=-1",
            "map://?ops_retention=4294967296",
            "map://?ops_retention=18446744073709551616",
            "map://?ops_retention=2&ops_retention=3",
        ] {
            assert!(
                matches!(parse_url(bad), Err(StoreError::InvalidArgument { .. })),
                "{bad} should be refused"
            );
        }
    }

    #[test]
    fn the_refusal_names_what_is_allowed() {
        let unknown = parse_url("map://?mode=ro").expect_err("unknown option");
        assert!(unknown.to_string().contains("ops_retention"), "{unknown}");
        let range = parse_url("map://?ops_retention=0").expect_err("out of range");
        assert!(range.to_string().contains("1..=4294967295"), "{range}");
    }
}
