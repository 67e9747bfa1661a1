//! Value schemas (`docs/runs-and-moments.md`, “Reducers, schemas, guards and portable values”):
//! what fields, inputs, outputs, node configs and interrupt resolutions are validated against.
//!
//! Wire form is a JSON object with a `"type"` and type-specific constraints, e.g.
//! `{"type": "string", "min_length": 1}` or
//! `{"type": "object", "fields": {"name": {"type": "string", "required": true}}}`.
//! Unknown constraint keys are ignored; every validation problem is accumulated.

use std::collections::BTreeMap;
use std::fmt;

use regex::Regex;
use serde_json::{Map, Number, Value};

use crate::model::value::json_type;

/// A compiled regular expression that compares by its source text.
#[derive(Clone)]
pub struct Pattern(Regex);

impl Pattern {
    /// The source text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", self.as_str())
    }
}

/// The type part of a [`Schema`].
#[derive(Clone, Debug, PartialEq)]
pub enum SchemaType {
    /// A string, optionally bounded in characters and matched against a pattern.
    String {
        /// Minimum length in characters.
        min_length: Option<u64>,
        /// Maximum length in characters.
        max_length: Option<u64>,
        /// Regular expression the string must match (unanchored unless written anchored).
        pattern: Option<Pattern>,
    },
    /// An integer with inclusive bounds.
    Integer {
        /// Inclusive minimum.
        min: Option<Number>,
        /// Inclusive maximum.
        max: Option<Number>,
    },
    /// Any number with inclusive bounds.
    Float {
        /// Inclusive minimum.
        min: Option<Number>,
        /// Inclusive maximum.
        max: Option<Number>,
    },
    /// `true` or `false`.
    Boolean,
    /// Any map.
    Map,
    /// A map with declared fields.
    Object {
        /// Declared fields.
        fields: BTreeMap<String, Schema>,
        /// Whether undeclared keys are allowed.
        open: bool,
    },
    /// One of a fixed set of values.
    Enum {
        /// The allowed values.
        values: Vec<Value>,
    },
    /// A list, optionally of items of one schema, with bounds on its length.
    List {
        /// Item schema; `None` accepts any item.
        item: Option<Box<Schema>>,
        /// Minimum number of items.
        min_items: Option<u64>,
        /// Maximum number of items.
        max_items: Option<u64>,
    },
}

impl SchemaType {
    /// The wire name of the type.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            SchemaType::String { .. } => "string",
            SchemaType::Integer { .. } => "integer",
            SchemaType::Float { .. } => "float",
            SchemaType::Boolean => "boolean",
            SchemaType::Map => "map",
            SchemaType::Object { .. } => "object",
            SchemaType::Enum { .. } => "enum",
            SchemaType::List { .. } => "list",
        }
    }
}

/// A parsed schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// The type and its constraints.
    pub ty: SchemaType,
    /// Whether `null` (or absence, for object fields) is rejected.
    pub required: bool,
    /// Declared default (used for node config materialization and object fields).
    pub default: Option<Value>,
}

impl Schema {
    /// A schema of `ty` that is optional and has no default.
    #[must_use]
    pub fn of(ty: SchemaType) -> Self {
        Schema {
            ty,
            required: false,
            default: None,
        }
    }

    /// Parses the wire form.
    ///
    /// # Errors
    /// Every structural problem found, as human-readable reasons with their path.
    pub fn parse(value: &Value) -> Result<Schema, Vec<String>> {
        let mut reasons = Vec::new();
        let schema = parse_at(value, "", &mut reasons, 0);
        match schema {
            Some(schema) if reasons.is_empty() => Ok(schema),
            _ => Err(reasons),
        }
    }

