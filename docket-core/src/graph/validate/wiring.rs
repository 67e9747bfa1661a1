//! The well-formed edges of a document, as the topology passes see them.
//!
//! Edges with an unknown or misplaced endpoint are left out: the edge pass reports them, and
//! judging reachability through them would only repeat that finding.

use std::collections::BTreeSet;

use crate::graph::document::{EdgeFrom, GraphDocument, FINISH, START};

/// One well-formed edge.
#[derive(Clone, Debug)]
pub(crate) struct Wire<'a> {
    /// Whether the edge leaves `$start`.
    pub from_start: bool,
    /// Distinct source node ids (empty for `$start` edges).
    pub sources: Vec<&'a str>,
    /// Target node id, `None` for `$finish`.
    pub to: Option<&'a str>,
    /// Whether the edge has a guard.
    pub guarded: bool,
}

/// Every well-formed edge of `doc`, in edge id order.
pub(crate) fn wires(doc: &GraphDocument) -> Vec<Wire<'_>> {
    let is_node = |id: &str| doc.nodes.contains_key(id);
    doc.edges
        .values()
        .filter_map(|edge| {
            let (from_start, sources) = match &edge.from {
                EdgeFrom::One(source) if source == START => (true, vec![]),
                EdgeFrom::One(source) if is_node(source) => (false, vec![source.as_str()]),
                EdgeFrom::One(_) => return None,
                EdgeFrom::Many(list) => {
                    if list.is_empty() || !list.iter().all(|s| is_node(s)) {
                        return None;
                    }
                    let distinct: BTreeSet<&str> = list.iter().map(String::as_str).collect();
                    (false, distinct.into_iter().collect())
                }
            };
            let to = if edge.to == FINISH {
                None
            } else if is_node(&edge.to) {
                Some(edge.to.as_str())
            } else {
                return None;
            };
            Some(Wire {
                from_start,
                sources,
                to,
                guarded: edge.guard.is_some(),
            })
        })
        .collect()
}
