//! Reading run input (and other values) from JSON text, strictly.
//!
//! Run input typed by a person — on the command line, in a file, from an HTTP body — is read
//! with [`docket_core::model::parse_json_strict`]: an object naming a key twice
//! (`{"amount": 1, "amount": 2}`) is refused with the key and its path instead of silently
//! keeping the last value, and a syntax error keeps the parser's reason.

use serde_json::Value;

use docket_core::model::{parse_json_strict, ValueMap};

use crate::error::DocketError;

/// Parses run input: JSON text holding one object.
///
/// ```
/// use docket::{parse_input, DocketError};
///
/// let input = parse_input(r#"{"amount": 120, "note": "team lunch"}"#)?;
/// assert_eq!(input["amount"], 120);
///
/// // Each key once: a duplicate is refused instead of silently keeping the last value.
/// let err = parse_input(r#"{"amount": 1, "amount": 2}"#).unwrap_err();
/// assert!(matches!(err, DocketError::InvalidJson { .. }), "{err}");
/// // Run input is an object.
/// assert_eq!(parse_input("[1, 2]").unwrap_err().kind(), "invalid_options");
/// # Ok::<(), DocketError>(())
/// ```
///
/// # Errors
/// [`DocketError::InvalidJson`] for text that is not JSON (with the parser's reason) or an
/// object that names a key twice (with the key and its path); [`DocketError::InvalidOptions`]
/// for JSON that is not an object.
pub fn parse_input(text: &str) -> Result<ValueMap, DocketError> {
    match parse_json_strict(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(DocketError::InvalidOptions(format!(
            "run input must be a JSON object, got {}",
            kind(&other)
        ))),
        Err(error) => Err(DocketError::InvalidJson {
            what: "run input",
            error,
        }),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::model::JsonError;

    #[test]
    fn input_is_one_object_with_each_key_once() {
        let input = parse_input(r#"{"amount": 1, "note": {"a": 1}}"#).expect("valid");
        assert_eq!(input["amount"], 1);
        match parse_input(r#"{"amount": 1, "amount": 2}"#) {
            Err(DocketError::InvalidJson {
                error: JsonError::DuplicateKey { key, path },
                ..
            }) => assert_eq!((key.as_str(), path.as_str()), ("amount", "/amount")),
            other => panic!("{other:?}"),
        }
        let err = parse_input(r#"{"amount": }"#).expect_err("syntax");
        assert!(err.to_string().contains("line 1 column"), "{err}");
        let err = parse_input("[1]").expect_err("not an object");
        assert!(err.to_string().contains("an array"), "{err}");
    }
}
