//! Reducers (`docs/runs-and-moments.md`, “Reducers, schemas, guards and portable values”): how the
//! writes of one barrier fold into a state field.
//!
//! Wire form: a string (`"sum"`) or a map with a `"type"` and options
//! (`{"type": "append", "unique": true, "max_length": 10}`); unknown options are ignored.
//! Writes reach a reducer already ordered by writer node id.

use serde_json::{Map, Number, Value};

use super::schema::{Schema, SchemaType};

/// A parsed reducer.
#[derive(Clone, Debug, PartialEq)]
pub enum Reducer {
    /// Last write wins.
    LastValue,
    /// Keep the current value if set (a default counts as set), else the first write.
    FirstValue,
    /// Concatenate: a list write appends its elements, any other write appends itself.
    Append {
        /// Drop later duplicates (first occurrence wins).
        unique: bool,
        /// Keep only the last `n` elements.
        max_length: Option<u64>,
    },
    /// Append, then drop duplicates (first occurrence wins), optionally comparing by a path.
    Union {
        /// Path inside each element to compare by; elements missing it compare whole.
        by: Option<Vec<String>>,
    },
    /// Fold map writes into the current map; non-map writes are ignored.
    Merge {
        /// Merge nested maps recursively.
        deep: bool,
    },
    /// Add numeric writes to the current number (0 when unset or not a number).
    Sum,
}

impl Reducer {
    /// Parses the wire form; `None` means `last_value`.
    ///
    /// # Errors
    /// Human-readable reasons (unknown type, badly typed option).
    pub fn parse(value: Option<&Value>) -> Result<Reducer, Vec<String>> {
        let Some(value) = value else {
            return Ok(Reducer::LastValue);
        };
        let empty = Map::new();
        let (ty, opts) = match value {
            Value::String(s) => (s.as_str(), &empty),
            Value::Object(map) => match map.get("type").and_then(Value::as_str) {
                Some(ty) => (ty, map),
                None => return Err(vec!["a reducer map needs a string \"type\"".into()]),
            },
            _ => {
                return Err(vec![
                    "a reducer is a type name or a map with a \"type\"".into()
                ])
            }
        };
        let mut reasons = Vec::new();
        let reducer = match ty {
            "last_value" => Reducer::LastValue,
            "first_value" => Reducer::FirstValue,
            "append" => Reducer::Append {
                unique: opt_bool(opts, "unique", &mut reasons),
                max_length: match opts.get("max_length") {
                    None => None,
                    Some(v) => match v.as_u64().filter(|n| *n > 0) {
                        Some(n) => Some(n),
                        None => {
                            reasons.push("append \"max_length\" must be a positive integer".into());
                            None
                        }
                    },
                },
            },
            "union" => Reducer::Union {
                by: match opts.get("by") {
                    None => None,
                    Some(Value::String(s)) => Some(vec![s.clone()]),
                    Some(Value::Array(items))
                        if !items.is_empty() && items.iter().all(Value::is_string) =>
                    {
                        Some(
                            items
                                .iter()
                                .filter_map(|v| v.as_str().map(str::to_owned))
                                .collect(),
                        )
                    }
                    Some(_) => {
                        reasons.push(
                            "union \"by\" must be a string or a non-empty list of strings".into(),
                        );
                        None
                    }
                },
            },
            "merge" => Reducer::Merge {
                deep: opt_bool(opts, "deep", &mut reasons),
            },
            "sum" => Reducer::Sum,
            other => return Err(vec![format!("unknown reducer type {other:?}")]),
        };
        if reasons.is_empty() {
            Ok(reducer)
        } else {
            Err(reasons)
        }
    }

