//! Branch groups (editor metadata on nodes: group name → outgoing edge ids).
//!
//! A branch group names alternative routes out of a node, so each listed edge must exist,
//! must leave that node, must be listed once, and should be guarded (an unguarded route
//! always fires and is not an alternative).

use std::collections::BTreeSet;

use super::shorten;
use crate::graph::codes;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::GraphDocument;

/// Runs the branches pass.
pub fn check(doc: &GraphDocument, out: &mut Vec<Diagnostic>) {
    for (node_id, node) in &doc.nodes {
        let mut seen = BTreeSet::new();
        for (group, edge_ids) in &node.branches {
            if group.starts_with('$') {
                out.push(
                    Diagnostic::error(
                        codes::RESERVED_ID,
                        pointer(&["nodes", node_id, "branches", group]),
                        format!("branch group name {} is reserved", shorten(group)),
                    )
                    .with_id(node_id),
                );
            }
            for (i, edge_id) in edge_ids.iter().enumerate() {
                let index = i.to_string();
                let at = pointer(&["nodes", node_id, "branches", group, &index]);
                if !seen.insert(edge_id.as_str()) {
                    out.push(
                        Diagnostic::error(
                            codes::DUPLICATE_BRANCH_EDGE,
                            at,
                            format!(
                                "edge {} is listed in more than one branch slot",
                                shorten(edge_id)
                            ),
                        )
                        .with_id(node_id),
                    );
                    continue;
                }
                let Some(edge) = doc.edges.get(edge_id) else {
                    out.push(
                        Diagnostic::error(
                            codes::UNKNOWN_BRANCH_EDGE,
                            at,
                            format!("branch edge {} does not exist", shorten(edge_id)),
                        )
                        .with_id(node_id),
                    );
                    continue;
                };
                if !edge.from.ids().contains(&node_id.as_str()) {
                    out.push(
                        Diagnostic::error(
                            codes::BRANCH_EDGE_SOURCE_MISMATCH,
                            at,
                            format!("branch edge {edge_id:?} does not leave node {node_id:?}"),
                        )
                        .with_id(node_id),
                    );
                } else if edge.guard.is_none() {
                    out.push(
                        Diagnostic::warning(
                            codes::UNGUARDED_BRANCH_EDGE,
                            at,
                            format!("branch edge {edge_id:?} has no guard, so it always fires"),
                        )
                        .with_id(edge_id),
                    );
                }
            }
        }
    }
}
