//! Portable (durable) values and canonical JSON.
//!
//! A portable value is a [`serde_json::Value`]: strings, numbers, booleans, null, lists and
//! string-keyed maps. On top of JSON's own shape we reject keys that start with `$` (reserved
//! for the graph wire format) and nesting deeper than [`MAX_VALUE_DEPTH`] (so that no input can
//! make a recursive walk overflow the stack).
//!
//! Canonical JSON is the compact `serde_json` rendering of a value: `serde_json::Map` is a
//! `BTreeMap` here (the `preserve_order` feature is never enabled), so keys come out sorted, and
//! floats use the shortest representation that round-trips. It is what graph hashes and
//! snapshot hashes are computed over.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A JSON object with string keys: the shape of inputs, outputs, metadata and node writes.
pub type ValueMap = Map<String, Value>;

/// Deepest nesting of lists and maps that a portable value may have.
pub const MAX_VALUE_DEPTH: usize = 64;

/// Why a value is not portable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A map key starts with `$`, which is reserved.
    #[error("key {key:?} at {path} starts with '$', which is reserved")]
    ReservedKey {
        /// The offending key.
        key: String,
        /// JSON-pointer-like location of the map holding it.
        path: String,
    },
    /// The value nests lists and maps deeper than [`MAX_VALUE_DEPTH`].
    #[error("value at {path} nests deeper than {MAX_VALUE_DEPTH} levels")]
    TooDeep {
        /// Where the limit was crossed.
        path: String,
    },
    /// The value is not a map where a map is required.
    #[error("expected a map at {path}, found {found}")]
    NotAMap {
        /// Where.
        path: String,
        /// The JSON type found instead.
        found: &'static str,
    },
}

/// Checks that `value` is portable.
///
/// # Errors
/// [`ValueError`] naming the first offending location.
pub fn check_portable(value: &Value) -> Result<(), ValueError> {
    walk(value, &Path::Root, 0)
}

/// Checks that every value of `map` is portable and no key is reserved.
///
/// # Errors
/// [`ValueError`] naming the first offending location.
pub fn check_portable_map(map: &ValueMap) -> Result<(), ValueError> {
    walk_map(map, &Path::Root, 0)
}

/// Interprets `value` as a portable map.
///
/// # Errors
/// [`ValueError::NotAMap`] when `value` is not an object, or any portability error inside it.
pub fn portable_map(value: Value) -> Result<ValueMap, ValueError> {
    match value {
        Value::Object(map) => {
            check_portable_map(&map)?;
            Ok(map)
        }
        other => Err(ValueError::NotAMap {
            path: "/".to_owned(),
            found: json_type(&other),
        }),
    }
}

/// Where a walk is: the chain of keys and list indexes from the root, kept on the stack and
/// rendered as text only when a check fails. Every stored event and write is walked on the
/// hot path, so a `String` per visited entry (what a rendered path would cost) is not paid
/// for values that pass.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// The JSON-pointer-like rendering: `/` for the root, `/a/0/b` below it.
    fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        if out.is_empty() {
            out.push('/');
        }
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.render_into(out);
                out.push('/');
                out.push_str(key);
            }
            Path::Index(parent, index) => {
                parent.render_into(out);
                out.push('/');
                out.push_str(&index.to_string());
            }
        }
    }
}

fn walk(value: &Value, path: &Path<'_>, depth: usize) -> Result<(), ValueError> {
    match value {
        Value::Array(items) => {
            if depth >= MAX_VALUE_DEPTH {
                return Err(ValueError::TooDeep {
                    path: path.render(),
                });
            }
            for (i, item) in items.iter().enumerate() {
                walk(item, &Path::Index(path, i), depth + 1)?;
            }
            Ok(())
        }
        Value::Object(map) => walk_map(map, path, depth),
        _ => Ok(()),
    }
}

