//! A picture of a graph as inline SVG: nodes in columns by their distance from `$start`,
//! plain edges as lines, guarded edges dashed (the guard in a tooltip), barrier joins through a
//! small diamond, and the nodes of the current superstep highlighted.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use docket::core::graph::GraphDocument;

use crate::html::escape;

const COL: i64 = 190;
const ROW: i64 = 70;
const W: i64 = 130;
const H: i64 = 34;
const PAD: i64 = 20;

/// The SVG (`id="graph"`) of `doc`; nodes in `active` get class `active`.
#[must_use]
pub fn graph_svg(doc: &GraphDocument, active: &BTreeSet<String>) -> String {
    let mut names: Vec<String> = vec!["$start".to_owned()];
    names.extend(doc.nodes.keys().cloned());
    names.push("$finish".to_owned());
    // Successors, for the column (breadth-first distance from $start; cycles are fine).
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for edge in doc.edges.values() {
        for from in edge.from.ids() {
            next.entry(from).or_default().push(edge.to.as_str());
        }
    }
    let mut depth: BTreeMap<&str, i64> = BTreeMap::new();
    let mut queue = VecDeque::from([("$start", 0i64)]);
    while let Some((name, d)) = queue.pop_front() {
        if depth.contains_key(name) {
            continue;
        }
        depth.insert(name, d);
        for to in next.get(name).into_iter().flatten() {
            queue.push_back((to, d + 1));
        }
    }
    let max_depth = depth.values().copied().max().unwrap_or(0);
    // Unreachable nodes go in a column of their own; $finish always last.
    let column = |name: &str| -> i64 {
        if name == "$finish" {
            return max_depth.max(1) + 1;
        }
        depth.get(name).copied().unwrap_or(max_depth + 1)
    };
    let mut pos: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut rows: BTreeMap<i64, i64> = BTreeMap::new();
    for name in &names {
        let c = column(name);
        let r = rows.entry(c).or_insert(0);
        pos.insert(name.clone(), (PAD + c * COL, PAD + *r * ROW));
        *r += 1;
    }
    let width = pos.values().map(|p| p.0).max().unwrap_or(0) + W + PAD;
    let height = pos.values().map(|p| p.1).max().unwrap_or(0) + H + PAD;
    let mut out = format!(
        "<svg id=\"graph\" class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"graph {}\">",
        escape(&doc.id)
    );
    let center = |name: &str| {
        pos.get(name)
            .map_or((0, 0), |&(x, y)| (x + W / 2, y + H / 2))
    };
    for (edge_id, edge) in &doc.edges {
        let guarded = edge.guard.is_some();
        let class = if guarded { "edge guarded" } else { "edge" };
        let title = match &edge.guard {
            Some(guard) => format!("{edge_id} (guard: {guard})"),
            None => edge_id.clone(),
        };
        let (tx, ty) = center(&edge.to);
        if edge.from.is_barrier() {
            // A barrier join: every source into a diamond, the diamond into the target.
            let sources: Vec<(i64, i64)> = edge.from.ids().into_iter().map(center).collect();
            let n = i64::try_from(sources.len()).unwrap_or(1).max(1);
            let (sx, sy) = sources.iter().fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
            let (bx, by) = ((sx / n + tx) / 2, (sy / n + ty) / 2);
            let _ = write!(
                out,
                "<g class=\"{class} barrier\" data-edge-id=\"{id}\"><title>{t} (barrier)</title>",
                id = escape(edge_id),
                t = escape(&title)
            );
            for (x, y) in sources {
                let _ = write!(out, "<line x1=\"{x}\" y1=\"{y}\" x2=\"{bx}\" y2=\"{by}\"/>");
            }
            let _ = write!(
                out,
                "<line x1=\"{bx}\" y1=\"{by}\" x2=\"{tx}\" y2=\"{ty}\"/>\
                 <polygon class=\"barrier-mark\" points=\"{},{by} {bx},{} {},{by} {bx},{}\"/></g>",
                bx - 8,
                by - 8,
                bx + 8,
                by + 8
            );
        } else {
            let (fx, fy) = center(edge.from.ids().first().copied().unwrap_or("$start"));
            let _ = write!(
                out,
                "<g class=\"{class}\" data-edge-id=\"{id}\"><title>{t}</title>\
                 <line x1=\"{fx}\" y1=\"{fy}\" x2=\"{tx}\" y2=\"{ty}\"/></g>",
                id = escape(edge_id),
                t = escape(&title)
            );
        }
    }
    for name in &names {
        let (x, y) = pos.get(name).copied().unwrap_or((0, 0));
        let mut class = String::from("node");
        if name.starts_with('$') {
            class.push_str(" endpoint");
        }
        if active.contains(name) {
            class.push_str(" active");
        }
        let implementation = doc
            .nodes
            .get(name)
            .and_then(|n| n.implementation.clone())
            .unwrap_or_default();
        let label: String = name.chars().take(18).collect();
        let _ = write!(
            out,
            "<g class=\"{class}\" data-node-id=\"{id}\"><title>{id} {imp}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"{H}\" rx=\"6\"/>\
             <text x=\"{tx}\" y=\"{ty}\">{label}</text></g>",
            id = escape(name),
            imp = escape(&implementation),
            tx = x + 8,
            ty = y + 22,
            label = escape(&label),
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket::core::graph::parse_document;

    #[test]
    fn barriers_guards_and_active_nodes_are_marked_and_ids_escaped() {
        let doc = parse_document(
            r#"{"schema_version": 1, "id": "g<x>",
              "fields": {"n": {"schema": {"type": "integer"}}},
              "nodes": {"a": {"implementation": "std.set"}, "b": {"implementation": "std.set"},
                        "j": {"implementation": "std.set"}},
              "edges": {"s1": {"from": "$start", "to": "a"}, "s2": {"from": "$start", "to": "b"},
                        "join": {"from": ["a", "b"], "to": "j"},
                        "loop": {"from": "j", "to": "a", "guard": {"lt": [{"field": "n"}, 3]}},
                        "end": {"from": "j", "to": "$finish"}}}"#,
        )
        .expect("a document");
        let active = BTreeSet::from(["j".to_owned()]);
        let svg = graph_svg(&doc, &active);
        assert!(
            svg.contains("class=\"edge barrier\" data-edge-id=\"join\""),
            "{svg}"
        );
        assert!(
            svg.contains("class=\"edge guarded\" data-edge-id=\"loop\""),
            "{svg}"
        );
        assert!(
            svg.contains("class=\"node active\" data-node-id=\"j\""),
            "{svg}"
        );
        assert!(svg.contains("class=\"node\" data-node-id=\"a\""), "{svg}");
        assert!(svg.contains("aria-label=\"graph g&lt;x&gt;\""), "{svg}");
        assert_eq!(svg.matches("<g class=\"node").count(), 5);
    }
}
