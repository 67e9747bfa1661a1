//! Cycle analysis: `unbounded_cycle` and `unguarded_cycle` (warnings).
//!
//! A cycle is a strongly connected component of the node graph with more than one node, or a
//! node with an edge to itself. Cycles are valid; they are only worth a warning when nothing
//! bounds them (no effective `max_supersteps`: the graph policy, else the host's compile
//! option) or, when bounded, when no edge inside them is guarded (so they can only end by
//! hitting the bound).

use std::collections::{BTreeMap, BTreeSet};

use super::wiring::{wires, Wire};
use crate::graph::codes;
use crate::graph::compile::CompileOptions;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::GraphDocument;
use crate::graph::policy::graph_max_supersteps;

/// Runs the cycle pass.
pub fn check(doc: &GraphDocument, options: CompileOptions, out: &mut Vec<Diagnostic>) {
    let wires = wires(doc);
    let nodes: Vec<&str> = doc.nodes.keys().map(String::as_str).collect();
    let bound = graph_max_supersteps(&doc.policies)
        .ok()
        .flatten()
        .or(options.max_supersteps)
        .filter(|n| *n > 0);
    for component in cycles(&nodes, &wires) {
        let first = component.iter().next().copied().unwrap_or_default();
        let members = list(&component);
        let path = pointer(&["nodes", first]);
        if bound.is_none() {
            out.push(
                Diagnostic::warning(
                    codes::UNBOUNDED_CYCLE,
                    path,
                    format!(
                        "cycle through {members} has no max_supersteps bound (graph policy or \
                         host option)"
                    ),
                )
                .with_id(first),
            );
        } else if !wires.iter().any(|w| w.guarded && inside(w, &component)) {
            out.push(
                Diagnostic::warning(
                    codes::UNGUARDED_CYCLE,
                    path,
                    format!(
                        "cycle through {members} has no guarded edge, so it only ends at \
                         max_supersteps"
                    ),
                )
                .with_id(first),
            );
        }
    }
}

fn inside(wire: &Wire<'_>, component: &BTreeSet<&str>) -> bool {
    wire.to.is_some_and(|to| component.contains(to))
        && wire.sources.iter().any(|s| component.contains(s))
}

fn list(component: &BTreeSet<&str>) -> String {
    const SHOWN: usize = 8;
    let mut names: Vec<String> = component
        .iter()
        .take(SHOWN)
        .map(|n| format!("{n:?}"))
        .collect();
    if component.len() > SHOWN {
        names.push(format!("and {} more", component.len() - SHOWN));
    }
    names.join(", ")
}

/// The cyclic strongly connected components, each sorted, ordered by their first node.
pub(crate) fn cycles<'a>(nodes: &[&'a str], wires: &[Wire<'a>]) -> Vec<BTreeSet<&'a str>> {
    let index: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut self_loop = vec![false; nodes.len()];
    for wire in wires {
        let Some(to) = wire.to.and_then(|t| index.get(t)) else {
            continue;
        };
        for source in &wire.sources {
            if let Some(&from) = index.get(source) {
                succ[from].push(*to);
                self_loop[from] |= from == *to;
            }
        }
    }
    let mut out: Vec<BTreeSet<&str>> = tarjan(&succ)
        .into_iter()
        .filter(|c| c.len() > 1 || c.first().is_some_and(|n| self_loop[*n]))
        .map(|c| c.into_iter().map(|i| nodes[i]).collect())
        .collect();
    out.sort();
    out
}

/// Tarjan's algorithm with an explicit stack, so a long chain of nodes cannot overflow the
/// call stack.
fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = succ.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        // (node, position of the next successor to visit)
        let mut frames = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(frame) = frames.last_mut() {
            let (v, pos) = *frame;
            if let Some(&w) = succ[v].get(pos) {
                frame.1 += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarjan_finds_components_and_survives_long_chains() {
        // 0 -> 1 -> 2 -> 0, 3 -> 3, 4 alone
        let succ = vec![vec![1], vec![2], vec![0], vec![3], vec![]];
        let mut comps: Vec<Vec<usize>> = tarjan(&succ)
            .into_iter()
            .map(|mut c| {
                c.sort_unstable();
                c
            })
            .collect();
        comps.sort();
        assert_eq!(comps, vec![vec![0, 1, 2], vec![3], vec![4]]);
        let chain: Vec<Vec<usize>> = (0..200_000).map(|i| vec![i + 1]).chain([vec![]]).collect();
        assert_eq!(tarjan(&chain).len(), 200_001);
    }
}