fn walk_map(map: &ValueMap, path: &Path<'_>, depth: usize) -> Result<(), ValueError> {
    if depth >= MAX_VALUE_DEPTH {
        return Err(ValueError::TooDeep {
            path: path.render(),
        });
    }
    for (key, item) in map {
        if key.starts_with('$') {
            return Err(ValueError::ReservedKey {
                key: key.clone(),
                path: path.render(),
            });
        }
        walk(item, &Path::Key(path, key), depth + 1)?;
    }
    Ok(())
}

/// The JSON type name of `value`, for messages.
#[must_use]
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Canonical JSON bytes of `value` (sorted keys, no whitespace, shortest numbers).
///
/// Keys are sorted explicitly rather than by relying on `serde_json::Map` being a `BTreeMap`:
/// any crate in the build enabling serde_json's `preserve_order` feature would otherwise
/// silently change every hash.
#[must_use]
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

/// [`canonical_json`] of a map, without wrapping (and so copying) it in a [`Value`] first:
/// what a store encodes every event's payload and metadata with.
#[must_use]
pub fn canonical_json_map(map: &ValueMap) -> Vec<u8> {
    let mut out = Vec::new();
    write_map(map, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(map, out),
        scalar => write_scalar(scalar, out),
    }
}

fn write_map(map: &ValueMap, out: &mut Vec<u8>) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (key, item)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // A string key serializes infallibly.
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
        write_canonical(item, out);
    }
    out.push(b'}');
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Serializing a scalar `Value` into a Vec cannot fail (numbers are always finite).
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Lowercase hex SHA-256 of `bytes`.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Lowercase hex SHA-256 of the canonical JSON of `map`: the stable hash of a snapshot.
#[must_use]
pub fn snapshot_hash(map: &ValueMap) -> String {
    let mut out = Vec::new();
    write_map(map, &mut out);
    sha256_hex(&out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reserved_keys_are_rejected_at_any_depth() {
        let err = check_portable(&json!({"a": [{"$ref": 1}]})).expect_err("reserved");
        assert_eq!(
            err,
            ValueError::ReservedKey {
                key: "$ref".into(),
                path: "/a/0".into()
            }
        );
        assert!(check_portable(&json!({"a": ["$not-a-key", 1.5, null]})).is_ok());
    }

    #[test]
    fn deep_nesting_is_rejected_without_overflowing() {
        let mut v = json!(1);
        for _ in 0..(MAX_VALUE_DEPTH + 2) {
            v = json!([v]);
        }
        assert!(matches!(
            check_portable(&v),
            Err(ValueError::TooDeep { .. })
        ));
    }

    #[test]
    fn errors_name_where_they_are_from_the_root() {
        let at_root = check_portable(&json!({"$x": 1})).expect_err("reserved at the root");
        assert_eq!(
            at_root,
            ValueError::ReservedKey {
                key: "$x".into(),
                path: "/".into()
            }
        );
        let mut deep = json!([]);
        for _ in 0..MAX_VALUE_DEPTH {
            deep = json!({ "k": deep });
        }
        let Err(ValueError::TooDeep { path }) = check_portable(&json!({ "top": [deep] })) else {
            panic!("nesting past the limit is refused");
        };
        // `top` and its list are the first two levels, so the limit is crossed 62 `k` maps
        // down the chain.
        let expected = format!("/top/0{}", "/k".repeat(MAX_VALUE_DEPTH - 2));
        assert_eq!(path, expected);
    }

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let a: Value = serde_json::from_str("{ \"b\": 1, \"a\": [1.5, -0.0] }").expect("json");
        assert_eq!(canonical_json(&a), br#"{"a":[1.5,-0.0],"b":1}"#);
    }

    #[test]
    fn a_maps_canonical_json_is_that_of_the_map_as_a_value() {
        let value = json!({ "z": [1, { "b": null, "a": -0.0 }], "a": "x" });
        let Value::Object(map) = value.clone() else {
            panic!("an object");
        };
        assert_eq!(canonical_json_map(&map), canonical_json(&value));
    }

    #[test]
    fn portable_map_requires_an_object() {
        assert!(matches!(
            portable_map(json!([1])),
            Err(ValueError::NotAMap { found: "list", .. })
        ));
    }
}