    /// Renders the wire form (round-trips through [`Schema::parse`]).
    #[must_use]
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), Value::String(self.ty.name().into()));
        if self.required {
            map.insert("required".into(), Value::Bool(true));
        }
        if let Some(default) = &self.default {
            map.insert("default".into(), default.clone());
        }
        match &self.ty {
            SchemaType::String {
                min_length,
                max_length,
                pattern,
            } => {
                put_u64(&mut map, "min_length", *min_length);
                put_u64(&mut map, "max_length", *max_length);
                if let Some(p) = pattern {
                    map.insert("pattern".into(), Value::String(p.as_str().into()));
                }
            }
            SchemaType::Integer { min, max } | SchemaType::Float { min, max } => {
                if let Some(min) = min {
                    map.insert("min".into(), Value::Number(min.clone()));
                }
                if let Some(max) = max {
                    map.insert("max".into(), Value::Number(max.clone()));
                }
            }
            SchemaType::Boolean | SchemaType::Map => {}
            SchemaType::Object { fields, open } => {
                let fields = fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect();
                map.insert("fields".into(), Value::Object(fields));
                if *open {
                    map.insert("open".into(), Value::Bool(true));
                }
            }
            SchemaType::Enum { values } => {
                map.insert("values".into(), Value::Array(values.clone()));
            }
            SchemaType::List {
                item,
                min_items,
                max_items,
            } => {
                if let Some(item) = item {
                    map.insert("item".into(), item.to_value());
                }
                put_u64(&mut map, "min_items", *min_items);
                put_u64(&mut map, "max_items", *max_items);
            }
        }
        Value::Object(map)
    }

    /// Validates `value`, accumulating every problem.
    ///
    /// # Errors
    /// Human-readable reasons, each prefixed with the path of the offending part.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<String>> {
        let mut reasons = Vec::new();
        self.check(value, "", &mut reasons);
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(reasons)
        }
    }

    fn check(&self, value: &Value, path: &str, out: &mut Vec<String>) {
        let at = if path.is_empty() { "/" } else { path };
        if value.is_null() {
            if self.required {
                out.push(format!("{at}: is required"));
            }
            return;
        }
        match &self.ty {
            SchemaType::String {
                min_length,
                max_length,
                pattern,
            } => {
                let Some(s) = value.as_str() else {
                    return out.push(expected(at, "string", value));
                };
                let len = s.chars().count() as u64;
                if let Some(min) = min_length.filter(|m| len < *m) {
                    out.push(format!("{at}: shorter than {min} characters"));
                }
                if let Some(max) = max_length.filter(|m| len > *m) {
                    out.push(format!("{at}: longer than {max} characters"));
                }
                if let Some(p) = pattern.as_ref().filter(|p| !p.0.is_match(s)) {
                    out.push(format!("{at}: does not match pattern {:?}", p.as_str()));
                }
            }
            SchemaType::Integer { min, max } => {
                let is_int = value.as_i64().is_some() || value.as_u64().is_some();
                if !is_int {
                    return out.push(expected(at, "integer", value));
                }
                check_bounds(value, min.as_ref(), max.as_ref(), at, out);
            }
            SchemaType::Float { min, max } => {
                if !value.is_number() {
                    return out.push(expected(at, "number", value));
                }
                check_bounds(value, min.as_ref(), max.as_ref(), at, out);
            }
            SchemaType::Boolean => {
                if !value.is_boolean() {
                    out.push(expected(at, "boolean", value));
                }
            }
            SchemaType::Map => {
                if !value.is_object() {
                    out.push(expected(at, "map", value));
                }
            }
            SchemaType::Object { fields, open } => {
                let Some(map) = value.as_object() else {
                    return out.push(expected(at, "object", value));
                };
                for (name, field) in fields {
                    let sub = format!("{path}/{name}");
                    match map.get(name) {
                        Some(v) => field.check(v, &sub, out),
                        None if field.required => out.push(format!("{sub}: is required")),
                        None => {}
                    }
                }
                if !open {
                    for key in map.keys().filter(|k| !fields.contains_key(*k)) {
                        out.push(format!("{path}/{key}: unknown field"));
                    }
                }
            }
            SchemaType::Enum { values } => {
                if !values.contains(value) {
                    out.push(format!("{at}: is not one of the allowed values"));
                }
            }
            SchemaType::List {
                item,
                min_items,
                max_items,
            } => {
                let Some(items) = value.as_array() else {
                    return out.push(expected(at, "list", value));
                };
                let len = items.len() as u64;
                if let Some(min) = min_items.filter(|m| len < *m) {
                    out.push(format!("{at}: fewer than {min} items"));
                }
                if let Some(max) = max_items.filter(|m| len > *m) {
                    out.push(format!("{at}: more than {max} items"));
                }
                if let Some(item) = item {
                    for (i, v) in items.iter().enumerate() {
                        item.check(v, &format!("{path}/{i}"), out);
                    }
                }
            }
        }
    }
}

