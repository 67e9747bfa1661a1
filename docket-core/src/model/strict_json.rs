//! JSON text read strictly: an object that names the same key twice is refused.
//!
//! `serde_json` keeps the last of two equal keys and says nothing, so `{"id":"A","id":"B"}`
//! would read as `B` and two nodes named `a` as one. Every entry point that reads JSON written
//! by a person — graph documents and run input — goes through [`parse_json_strict`], which
//! reports the duplicate with its JSON-pointer path instead.
//!
//! No well-kept crate does this for `serde_json::Value` (the visitor below is the small piece
//! `serde_json` leaves to callers); numbers are read exactly as `serde_json` reads them.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::text::excerpt;

/// Why JSON text was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// An object names `key` more than once.
    #[error("duplicate key {key:?} at {path}: a JSON object may name each key once")]
    DuplicateKey {
        /// The repeated key (cut if long).
        key: String,
        /// JSON pointer (RFC 6901) of the repeated member, e.g. `/nodes/a` (cut if long).
        path: String,
    },
    /// The text is not JSON.
    #[error("not valid JSON: {reason}")]
    Syntax {
        /// The parser's reason, with line and column.
        reason: String,
    },
}

impl JsonError {
    /// The JSON pointer the error is about (`""`, the whole text, for a syntax error).
    #[must_use]
    pub fn path(&self) -> &str {
        match self {
            JsonError::DuplicateKey { path, .. } => path,
            JsonError::Syntax { .. } => "",
        }
    }
}

/// Parses `text` as one JSON value, refusing duplicate keys at any depth.
///
/// # Errors
/// [`JsonError::DuplicateKey`] naming the first repeated key and its path;
/// [`JsonError::Syntax`] with the parser's reason for anything that is not JSON.
pub fn parse_json_strict(text: &str) -> Result<Value, JsonError> {
    let context = Context::default();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Strict { context: &context }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|e| {
        context
            .duplicate
            .borrow_mut()
            .take()
            .unwrap_or(JsonError::Syntax {
                reason: e.to_string(),
            })
    })
}

/// The path being read and the first duplicate found.
#[derive(Default)]
struct Context {
    path: RefCell<Vec<String>>,
    duplicate: RefCell<Option<JsonError>>,
}

impl Context {
    fn pointer(&self, last: &str) -> String {
        let path = self.path.borrow();
        let mut out = String::new();
        for segment in path.iter().map(String::as_str).chain([last]) {
            out.push('/');
            out.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        }
        out
    }

    fn nested<T>(&self, segment: String, read: impl FnOnce() -> T) -> T {
        self.path.borrow_mut().push(segment);
        let result = read();
        self.path.borrow_mut().pop();
        result
    }
}

#[derive(Clone, Copy)]
struct Strict<'c> {
    context: &'c Context,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json only produces finite floats.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let index = items.len().to_string();
            match self.context.nested(index, || seq.next_element_seed(self))? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                let error = JsonError::DuplicateKey {
                    key: excerpt(&key).into_owned(),
                    path: excerpt(&self.context.pointer(&key)).into_owned(),
                };
                let message = error.to_string();
                *self.context.duplicate.borrow_mut() = Some(error);
                return Err(de::Error::custom(message));
            }
            let value = self
                .context
                .nested(key.clone(), || map.next_value_seed(self))?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a": [1, -2, 3.5, 1e300, 18446744073709551615, -0.0], "b": {"c": null, "d": true}}"#,
            r#""x""#,
            "[]",
            "0.1",
        ] {
            let lenient: Value = serde_json::from_str(text).expect("json");
            assert_eq!(parse_json_strict(text), Ok(lenient), "{text}");
        }
    }

    #[test]
    fn a_repeated_key_is_refused_with_its_path_at_any_depth() {
        for (text, key, path) in [
            (r#"{"id": "A", "id": "B"}"#, "id", "/id"),
            (r#"{"nodes": {"a": {}, "a": {}}}"#, "a", "/nodes/a"),
            (
                r#"[0, {"x": [{"k/~": 1, "k/~": 2}]}]"#,
                "k/~",
                "/1/x/0/k~1~0",
            ),
        ] {
            assert_eq!(
                parse_json_strict(text),
                Err(JsonError::DuplicateKey {
                    key: key.into(),
                    path: path.into()
                }),
                "{text}"
            );
        }
        // The same key in sibling objects is fine.
        assert_eq!(
            parse_json_strict(r#"{"a": {"k": 1}, "b": {"k": 2}}"#),
            Ok(json!({"a": {"k": 1}, "b": {"k": 2}}))
        );
    }

    #[test]
    fn syntax_errors_keep_the_parser_reason() {
        let err = parse_json_strict(r#"{"amount": }"#).expect_err("not JSON");
        assert!(matches!(err, JsonError::Syntax { .. }));
        assert!(err.to_string().contains("line 1 column"), "{err}");
        assert!(
            parse_json_strict(r#"{} {}"#).is_err(),
            "trailing characters"
        );
    }
}
