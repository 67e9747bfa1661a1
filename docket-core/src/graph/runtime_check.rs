//! Runtime validation (`docs/graphs.md`, “The compiler pipeline”): the internal invariants of a
//! lowered [`RuntimeGraph`], checked after lowering and usable on any runtime graph a host hands in
//! (e.g. a precompiled one).
//!
//! A graph lowered from a validated document always passes; a failure means a compiler bug or
//! a hand-edited runtime graph, and is reported as a diagnostic, never a panic:
//! `runtime_id_collision` (two elements share a runtime id), `missing_runtime_channel` (a
//! reference to an absent channel) and `lowering_invariant_failed` (anything else).

use std::collections::BTreeMap;

use super::codes;
use super::diagnostic::{fill_public_ids, pointer, Diagnostic};
use super::document::{FINISH, START};
use super::guard::Guard;
use super::lower::node_wiring;
use super::runtime_graph::{
    edge_channel, input_channel, node_channel, output_channel, state_channel, Channel, FieldKind,
    RuntimeGraph,
};

/// Every invariant violation of `rtg` (empty when it is sound).
#[must_use]
pub fn check_runtime(rtg: &RuntimeGraph) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    identity(rtg, &mut out);
    runtime_ids(rtg, &mut out);
    channels(rtg, &mut out);
    edges(rtg, &mut out);
    nodes(rtg, &mut out);
    outputs(rtg, &mut out);
    fill_public_ids(&mut out, rtg.graph_id.as_str());
    out
}

fn invariant(path: String, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(codes::LOWERING_INVARIANT_FAILED, path, message)
}

fn identity(rtg: &RuntimeGraph, out: &mut Vec<Diagnostic>) {
    let hash = rtg.graph_hash.as_str();
    let expected = format!(
        "{}@{}",
        rtg.graph_id.as_str(),
        hash.get(..12).unwrap_or(hash)
    );
    if rtg.id != expected {
        out.push(invariant(
            "/id".into(),
            format!("runtime graph id {:?} should be {expected:?}", rtg.id),
        ));
    }
    if rtg.max_supersteps == Some(0) {
        out.push(invariant(
            "/policies/max_supersteps".into(),
            "max_supersteps must be positive",
        ));
    }
}

/// Every runtime id (channels, nodes, outputs) must be unique across kinds.
fn runtime_ids(rtg: &RuntimeGraph, out: &mut Vec<Diagnostic>) {
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    let mut claim = |id: &str, owner: String, out: &mut Vec<Diagnostic>| {
        if let Some(first) = owners.get(id) {
            out.push(Diagnostic::error(
                codes::RUNTIME_ID_COLLISION,
                owner.clone(),
                format!("runtime id {id:?} of {owner} is already used by {first}"),
            ));
        } else {
            owners.insert(id.to_owned(), owner);
        }
    };
    for (id, channel) in &rtg.channels {
        claim(id, channel_path(channel), out);
    }
    for (key, node) in &rtg.nodes {
        if *key != node.runtime_id || node.runtime_id != node_channel(&node.public_id) {
            out.push(invariant(
                pointer(&["nodes", &node.public_id]),
                format!(
                    "node keyed {key:?} has runtime id {:?} and public id {:?}",
                    node.runtime_id, node.public_id
                ),
            ));
        }
        claim(&node.runtime_id, pointer(&["nodes", &node.public_id]), out);
    }
    for (key, output) in &rtg.outputs {
        if *key != output.id || output.runtime_id != output_channel(&output.id) {
            out.push(invariant(
                pointer(&["outputs", &output.id]),
                format!(
                    "output keyed {key:?} has id {:?} and runtime id {:?}",
                    output.id, output.runtime_id
                ),
            ));
        }
        claim(&output.runtime_id, pointer(&["outputs", &output.id]), out);
    }
}

fn channel_path(channel: &Channel) -> String {
    match channel {
        Channel::Value {
            public_id, kind, ..
        } => match kind {
            FieldKind::Input => pointer(&["inputs", public_id]),
            FieldKind::State => pointer(&["fields", public_id]),
        },
        Channel::Ephemeral { edge_id } | Channel::Barrier { edge_id, .. } => {
            pointer(&["edges", edge_id])
        }
    }
}