fn expected(at: &str, what: &str, value: &Value) -> String {
    format!("{at}: expected {what}, found {}", json_type(value))
}

fn check_bounds(
    value: &Value,
    min: Option<&Number>,
    max: Option<&Number>,
    at: &str,
    out: &mut Vec<String>,
) {
    let Some(v) = value.as_f64() else { return };
    if let Some(min) = min.filter(|m| m.as_f64().is_some_and(|m| v < m)) {
        out.push(format!("{at}: less than minimum {min}"));
    }
    if let Some(max) = max.filter(|m| m.as_f64().is_some_and(|m| v > m)) {
        out.push(format!("{at}: greater than maximum {max}"));
    }
}

fn put_u64(map: &mut Map<String, Value>, key: &str, value: Option<u64>) {
    if let Some(v) = value {
        map.insert(key.into(), Value::Number(v.into()));
    }
}

/// Deepest schema nesting accepted (objects and lists inside each other).
const MAX_SCHEMA_DEPTH: usize = 32;

fn parse_at(value: &Value, path: &str, out: &mut Vec<String>, depth: usize) -> Option<Schema> {
    let at = if path.is_empty() { "/" } else { path };
    if depth > MAX_SCHEMA_DEPTH {
        out.push(format!(
            "{at}: schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
        return None;
    }
    let Some(map) = value.as_object() else {
        out.push(format!("{at}: a schema must be a map with a \"type\""));
        return None;
    };
    let required = match map.get("required") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            out.push(format!("{at}: \"required\" must be a boolean"));
            false
        }
    };
    let default = map.get("default").cloned();
    let ty = match map.get("type").and_then(Value::as_str) {
        Some("string") => {
            let pattern = match map.get("pattern") {
                None => None,
                Some(Value::String(p)) => match Regex::new(p) {
                    Ok(re) => Some(Pattern(re)),
                    Err(e) => {
                        out.push(format!("{at}: invalid pattern: {e}"));
                        None
                    }
                },
                Some(_) => {
                    out.push(format!("{at}: \"pattern\" must be a string"));
                    None
                }
            };
            SchemaType::String {
                min_length: opt_u64(map, "min_length", at, out),
                max_length: opt_u64(map, "max_length", at, out),
                pattern,
            }
        }
        Some(kind @ ("integer" | "float")) => {
            let min = opt_number(map, "min", at, out);
            let max = opt_number(map, "max", at, out);
            if kind == "integer" {
                SchemaType::Integer { min, max }
            } else {
                SchemaType::Float { min, max }
            }
        }
        Some("boolean") => SchemaType::Boolean,
        Some("map") => SchemaType::Map,
        Some("object") => {
            let mut fields = BTreeMap::new();
            match map.get("fields") {
                None => {}
                Some(Value::Object(declared)) => {
                    for (name, sub) in declared {
                        let sub_path = format!("{path}/fields/{name}");
                        if let Some(schema) = parse_at(sub, &sub_path, out, depth + 1) {
                            fields.insert(name.clone(), schema);
                        }
                    }
                }
                Some(_) => out.push(format!("{at}: \"fields\" must be a map")),
            }
            let open = match map.get("open") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    out.push(format!("{at}: \"open\" must be a boolean"));
                    false
                }
            };
            SchemaType::Object { fields, open }
        }
        Some("enum") => match map.get("values") {
            Some(Value::Array(values)) if !values.is_empty() => SchemaType::Enum {
                values: values.clone(),
            },
            _ => {
                out.push(format!("{at}: an enum needs a non-empty \"values\" list"));
                return None;
            }
        },
        Some("list") => {
            let item = match map.get("item") {
                None => None,
                Some(item) => parse_at(item, &format!("{path}/item"), out, depth + 1).map(Box::new),
            };
            SchemaType::List {
                item,
                min_items: opt_u64(map, "min_items", at, out),
                max_items: opt_u64(map, "max_items", at, out),
            }
        }
        Some(other) => {
            out.push(format!("{at}: unknown schema type {other:?}"));
            return None;
        }
        None => {
            out.push(format!("{at}: a schema needs a string \"type\""));
            return None;
        }
    };
    Some(Schema {
        ty,
        required,
        default,
    })
}

