//! Validation of node writes (`docs/runs-and-moments.md`, “Settlement”): state updates and
//! interrupt requests.
//!
//! A problem found here is a permanent failure of the attempt (never retried): retrying the
//! same node against the same snapshot would produce the same invalid write.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::graph::runtime_graph::{input_channel, state_channel};
use crate::graph::{Channel, FieldKind, RuntimeGraph, Schema};
use crate::model::ids::check_id;
use crate::model::{check_portable, check_portable_map, excerpt, Interrupt, Run, ValueMap};

/// Checks an update: portable, only declared state fields, each value valid under its
/// reducer's write schema.
///
/// # Errors
/// Every reason found.
pub fn validate_update(rtg: &RuntimeGraph, update: &ValueMap) -> Result<(), Vec<String>> {
    let mut reasons = Vec::new();
    if let Err(e) = check_portable_map(update) {
        reasons.push(format!("update is not portable: {e}"));
    }
    for (key, value) in update {
        match rtg.state_field(key) {
            Some(Channel::Value {
                kind: FieldKind::State,
                schema,
                reducer,
                ..
            }) => {
                if let Err(problems) = reducer.validate_write(schema.as_ref(), value) {
                    reasons.extend(
                        problems
                            .into_iter()
                            .map(|p| format!("field {:?}: {p}", excerpt(key))),
                    );
                }
            }
            _ if rtg.channels.contains_key(&input_channel(key)) => {
                reasons.push(format!(
                    "field {:?} is a run input and read-only",
                    excerpt(key)
                ));
            }
            _ => reasons.push(format!("unknown field {:?}", excerpt(key))),
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

/// Checks a resolution value written by `node_id` into state field `field`, as if the node
/// had written it.
///
/// # Errors
/// Every reason found.
pub fn validate_field_write(
    rtg: &RuntimeGraph,
    field: &str,
    value: &Value,
) -> Result<(), Vec<String>> {
    let mut update = ValueMap::new();
    update.insert(field.to_owned(), value.clone());
    validate_update(rtg, &update)
}

/// Checks an interrupt request of `node_id` and stamps the node on it.
///
/// `taken` holds interrupt ids already claimed by earlier (node-ordered) requests of the same
/// superstep; the request's own id is added to it when valid.
///
/// # Errors
/// Every reason found.
pub fn validate_interrupt(
    rtg: &RuntimeGraph,
    run: &Run,
    node_id: &str,
    interrupt: &Interrupt,
    taken: &mut BTreeSet<String>,
) -> Result<Interrupt, Vec<String>> {
    let mut reasons = Vec::new();
    let mut stamped = interrupt.clone();
    stamped.node_id = Some(node_id.to_owned());
    if !matches!(
        rtg.channels.get(&state_channel(&interrupt.resume_channel)),
        Some(Channel::Value {
            kind: FieldKind::State,
            ..
        })
    ) {
        reasons.push(format!(
            "resume_channel {:?} is not a declared state field",
            interrupt.resume_channel
        ));
    }
    if let Some(schema) = &interrupt.schema {
        if let Err(problems) = Schema::parse(schema) {
            reasons.push(format!("invalid schema: {}", problems.join("; ")));
        }
    }
    if let Err(e) = check_portable_map(&interrupt.metadata) {
        reasons.push(format!("metadata is not portable: {e}"));
    }
    if let Some(schema) = &interrupt.schema {
        if let Err(e) = check_portable(schema) {
            reasons.push(format!("schema is not portable: {e}"));
        }
    }
    if let Some(id) = &interrupt.id {
        if let Err(e) = check_id("interrupt id", id) {
            reasons.push(e.to_string());
        } else if run.interrupts.contains_key(id) || taken.contains(id) {
            reasons.push(format!("interrupt id {:?} already exists", excerpt(id)));
        }
    }
    if reasons.is_empty() {
        if let Some(id) = &interrupt.id {
            taken.insert(id.clone());
        }
        Ok(stamped)
    } else {
        Err(reasons)
    }
}

/// The permanent failure reason of an invalid update.
#[must_use]
pub fn invalid_update_reason(reasons: &[String]) -> String {
    format!("invalid_state_update: {}", reasons.join("; "))
}

/// The permanent failure reason of an invalid interrupt.
#[must_use]
pub fn invalid_interrupt_reason(reasons: &[String]) -> String {
    format!("invalid_interrupt: {}", reasons.join("; "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::testing::{rtg, started};

    fn graph() -> RuntimeGraph {
        rtg(json!({
            "inputs": {"i": {"schema": {"type": "integer"}}},
            "fields": {
                "n": {"schema": {"type": "integer"}},
                "tags": {"schema": {"type": "list", "item": {"type": "string"}}, "reducer": "append"},
            },
        }))
    }

    fn map(v: Value) -> ValueMap {
        v.as_object().cloned().expect("map")
    }

    #[test]
    fn updates_collect_every_reason() {
        let g = graph();
        assert!(validate_update(&g, &map(json!({"n": 1, "tags": "x"}))).is_ok());
        let reasons = validate_update(&g, &map(json!({"n": "1", "i": 2, "q": 3, "tags": [1]})))
            .expect_err("invalid");
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(invalid_update_reason(&reasons).starts_with("invalid_state_update: "));
    }

    #[test]
    fn interrupts_are_stamped_and_their_ids_reserved() {
        let g = graph();
        let run = started(&g, json!({}));
        let mut taken = BTreeSet::new();
        let mut request = Interrupt::new("n");
        request.id = Some("ask".into());
        request.node_id = Some("impostor".into());
        let stamped = validate_interrupt(&g, &run, "a", &request, &mut taken).expect("valid");
        assert_eq!(stamped.node_id.as_deref(), Some("a"));
        assert!(taken.contains("ask"));
        let again = validate_interrupt(&g, &run, "b", &request, &mut taken).expect_err("taken");
        assert!(again[0].contains("already exists"));
        let mut bad = Interrupt::new("i");
        bad.id = Some(String::new());
        bad.schema = Some(json!({"type": "nope"}));
        let reasons = validate_interrupt(&g, &run, "a", &bad, &mut taken).expect_err("invalid");
        assert_eq!(reasons.len(), 3, "{reasons:?}");
    }
}