fn channels(rtg: &RuntimeGraph, out: &mut Vec<Diagnostic>) {
    for (id, channel) in &rtg.channels {
        let path = channel_path(channel);
        let expected = match channel {
            Channel::Value {
                public_id, kind, ..
            } => match kind {
                FieldKind::Input => input_channel(public_id),
                FieldKind::State => state_channel(public_id),
            },
            Channel::Ephemeral { edge_id } | Channel::Barrier { edge_id, .. } => {
                edge_channel(edge_id)
            }
        };
        if *id != expected {
            out.push(invariant(
                path.clone(),
                format!("channel {id:?} should be keyed {expected:?}"),
            ));
        }
        let (edge_id, barrier_sources) = match channel {
            Channel::Value { .. } => continue,
            Channel::Ephemeral { edge_id } => (edge_id, None),
            Channel::Barrier { edge_id, sources } => (edge_id, Some(sources)),
        };
        let Some(edge) = rtg.edges.get(edge_id) else {
            out.push(invariant(
                path,
                format!("edge channel {id:?} belongs to no edge"),
            ));
            continue;
        };
        let mut from = edge.from.clone();
        from.sort();
        let consistent = match barrier_sources {
            None => !edge.barrier,
            Some(sources) => edge.barrier && *sources == from,
        };
        if !consistent {
            out.push(invariant(
                path,
                format!("channel {id:?} does not match the barrier shape of its edge"),
            ));
        }
    }
}

fn edges(rtg: &RuntimeGraph, out: &mut Vec<Diagnostic>) {
    let is_node = |id: &str| rtg.nodes.contains_key(&node_channel(id));
    for (key, edge) in &rtg.edges {
        let path = pointer(&["edges", &edge.id]);
        if *key != edge.id || edge.channel_id != edge_channel(&edge.id) {
            out.push(invariant(
                path.clone(),
                format!(
                    "edge keyed {key:?} has id {:?} and channel {:?}",
                    edge.id, edge.channel_id
                ),
            ));
        }
        if !rtg.channels.contains_key(&edge.channel_id) {
            out.push(Diagnostic::error(
                codes::MISSING_RUNTIME_CHANNEL,
                path.clone(),
                format!("edge channel {:?} does not exist", edge.channel_id),
            ));
        }
        let from_ok = match edge.from.as_slice() {
            [] => false,
            [only] if only == START => !edge.barrier,
            sources => sources.iter().all(|s| is_node(s)),
        };
        if !from_ok || !(edge.to == FINISH || is_node(&edge.to)) {
            out.push(invariant(
                path.clone(),
                "an edge endpoint is not a node of the runtime graph",
            ));
        }
        if let Some(Err(e)) = edge.guard.as_ref().map(Guard::parse) {
            out.push(invariant(path, format!("malformed guard: {e}")));
        }
    }
}

fn nodes(rtg: &RuntimeGraph, out: &mut Vec<Diagnostic>) {
    let mut wiring = node_wiring(&rtg.edges);
    for node in rtg.nodes.values() {
        let path = pointer(&["nodes", &node.public_id]);
        if node.implementation.is_empty() {
            out.push(invariant(path.clone(), "node has no implementation"));
        }
        for channel in node
            .subscribe
            .iter()
            .filter(|c| !rtg.channels.contains_key(*c))
        {
            out.push(Diagnostic::error(
                codes::MISSING_RUNTIME_CHANNEL,
                path.clone(),
                format!("node subscribes to channel {channel:?}, which does not exist"),
            ));
        }
        let subscribe = wiring.subscribe.remove(&node.public_id).unwrap_or_default();
        if node.subscribe != subscribe {
            out.push(invariant(
                path.clone(),
                format!(
                    "node subscribes to {:?}, expected the sorted channels of its incoming \
                     edges {subscribe:?}",
                    node.subscribe
                ),
            ));
        }
        let outgoing = wiring.outgoing.remove(&node.public_id).unwrap_or_default();
        if node.outgoing_edges != outgoing {
            out.push(invariant(
                path,
                format!(
                    "node lists outgoing edges {:?}, expected {outgoing:?}",
                    node.outgoing_edges
                ),
            ));
        }
    }
}

fn outputs(rtg: &RuntimeGraph, out: &mut Vec<Diagnostic>) {
    for output in rtg.outputs.values() {
        if !matches!(
            rtg.channels.get(&output.source_channel),
            Some(Channel::Value { .. })
        ) {
            out.push(Diagnostic::error(
                codes::MISSING_RUNTIME_CHANNEL,
                pointer(&["outputs", &output.id, "source"]),
                format!(
                    "output source channel {:?} is not an input or state channel",
                    output.source_channel
                ),
            ));
        }
    }
}
