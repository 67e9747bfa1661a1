//! Reachability: `no_entrypoint`, `unreachable_node` (errors) and `no_terminal_edge`,
//! `dead_end_node` (warnings).
//!
//! A node is reachable when some edge into it can fire: a `$start` edge, a single-source edge
//! from a reachable node, or a barrier whose sources are *all* reachable (a barrier waits for
//! every source). When the graph has no entrypoint (or no terminal edge) only that one finding
//! is reported, not one per node.

use std::collections::{BTreeMap, BTreeSet};

use super::wiring::{wires, Wire};
use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::{EdgeFrom, GraphDocument, FINISH, START};

/// Runs the topology pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    if doc.nodes.is_empty() && doc.edges.is_empty() {
        return;
    }
    let has_entry = doc
        .edges
        .values()
        .any(|e| matches!(&e.from, EdgeFrom::One(s) if s == START));
    if !has_entry {
        out.push(
            Diagnostic::error(
                codes::NO_ENTRYPOINT,
                "/edges",
                "no edge leaves $start, so no node can ever run",
            )
            .with_id(&doc.id),
        );
    }
    let has_terminal = doc.edges.values().any(|e| e.to == FINISH);
    if !has_terminal && !doc.nodes.is_empty() {
        out.push(
            Diagnostic::warning(
                codes::NO_TERMINAL_EDGE,
                "/edges",
                "no edge reaches $finish; runs end only when they go quiet",
            )
            .with_id(&doc.id),
        );
    }
    let wires = wires(doc);
    let reached = reachable(&wires);
    if has_entry {
        for id in doc.nodes.keys().filter(|id| !reached.contains(id.as_str())) {
            out.push(
                Diagnostic::error(
                    codes::UNREACHABLE_NODE,
                    pointer(&["nodes", id]),
                    format!("node {id:?} can never be activated from $start"),
                )
                .with_id(id),
            );
        }
    }
    if has_terminal {
        let finishing = can_finish(&wires);
        for id in reached.iter().filter(|id| !finishing.contains(*id)) {
            out.push(
                Diagnostic::warning(
                    codes::DEAD_END_NODE,
                    pointer(&["nodes", id]),
                    format!("node {id:?} is reachable but no path leads from it to $finish"),
                )
                .with_id(*id),
            );
        }
    }
}

/// Nodes some firing edge can activate, starting from `$start`.
pub(crate) fn reachable<'a>(wires: &[Wire<'a>]) -> BTreeSet<&'a str> {
    let mut missing: Vec<usize> = wires.iter().map(|w| w.sources.len()).collect();
    let mut by_source: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, wire) in wires.iter().enumerate() {
        for source in &wire.sources {
            by_source.entry(source).or_default().push(i);
        }
    }
    let mut reached = BTreeSet::new();
    let mut queue: Vec<&str> = wires
        .iter()
        .filter(|w| w.from_start)
        .filter_map(|w| w.to)
        .collect();
    while let Some(node) = queue.pop() {
        if !reached.insert(node) {
            continue;
        }
        for &i in by_source.get(node).map(Vec::as_slice).unwrap_or_default() {
            missing[i] -= 1;
            if missing[i] == 0 {
                if let Some(to) = wires[i].to {
                    queue.push(to);
                }
            }
        }
    }
    reached
}

/// Nodes from which some edge path leads to `$finish`.
fn can_finish<'a>(wires: &[Wire<'a>]) -> BTreeSet<&'a str> {
    let mut into: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, wire) in wires.iter().enumerate() {
        if let Some(to) = wire.to {
            into.entry(to).or_default().push(i);
        }
    }
    let mut finishing = BTreeSet::new();
    let mut queue: Vec<&str> = wires
        .iter()
        .filter(|w| w.to.is_none())
        .flat_map(|w| w.sources.iter().copied())
        .collect();
    while let Some(node) = queue.pop() {
        if !finishing.insert(node) {
            continue;
        }
        for &i in into.get(node).map(Vec::as_slice).unwrap_or_default() {
            queue.extend(wires[i].sources.iter().copied());
        }
    }
    finishing
}