fn opt_u64(map: &Map<String, Value>, key: &str, at: &str, out: &mut Vec<String>) -> Option<u64> {
    match map.get(key) {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) => Some(n),
            None => {
                out.push(format!("{at}: {key:?} must be a non-negative integer"));
                None
            }
        },
    }
}

fn opt_number(
    map: &Map<String, Value>,
    key: &str,
    at: &str,
    out: &mut Vec<String>,
) -> Option<Number> {
    match map.get(key) {
        None => None,
        Some(Value::Number(n)) => Some(n.clone()),
        Some(_) => {
            out.push(format!("{at}: {key:?} must be a number"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(v: Value) -> Schema {
        Schema::parse(&v).expect("valid schema")
    }

    #[test]
    fn null_is_valid_unless_required() {
        assert!(schema(json!({"type": "string"}))
            .validate(&Value::Null)
            .is_ok());
        assert!(schema(json!({"type": "string", "required": true}))
            .validate(&Value::Null)
            .is_err());
    }

    #[test]
    fn string_constraints_count_characters_and_match_patterns() {
        let s =
            schema(json!({"type": "string", "min_length": 2, "max_length": 3, "pattern": "^a"}));
        assert!(s.validate(&json!("aé")).is_ok());
        let reasons = s.validate(&json!("bbbb")).expect_err("two problems");
        assert_eq!(reasons.len(), 2, "{reasons:?}");
    }

    #[test]
    fn integer_rejects_floats_and_float_accepts_integers() {
        let i = schema(json!({"type": "integer", "min": 0, "max": 10}));
        assert!(i.validate(&json!(3)).is_ok());
        assert!(i.validate(&json!(3.5)).is_err());
        assert!(i.validate(&json!(11)).is_err());
        let f = schema(json!({"type": "float", "min": 0.5}));
        assert!(f.validate(&json!(1)).is_ok());
        assert!(f.validate(&json!(0.25)).is_err());
    }

    #[test]
    fn objects_check_required_unknown_and_nested_fields() {
        let o = schema(json!({"type": "object", "fields": {
            "name": {"type": "string", "required": true},
            "tags": {"type": "list", "item": {"type": "string"}}
        }}));
        assert!(o.validate(&json!({"name": "x", "tags": ["a"]})).is_ok());
        let reasons = o
            .validate(&json!({"tags": [1], "extra": true}))
            .expect_err("invalid");
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        let open = schema(json!({"type": "object", "open": true}));
        assert!(open.validate(&json!({"anything": 1})).is_ok());
    }

    #[test]
    fn enums_and_lists() {
        let e = schema(json!({"type": "enum", "values": ["a", 1]}));
        assert!(e.validate(&json!(1)).is_ok());
        assert!(e.validate(&json!("b")).is_err());
        let l = schema(json!({"type": "list", "min_items": 1, "max_items": 2}));
        assert!(l.validate(&json!([])).is_err());
        assert!(l.validate(&json!([1, "x"])).is_ok());
        assert!(l.validate(&json!([1, 2, 3])).is_err());
    }

    #[test]
    fn malformed_schemas_are_reported_not_panicked() {
        for bad in [
            json!(1),
            json!({}),
            json!({"type": "nope"}),
            json!({"type": "enum"}),
            json!({"type": "string", "pattern": "("}),
            json!({"type": "object", "fields": {"a": {"type": 5}}}),
            json!({"type": "list", "min_items": -1}),
        ] {
            assert!(Schema::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn wire_form_round_trips() {
        let v = json!({"type": "object", "required": true, "fields": {
            "n": {"type": "integer", "min": 1, "default": 3},
            "s": {"type": "string", "pattern": "^x$", "max_length": 4},
            "l": {"type": "list", "item": {"type": "enum", "values": [1, 2]}, "max_items": 2}
        }});
        let parsed = schema(v.clone());
        assert_eq!(parsed.to_value(), v);
        assert_eq!(Schema::parse(&parsed.to_value()).expect("reparse"), parsed);
    }

    #[test]
    fn deep_schemas_are_rejected() {
        let mut v = json!({"type": "string"});
        for _ in 0..40 {
            v = json!({"type": "list", "item": v});
        }
        assert!(Schema::parse(&v).is_err());
    }
}
