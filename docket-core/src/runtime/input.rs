//! Run input validation (`docs/runs-and-moments.md`, “Initialization”): every problem is collected
//! into one `invalid_input` error, so a caller sees all of them at once.

use serde_json::{json, Value};

use super::error::{ErrorKind, Phase, RuntimeError};
use crate::graph::{Channel, FieldKind, RuntimeGraph};
use crate::model::{check_portable, excerpt, ValueMap};

/// Validates `input` against the graph's declared inputs.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] with `details.reasons` listing every unknown key, missing
/// required input, non-portable value and schema violation.
pub fn validate_input(rtg: &RuntimeGraph, input: &ValueMap) -> Result<(), RuntimeError> {
    let mut reasons = Vec::new();
    for (key, value) in input {
        if key.starts_with('$') {
            reasons.push(format!("input key {:?} is reserved", excerpt(key)));
            continue;
        }
        let declared = rtg.value_channels().find(|(id, _, ch)| {
            *id == key
                && matches!(
                    ch,
                    Channel::Value {
                        kind: FieldKind::Input,
                        ..
                    }
                )
        });
        let Some((_, _, Channel::Value { schema, .. })) = declared else {
            reasons.push(format!("unknown input {:?}", excerpt(key)));
            continue;
        };
        if let Err(e) = check_portable(value) {
            reasons.push(format!("input {:?} is not portable: {e}", excerpt(key)));
            continue;
        }
        if let Some(schema) = schema {
            if let Err(problems) = schema.validate(value) {
                reasons.extend(
                    problems
                        .into_iter()
                        .map(|p| format!("input {:?}: {p}", excerpt(key))),
                );
            }
        }
    }
    for (id, _, channel) in rtg.value_channels() {
        if let Channel::Value {
            kind: FieldKind::Input,
            required: true,
            default,
            ..
        } = channel
        {
            if !input.contains_key(id) && default.as_ref().is_none_or(Value::is_null) {
                reasons.push(format!("required input {id:?} is missing"));
            }
        }
    }
    if reasons.is_empty() {
        return Ok(());
    }
    Err(RuntimeError::new(
        ErrorKind::InvalidInput,
        Phase::Init,
        format!("the run input is invalid: {}", reasons.join("; ")),
    )
    .with_detail("reasons", json!(reasons)))
}

/// Interprets a raw input value: `null` is empty, a map is itself, anything else is invalid.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] when `value` is neither `null` nor a map.
pub fn input_map(value: Value) -> Result<ValueMap, RuntimeError> {
    match value {
        Value::Null => Ok(ValueMap::new()),
        Value::Object(map) => Ok(map),
        other => Err(RuntimeError::new(
            ErrorKind::InvalidInput,
            Phase::Init,
            "the run input must be a map",
        )
        .with_detail(
            "reasons",
            json!([format!(
                "expected a map, found {}",
                crate::model::value::json_type(&other)
            )]),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::testing::rtg;

    #[test]
    fn every_input_problem_is_reported_at_once() {
        let g = rtg(json!({
            "inputs": {
                "a": {"schema": {"type": "integer"}, "required": true},
                "b": {"schema": {"type": "string", "min_length": 2}},
            },
            "fields": {"f": {"schema": {"type": "integer"}}},
        }));
        let input = json!({"b": "x", "f": 1, "zzz": 2})
            .as_object()
            .cloned()
            .expect("map");
        let err = validate_input(&g, &input).expect_err("invalid");
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        let reasons = err.reasons();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(
            reasons.iter().any(|r| r.contains("unknown input \"f\"")),
            "a field is not an input"
        );
        assert!(reasons.iter().any(|r| r.contains("required input \"a\"")));
        let ok = json!({"a": 1}).as_object().cloned().expect("map");
        assert!(validate_input(&g, &ok).is_ok());
    }

    #[test]
    fn only_null_and_maps_are_inputs() {
        assert_eq!(input_map(Value::Null), Ok(ValueMap::new()));
        assert!(input_map(json!({"a": 1})).is_ok());
        let err = input_map(json!("x")).expect_err("not a map");
        assert_eq!(
            err.reasons(),
            vec!["expected a map, found string".to_owned()]
        );
    }
}
