//! Edge triggering at a barrier (`docs/runs-and-moments.md`, “Update barrier”) and at
//! initialization (`docs/runs-and-moments.md`, “Initialization”).
//!
//! Barrier joins remember completed sources across supersteps (sticky `barrier_seen`) and fire
//! once every source has completed since the last firing. Guards filter *after* that
//! bookkeeping: a barrier that fires but whose guard is false still resets.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::state_view::state_view;
use crate::graph::{Guard, RuntimeGraph, FINISH};
use crate::model::ChannelState;

/// Edges that fired, in edge-id order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fired {
    /// `(edge id, target node)` of fired edges that target a node.
    pub to_nodes: Vec<(String, String)>,
    /// Ids of fired edges that target `$finish`.
    pub to_finish: Vec<String>,
}

/// A guard that could not be evaluated.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardFailure {
    /// The edge whose guard is malformed.
    pub edge_id: String,
    /// Why.
    pub reasons: Vec<String>,
}

/// Evaluates the edges leaving `completed` nodes after a barrier.
///
/// `channels` already holds the barrier's state writes; barrier bookkeeping and activation
/// bumps are applied to it in place. `changed` are the public field ids the barrier wrote.
///
/// # Errors
/// [`GuardFailure`] for the first (edge-id order) malformed guard.
pub fn fire_after_barrier(
    rtg: &RuntimeGraph,
    channels: &mut BTreeMap<String, ChannelState>,
    completed: &BTreeSet<String>,
    changed: &BTreeSet<String>,
) -> Result<Fired, GuardFailure> {
    let outgoing: BTreeSet<&String> = completed
        .iter()
        .filter_map(|n| rtg.node(n))
        .flat_map(|n| n.outgoing_edges.iter())
        .collect();
    let mut candidates = Vec::new();
    for edge_id in outgoing {
        let Some(edge) = rtg.edges.get(edge_id) else {
            continue;
        };
        if !edge.barrier {
            candidates.push(edge_id.clone());
            continue;
        }
        let channel = channels
            .entry(edge.channel_id.clone())
            .or_insert_with(|| ChannelState {
                channel_id: edge.channel_id.clone(),
                value: Value::Null,
                version: 0,
                barrier_seen: Vec::new(),
            });
        let mut seen: BTreeSet<String> = channel.barrier_seen.iter().cloned().collect();
        seen.extend(edge.from.iter().filter(|s| completed.contains(*s)).cloned());
        if edge.from.iter().all(|s| seen.contains(s)) {
            channel.barrier_seen.clear();
            candidates.push(edge_id.clone());
        } else {
            channel.barrier_seen = seen.into_iter().collect();
        }
    }
    let view = state_view(rtg, channels, changed.clone());
    let mut fired = Fired::default();
    for edge_id in candidates {
        let Some(edge) = rtg.edges.get(&edge_id) else {
            continue;
        };
        if !passes(edge.guard.as_ref(), &view, &edge_id)? {
            continue;
        }
        if edge.to == FINISH {
            fired.to_finish.push(edge_id);
        } else {
            bump(channels, &edge.channel_id);
            fired.to_nodes.push((edge_id, edge.to.clone()));
        }
    }
    Ok(fired)
}

/// Whether an optional raw guard holds in `view`.
///
/// # Errors
/// [`GuardFailure`] when the guard is malformed.
pub fn passes(
    guard: Option<&Value>,
    view: &crate::graph::StateView,
    edge_id: &str,
) -> Result<bool, GuardFailure> {
    match guard {
        None => Ok(true),
        Some(raw) => Guard::parse(raw)
            .map(|g| g.evaluate(view))
            .map_err(|e| GuardFailure {
                edge_id: edge_id.to_owned(),
                reasons: vec![e.to_string()],
            }),
    }
}

/// Activates an edge channel: value `true`, version + 1 (barrier bookkeeping kept).
pub fn bump(channels: &mut BTreeMap<String, ChannelState>, channel_id: &str) {
    let channel = channels
        .entry(channel_id.to_owned())
        .or_insert_with(|| ChannelState {
            channel_id: channel_id.to_owned(),
            value: Value::Null,
            version: 0,
            barrier_seen: Vec::new(),
        });
    channel.value = Value::Bool(true);
    channel.version += 1;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runtime::testing::{rtg, set};

    fn join_graph() -> RuntimeGraph {
        rtg(json!({
            "nodes": {"a": set(json!({})), "b": set(json!({})), "c": set(json!({})), "j": set(json!({}))},
            "edges": {
                "e0": {"from": "$start", "to": "a"}, "e1": {"from": "$start", "to": "b"},
                "e2": {"from": "$start", "to": "c"},
                "join": {"from": ["c", "b", "a"], "to": "j"},
            },
        }))
    }

    #[test]
    fn a_barrier_accumulates_sorted_completions_until_every_source_completed() {
        let g = join_graph();
        let mut channels = BTreeMap::new();
        let none = BTreeSet::new();
        let completed = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect();
        let fired =
            fire_after_barrier(&g, &mut channels, &completed(&["c", "a"]), &none).expect("fires");
        assert_eq!(fired, Fired::default());
        assert_eq!(channels["edge:join"].barrier_seen, vec!["a", "c"]);
        assert_eq!(channels["edge:join"].version, 0);
        let fired =
            fire_after_barrier(&g, &mut channels, &completed(&["a"]), &none).expect("fires");
        assert!(
            fired.to_nodes.is_empty(),
            "a repeated source does not complete the set"
        );
        let fired =
            fire_after_barrier(&g, &mut channels, &completed(&["b"]), &none).expect("fires");
        assert_eq!(fired.to_nodes, vec![("join".to_owned(), "j".to_owned())]);
        assert!(channels["edge:join"].barrier_seen.is_empty());
        assert_eq!(channels["edge:join"].version, 1);
        assert_eq!(channels["edge:join"].value, json!(true));
    }

    #[test]
    fn an_absent_guard_passes_and_a_malformed_one_is_reported() {
        let view = crate::graph::StateView::default();
        assert_eq!(passes(None, &view, "e"), Ok(true));
        let err = passes(Some(&json!({"op": "?"})), &view, "e").expect_err("bad");
        assert_eq!(err.edge_id, "e");
        assert_eq!(err.reasons.len(), 1);
    }
}
