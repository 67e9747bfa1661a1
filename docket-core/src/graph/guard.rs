//! Guards (`docs/runs-and-moments.md`, “Reducers, schemas, guards and portable values”): lax
//! boolean expressions over a [`StateView`] that filter edges.
//!
//! Missing data makes a guard false, never an error; only a malformed expression is an error
//! (a compile diagnostic, or a run failure if a malformed guard reaches the runtime).
//!
//! Wire form:
//!
//! | expression | meaning |
//! | --- | --- |
//! | `{"op": "changed", "field": "f"}` | `f` was written by this barrier (for `$start` edges: provided) |
//! | `{"op": "version_at_least", "field": "f", "version": 2}` | committed version of `f` ≥ 2 |
//! | `{"op": "exists", "ref": R}` | the referenced value is present and not null |
//! | `{"op": "equals", "ref": R, "value": V}` | the referenced value equals `V` |
//! | `{"op": "all", "of": [G, ...]}` / `{"op": "any", "of": [G, ...]}` | conjunction / disjunction |
//! | `{"op": "not", "of": G}` | negation |
//!
//! A reference `R` is a field id (`"f"`) or `{"$path": ["f", "key", 0]}`, walking maps by key and
//! lists by integer index. `V` is a literal, or `{"$path": [...]}` to compare two references.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::model::ValueMap;

/// Deepest nesting of `all`/`any`/`not` accepted.
pub const MAX_GUARD_DEPTH: usize = 32;

/// The committed state a guard (and a node) sees.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct StateView {
    /// Public input/field id → value (fields never written show their effective default when
    /// it is non-null, otherwise they are absent).
    pub values: ValueMap,
    /// Every declared public id → committed version (0 when unwritten).
    pub versions: BTreeMap<String, u64>,
    /// Public ids changed by the barrier being evaluated.
    pub changed: BTreeSet<String>,
}

/// One step of a reference path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSegment {
    /// A map key.
    Key(String),
    /// A list index.
    Index(u64),
}

/// A reference to a value of the state view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueRef {
    /// The public input/field id the path starts from.
    pub field: String,
    /// Steps inside that value.
    pub path: Vec<PathSegment>,
}

/// The right-hand side of `equals`.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A literal value.
    Literal(Value),
    /// Another reference.
    Ref(ValueRef),
}

/// A parsed guard.
#[derive(Clone, Debug, PartialEq)]
pub enum Guard {
    /// The field was written by this barrier.
    Changed(String),
    /// The field's committed version is at least this.
    VersionAtLeast(String, u64),
    /// The referenced value is present and not null.
    Exists(ValueRef),
    /// The referenced value equals the operand (a missing side is false).
    Equals(ValueRef, Operand),
    /// All hold (true when empty).
    All(Vec<Guard>),
    /// Any holds (false when empty).
    Any(Vec<Guard>),
    /// Negation.
    Not(Box<Guard>),
}

/// Why a guard expression is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid guard at {path}: {message}")]
pub struct GuardError {
    /// Location inside the guard expression.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// Whether the problem is a reference path (the `invalid_guard_path` diagnostic).
    pub is_path_error: bool,
}

impl Guard {
    /// Parses the wire form.
    ///
    /// # Errors
    /// [`GuardError`] for a malformed expression.
    pub fn parse(value: &Value) -> Result<Guard, GuardError> {
        parse_at(value, "", 0)
    }

    /// Evaluates the guard against `view`.
    #[must_use]
    pub fn evaluate(&self, view: &StateView) -> bool {
        match self {
            Guard::Changed(field) => view.changed.contains(field),
            Guard::VersionAtLeast(field, n) => view.versions.get(field).copied().unwrap_or(0) >= *n,
            Guard::Exists(r) => resolve(r, view).is_some_and(|v| !v.is_null()),
            Guard::Equals(r, operand) => {
                let Some(left) = resolve(r, view) else {
                    return false;
                };
                match operand {
                    Operand::Literal(v) => left == v,
                    Operand::Ref(other) => resolve(other, view).is_some_and(|right| left == right),
                }
            }
            Guard::All(items) => items.iter().all(|g| g.evaluate(view)),
            Guard::Any(items) => items.iter().any(|g| g.evaluate(view)),
            Guard::Not(inner) => !inner.evaluate(view),
        }
    }

    /// Every field id the guard mentions (for `unknown_guard_field` and `orphaned_field`).
    #[must_use]
    pub fn fields(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_fields(&mut out);
        out
    }