    /// The wire name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Reducer::LastValue => "last_value",
            Reducer::FirstValue => "first_value",
            Reducer::Append { .. } => "append",
            Reducer::Union { .. } => "union",
            Reducer::Merge { .. } => "merge",
            Reducer::Sum => "sum",
        }
    }

    /// The natural zero used as the effective default of a field without one.
    #[must_use]
    pub fn zero(&self) -> Option<Value> {
        match self {
            Reducer::Append { .. } | Reducer::Union { .. } => Some(Value::Array(vec![])),
            Reducer::Merge { .. } => Some(Value::Object(Map::new())),
            Reducer::Sum => Some(Value::from(0)),
            Reducer::LastValue | Reducer::FirstValue => None,
        }
    }

    /// Folds `writes` (in writer order) into `current` (`None` = never set and no default).
    #[must_use]
    pub fn reduce(&self, current: Option<&Value>, writes: &[Value]) -> Value {
        match self {
            Reducer::LastValue => writes
                .last()
                .cloned()
                .or_else(|| current.cloned())
                .unwrap_or(Value::Null),
            Reducer::FirstValue => match current {
                Some(v) => v.clone(),
                None => writes.first().cloned().unwrap_or(Value::Null),
            },
            Reducer::Append { unique, max_length } => {
                let mut items = current_list(current);
                items.extend(flatten_one_level(writes));
                if *unique {
                    items = dedupe(items, |v| v.clone());
                }
                if let Some(n) = max_length {
                    let n = usize::try_from(*n).unwrap_or(usize::MAX);
                    if items.len() > n {
                        items.drain(..items.len() - n);
                    }
                }
                Value::Array(items)
            }
            Reducer::Union { by } => {
                let mut items = current_list(current);
                items.extend(flatten_one_level(writes));
                Value::Array(dedupe(items, |v| union_key(v, by.as_deref())))
            }
            Reducer::Merge { deep } => {
                let mut acc = match current {
                    Some(Value::Object(map)) => map.clone(),
                    _ => Map::new(),
                };
                for write in writes {
                    if let Value::Object(map) = write {
                        merge_into(&mut acc, map, *deep);
                    }
                }
                Value::Object(acc)
            }
            Reducer::Sum => {
                let start = match current {
                    Some(Value::Number(n)) => n.clone(),
                    _ => Number::from(0),
                };
                let total = writes
                    .iter()
                    .filter_map(Value::as_number)
                    .fold(start, add_numbers);
                Value::Number(total)
            }
        }
    }

    /// Validates one node write against the reducer-dependent write schema derived from the
    /// field schema (`docs/runs-and-moments.md`, “Reducers, schemas, guards and portable values”).
    /// Committed values are never re-validated.
    ///
    /// # Errors
    /// Human-readable reasons.
    pub fn validate_write(&self, field: Option<&Schema>, write: &Value) -> Result<(), Vec<String>> {
        let Some(field) = field else { return Ok(()) };
        match self {
            Reducer::LastValue | Reducer::FirstValue => field.validate(write),
            Reducer::Append { .. } | Reducer::Union { .. } => {
                let item = match &field.ty {
                    SchemaType::List { item, .. } => item.as_deref(),
                    _ => None,
                };
                let Some(item) = item else { return Ok(()) };
                match write {
                    Value::Array(items) => {
                        let mut reasons = Vec::new();
                        for (i, v) in items.iter().enumerate() {
                            if let Err(r) = item.validate(v) {
                                reasons.extend(r.into_iter().map(|r| format!("[{i}] {r}")));
                            }
                        }
                        if reasons.is_empty() {
                            Ok(())
                        } else {
                            Err(reasons)
                        }
                    }
                    other => item.validate(other),
                }
            }
            Reducer::Merge { .. } => {
                let ty = match &field.ty {
                    SchemaType::Object { fields, open } => SchemaType::Object {
                        fields: fields
                            .iter()
                            .map(|(k, s)| {
                                let mut s = s.clone();
                                s.required = false;
                                (k.clone(), s)
                            })
                            .collect(),
                        open: *open,
                    },
                    other => other.clone(),
                };
                Schema {
                    ty,
                    required: true,
                    default: None,
                }
                .validate(write)
            }
            Reducer::Sum => Schema {
                ty: field.ty.clone(),
                required: true,
                default: None,
            }
            .validate(write),
        }
    }
}

fn opt_bool(opts: &Map<String, Value>, key: &str, reasons: &mut Vec<String>) -> bool {
    match opts.get(key) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            reasons.push(format!("reducer option {key:?} must be a boolean"));
            false
        }
    }
}

fn current_list(current: Option<&Value>) -> Vec<Value> {
    match current {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![other.clone()],
    }
}

fn flatten_one_level(writes: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for write in writes {
        match write {
            Value::Array(items) => out.extend(items.iter().cloned()),
            other => out.push(other.clone()),
        }
    }
    out
}

fn dedupe(items: Vec<Value>, key: impl Fn(&Value) -> Value) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for item in items {
        let k = key(&item);
        if !seen.contains(&k) {
            seen.push(k);
            out.push(item);
        }
    }
    out
}

fn union_key(item: &Value, by: Option<&[String]>) -> Value {
    let Some(path) = by else { return item.clone() };
    let mut cursor = item;
    for segment in path {
        match cursor.get(segment.as_str()) {
            Some(next) => cursor = next,
            None => return item.clone(),
        }
    }
    // Tag keyed entries so a keyed value never collides with a whole element.
    Value::Array(vec![Value::String("by".into()), cursor.clone()])
}