    fn collect_fields(&self, out: &mut BTreeSet<String>) {
        match self {
            Guard::Changed(f) | Guard::VersionAtLeast(f, _) => {
                out.insert(f.clone());
            }
            Guard::Exists(r) => {
                out.insert(r.field.clone());
            }
            Guard::Equals(r, operand) => {
                out.insert(r.field.clone());
                if let Operand::Ref(other) = operand {
                    out.insert(other.field.clone());
                }
            }
            Guard::All(items) | Guard::Any(items) => {
                for g in items {
                    g.collect_fields(out);
                }
            }
            Guard::Not(inner) => inner.collect_fields(out),
        }
    }
}

/// Parses and evaluates a raw guard expression in one go.
///
/// # Errors
/// [`GuardError`] when the expression is malformed.
pub fn evaluate_raw(value: &Value, view: &StateView) -> Result<bool, GuardError> {
    Guard::parse(value).map(|g| g.evaluate(view))
}

fn resolve<'a>(r: &ValueRef, view: &'a StateView) -> Option<&'a Value> {
    let mut cursor = view.values.get(&r.field)?;
    for segment in &r.path {
        cursor = match (segment, cursor) {
            (PathSegment::Key(k), Value::Object(map)) => map.get(k)?,
            (PathSegment::Index(i), Value::Array(items)) => items.get(usize::try_from(*i).ok()?)?,
            _ => return None,
        };
    }
    Some(cursor)
}

fn err(path: &str, message: impl Into<String>) -> GuardError {
    GuardError {
        path: if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
        message: message.into(),
        is_path_error: false,
    }
}