fn merge_into(acc: &mut Map<String, Value>, write: &Map<String, Value>, deep: bool) {
    for (key, value) in write {
        match (acc.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) if deep => {
                merge_into(existing, incoming, true);
            }
            _ => {
                acc.insert(key.clone(), value.clone());
            }
        }
    }
}

fn add_numbers(a: Number, b: &Number) -> Number {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        if let Some(sum) = x.checked_add(y) {
            return Number::from(sum);
        }
    }
    let sum = a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0);
    Number::from_f64(sum).unwrap_or_else(|| Number::from(0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> Reducer {
        Reducer::parse(Some(&v)).expect("valid reducer")
    }

    #[test]
    fn last_and_first_value() {
        assert_eq!(
            Reducer::LastValue.reduce(Some(&json!(1)), &[json!(2), json!(3)]),
            json!(3)
        );
        assert_eq!(
            Reducer::FirstValue.reduce(None, &[json!(2), json!(3)]),
            json!(2)
        );
        assert_eq!(
            Reducer::FirstValue.reduce(Some(&json!(0)), &[json!(2)]),
            json!(0)
        );
    }

    #[test]
    fn append_flattens_one_level_then_dedupes_then_truncates() {
        let r = parse(json!({"type": "append", "unique": true, "max_length": 3}));
        let v = r.reduce(
            Some(&json!([1])),
            &[json!([2, [3]]), json!(2), json!(null), json!(4)],
        );
        assert_eq!(v, json!([[3], null, 4]));
        assert_eq!(parse(json!("append")).reduce(None, &[json!(1)]), json!([1]));
    }

    #[test]
    fn union_dedupes_by_path_or_whole_value() {
        let r = parse(json!({"type": "union", "by": "id"}));
        let v = r.reduce(
            None,
            &[json!([{"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"x": 1}, {"x": 1}])],
        );
        assert_eq!(v, json!([{"id": 1, "v": "a"}, {"x": 1}]));
    }

    #[test]
    fn merge_shallow_and_deep() {
        let cur = json!({"a": {"x": 1}, "b": 1});
        let w = json!({"a": {"y": 2}});
        assert_eq!(
            parse(json!("merge")).reduce(Some(&cur), &[w.clone(), json!(5)]),
            json!({"a": {"y": 2}, "b": 1})
        );
        assert_eq!(
            parse(json!({"type": "merge", "deep": true})).reduce(Some(&cur), &[w]),
            json!({"a": {"x": 1, "y": 2}, "b": 1})
        );
    }

    #[test]
    fn sum_keeps_integers_and_falls_back_to_floats() {
        assert_eq!(Reducer::Sum.reduce(None, &[json!(1), json!(2)]), json!(3));
        assert_eq!(
            Reducer::Sum.reduce(Some(&json!("x")), &[json!(1.5)]),
            json!(1.5)
        );
        let big = Reducer::Sum.reduce(Some(&json!(i64::MAX)), &[json!(1)]);
        assert!(big.is_f64());
    }

    #[test]
    fn bad_reducers_are_reported() {
        for bad in [
            json!(1),
            json!("median"),
            json!({"type": "append", "unique": "yes"}),
            json!({"type": "append", "max_length": 0}),
            json!({"type": "union", "by": []}),
            json!({"type": "merge", "deep": 1}),
            json!({}),
        ] {
            assert!(Reducer::parse(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn write_schemas_follow_the_reducer() {
        let list = Schema::parse(&json!({"type": "list", "item": {"type": "integer"}})).expect("s");
        let append = parse(json!("append"));
        assert!(append.validate_write(Some(&list), &json!(1)).is_ok());
        assert!(append.validate_write(Some(&list), &json!([1, 2])).is_ok());
        assert!(append.validate_write(Some(&list), &json!(["x"])).is_err());
        let obj = Schema::parse(&json!({"type": "object", "fields": {
            "a": {"type": "integer", "required": true}, "b": {"type": "string"}}}))
        .expect("s");
        let merge = parse(json!("merge"));
        assert!(merge.validate_write(Some(&obj), &json!({"b": "x"})).is_ok());
        assert!(merge.validate_write(Some(&obj), &json!(null)).is_err());
        let int = Schema::parse(&json!({"type": "integer"})).expect("s");
        assert!(Reducer::Sum
            .validate_write(Some(&int), &json!(null))
            .is_err());
        assert!(Reducer::LastValue
            .validate_write(Some(&int), &json!(null))
            .is_ok());
    }
}