fn parse_at(value: &Value, path: &str, depth: usize) -> Result<Guard, GuardError> {
    if depth > MAX_GUARD_DEPTH {
        return Err(err(
            path,
            format!("nests deeper than {MAX_GUARD_DEPTH} levels"),
        ));
    }
    let map = value
        .as_object()
        .ok_or_else(|| err(path, "a guard must be a map with an \"op\""))?;
    let op = map
        .get("op")
        .and_then(Value::as_str)
        .ok_or_else(|| err(path, "a guard needs a string \"op\""))?;
    let allowed: &[&str] = match op {
        "changed" => &["op", "field"],
        "version_at_least" => &["op", "field", "version"],
        "exists" => &["op", "ref"],
        "equals" => &["op", "ref", "value"],
        "all" | "any" | "not" => &["op", "of"],
        other => return Err(err(path, format!("unknown guard op {other:?}"))),
    };
    if let Some(extra) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(err(path, format!("unexpected key {extra:?} for op {op:?}")));
    }
    let field = || -> Result<String, GuardError> {
        match map.get("field") {
            Some(Value::String(f)) if !f.is_empty() => Ok(f.clone()),
            _ => Err(err(path, "\"field\" must be a non-empty string")),
        }
    };
    match op {
        "changed" => Ok(Guard::Changed(field()?)),
        "version_at_least" => {
            let n = map
                .get("version")
                .and_then(Value::as_u64)
                .ok_or_else(|| err(path, "\"version\" must be a non-negative integer"))?;
            Ok(Guard::VersionAtLeast(field()?, n))
        }
        "exists" => Ok(Guard::Exists(parse_ref(map.get("ref"), path)?)),
        "equals" => {
            let r = parse_ref(map.get("ref"), path)?;
            let operand = match map.get("value") {
                None => return Err(err(path, "\"equals\" needs a \"value\"")),
                Some(Value::Object(m)) if m.contains_key("$path") => {
                    Operand::Ref(parse_ref(Some(&Value::Object(m.clone())), path)?)
                }
                Some(v) => Operand::Literal(v.clone()),
            };
            Ok(Guard::Equals(r, operand))
        }
        "all" | "any" => {
            let items = map
                .get("of")
                .and_then(Value::as_array)
                .ok_or_else(|| err(path, "\"of\" must be a list of guards"))?;
            let parsed = items
                .iter()
                .enumerate()
                .map(|(i, g)| parse_at(g, &format!("{path}/of/{i}"), depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(if op == "all" {
                Guard::All(parsed)
            } else {
                Guard::Any(parsed)
            })
        }
        _ => {
            let inner = map
                .get("of")
                .ok_or_else(|| err(path, "\"not\" needs \"of\""))?;
            Ok(Guard::Not(Box::new(parse_at(
                inner,
                &format!("{path}/of"),
                depth + 1,
            )?)))
        }
    }
}

fn parse_ref(value: Option<&Value>, path: &str) -> Result<ValueRef, GuardError> {
    let path_err = |message: &str| GuardError {
        is_path_error: true,
        ..err(path, message)
    };
    match value {
        Some(Value::String(f)) if !f.is_empty() => Ok(ValueRef {
            field: f.clone(),
            path: vec![],
        }),
        Some(Value::Object(m)) if m.len() == 1 => {
            let steps = m
                .get("$path")
                .and_then(Value::as_array)
                .ok_or_else(|| path_err("a reference map must be {\"$path\": [field, ...]}"))?;
            let (first, rest) = steps
                .split_first()
                .ok_or_else(|| path_err("a path needs at least a field id"))?;
            let field = first
                .as_str()
                .filter(|f| !f.is_empty())
                .ok_or_else(|| path_err("a path starts with a field id"))?;
            let segments = rest
                .iter()
                .map(|s| match s {
                    Value::String(k) => Ok(PathSegment::Key(k.clone())),
                    Value::Number(n) => n
                        .as_u64()
                        .map(PathSegment::Index)
                        .ok_or_else(|| path_err("list indexes are non-negative integers")),
                    _ => Err(path_err("path segments are strings or integers")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(ValueRef {
                field: field.to_owned(),
                path: segments,
            })
        }
        _ => Err(path_err(
            "\"ref\" must be a field id or {\"$path\": [field, ...]}",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn view() -> StateView {
        let mut v = StateView::default();
        v.values.insert("tier".into(), json!("premium"));
        v.values
            .insert("order".into(), json!({"items": [{"sku": "a"}], "total": 5}));
        v.versions.insert("tier".into(), 2);
        v.versions.insert("order".into(), 1);
        v.versions.insert("unset".into(), 0);
        v.changed.insert("tier".into());
        v
    }

    fn eval(g: Value) -> bool {
        evaluate_raw(&g, &view()).expect("valid guard")
    }

    #[test]
    fn leaf_operators() {
        assert!(eval(json!({"op": "changed", "field": "tier"})));
        assert!(!eval(json!({"op": "changed", "field": "order"})));
        assert!(eval(
            json!({"op": "version_at_least", "field": "tier", "version": 2})
        ));
        assert!(!eval(
            json!({"op": "version_at_least", "field": "unset", "version": 1})
        ));
        assert!(eval(
            json!({"op": "exists", "ref": {"$path": ["order", "items", 0, "sku"]}})
        ));
        assert!(!eval(
            json!({"op": "exists", "ref": {"$path": ["order", "items", 3]}})
        ));
        assert!(eval(
            json!({"op": "equals", "ref": "tier", "value": "premium"})
        ));
        assert!(!eval(
            json!({"op": "equals", "ref": "missing", "value": null})
        ));
        assert!(!eval(
            json!({"op": "equals", "ref": "tier", "value": {"$path": ["nope"]}})
        ));
        assert!(eval(json!({"op": "equals",
            "ref": {"$path": ["order", "total"]}, "value": {"$path": ["order", "total"]}})));
    }

    #[test]
    fn combinators() {
        let t = json!({"op": "changed", "field": "tier"});
        let f = json!({"op": "changed", "field": "order"});
        assert!(eval(json!({"op": "all", "of": [t, t]})));
        assert!(!eval(json!({"op": "all", "of": [t, f]})));
        assert!(eval(json!({"op": "any", "of": [f, t]})));
        assert!(!eval(json!({"op": "any", "of": []})));
        assert!(eval(json!({"op": "not", "of": f})));
    }

    #[test]
    fn malformed_guards_are_errors_not_panics() {
        for bad in [
            json!(true),
            json!({"op": "between"}),
            json!({"op": "changed"}),
            json!({"op": "changed", "field": "a", "extra": 1}),
            json!({"op": "version_at_least", "field": "a", "version": -1}),
            json!({"op": "equals", "ref": "a"}),
            json!({"op": "exists", "ref": {"$path": []}}),
            json!({"op": "exists", "ref": {"$path": ["a", true]}}),
            json!({"op": "all", "of": {}}),
        ] {
            assert!(Guard::parse(&bad).is_err(), "{bad}");
        }
        let path_error = Guard::parse(&json!({"op": "exists", "ref": {"$path": ["a", -1]}}))
            .expect_err("bad path");
        assert!(path_error.is_path_error);
    }

    #[test]
    fn fields_are_collected() {
        let g = Guard::parse(&json!({"op": "all", "of": [
            {"op": "changed", "field": "a"},
            {"op": "not", "of": {"op": "equals", "ref": "b", "value": {"$path": ["c", "x"]}}}
        ]}))
        .expect("guard");
        let fields: Vec<String> = g.fields().into_iter().collect();
        assert_eq!(fields, vec!["a", "b", "c"]);
    }
}
