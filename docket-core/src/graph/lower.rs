//! Lowering an effective document to a [`RuntimeGraph`] (`docs/graphs.md`,
//! “Lowering and the runtime graph”).
//!
//! Lowering runs only after validation found no errors, but it is written defensively: any
//! inconsistency becomes a `lowering_invariant_failed` / `missing_runtime_channel` diagnostic,
//! never a panic.

use std::collections::BTreeMap;

use super::codes;
use super::diagnostic::{fill_public_ids, Diagnostic};
use super::document::{GraphDocument, START};
use super::policy::graph_max_supersteps;
use super::reducer::Reducer;
use super::runtime_graph::{
    edge_channel, input_channel, node_channel, output_channel, state_channel, Channel, FieldKind,
    RuntimeEdge, RuntimeGraph, RuntimeNode, RuntimeOutput,
};
use super::schema::Schema;
use crate::model::{GraphHash, GraphId};

/// Lowers `doc` (already validated) under `hash`.
///
/// # Errors
/// Lowering diagnostics when the document is internally inconsistent.
pub fn lower(
    doc: &GraphDocument,
    hash: &GraphHash,
    host_max_supersteps: Option<u64>,
) -> Result<RuntimeGraph, Vec<Diagnostic>> {
    let mut problems = Vec::new();
    let graph_id = GraphId::new(doc.id.clone()).map_err(|e| {
        vec![Diagnostic::error(
            codes::LOWERING_INVARIANT_FAILED,
            "/id",
            e.to_string(),
        )]
    })?;
    let mut channels = BTreeMap::new();
    for (id, input) in &doc.inputs {
        let schema = parse_schema(
            input.schema.as_ref(),
            &format!("/inputs/{id}"),
            &mut problems,
        );
        insert_channel(
            &mut channels,
            input_channel(id),
            Channel::Value {
                public_id: id.clone(),
                kind: FieldKind::Input,
                schema,
                reducer: Reducer::LastValue,
                default: non_null(input.default.as_ref()),
                required: input.required,
            },
            &mut problems,
        );
    }
    for (id, field) in &doc.fields {
        let path = format!("/fields/{id}");
        let schema = parse_schema(field.schema.as_ref(), &path, &mut problems);
        let reducer = Reducer::parse(field.reducer.as_ref()).unwrap_or_else(|reasons| {
            problems.push(invariant(&format!("{path}/reducer"), &reasons.join("; ")));
            Reducer::LastValue
        });
        let default = non_null(field.default.as_ref()).or_else(|| reducer.zero());
        insert_channel(
            &mut channels,
            state_channel(id),
            Channel::Value {
                public_id: id.clone(),
                kind: FieldKind::State,
                schema,
                reducer,
                default,
                required: false,
            },
            &mut problems,
        );
    }
    let mut edges = BTreeMap::new();
    for (id, edge) in &doc.edges {
        let from: Vec<String> = edge.from.ids().into_iter().map(str::to_owned).collect();
        let channel = if edge.from.is_barrier() {
            let mut sources = from.clone();
            sources.sort();
            Channel::Barrier {
                edge_id: id.clone(),
                sources,
            }
        } else {
            Channel::Ephemeral {
                edge_id: id.clone(),
            }
        };
        insert_channel(&mut channels, edge_channel(id), channel, &mut problems);
        edges.insert(
            id.clone(),
            RuntimeEdge {
                id: id.clone(),
                channel_id: edge_channel(id),
                from,
                to: edge.to.clone(),
                guard: edge.guard.clone(),
                barrier: edge.from.is_barrier(),
            },
        );
    }
    let mut wiring = node_wiring(&edges);
    let mut nodes = BTreeMap::new();
    for (id, node) in &doc.nodes {
        let Some(implementation) = node.implementation.clone() else {
            problems.push(invariant(
                &format!("/nodes/{id}/implementation"),
                "node has no implementation",
            ));
            continue;
        };
        let subscribe = wiring.subscribe.remove(id.as_str()).unwrap_or_default();
        let outgoing_edges = wiring.outgoing.remove(id.as_str()).unwrap_or_default();
        nodes.insert(
            node_channel(id),
            RuntimeNode {
                public_id: id.clone(),
                runtime_id: node_channel(id),
                implementation,
                config: node.config.clone(),
                subscribe,
                outgoing_edges,
                policies: node.policies.clone(),
                metadata: node.metadata.clone(),
            },
        );
    }
    for edge in edges.values() {
        let known = |endpoint: &str| {
            endpoint == START
                || endpoint.starts_with('$')
                || nodes.contains_key(&node_channel(endpoint))
        };
        if !edge.from.iter().all(|f| known(f)) || !known(&edge.to) {
            problems.push(invariant(
                &format!("/edges/{}", edge.id),
                "edge endpoint is not a node",
            ));
        }
    }
    let mut outputs = BTreeMap::new();
    for (id, output) in &doc.outputs {
        let source = output.source.clone().unwrap_or_else(|| id.clone());
        let source_channel = if doc.inputs.contains_key(&source) {
            input_channel(&source)
        } else {
            state_channel(&source)
        };
        let Some(Channel::Value {
            schema: source_schema,
            ..
        }) = channels.get(&source_channel)
        else {
            problems.push(Diagnostic::error(
                codes::MISSING_RUNTIME_CHANNEL,
                format!("/outputs/{id}/source"),
                format!("output source channel {source_channel} does not exist"),
            ));
            continue;
        };
        let schema = match &output.schema {
            Some(raw) => parse_schema(Some(raw), &format!("/outputs/{id}"), &mut problems),
            None => source_schema.clone(),
        };
        outputs.insert(
            id.clone(),
            RuntimeOutput {
                id: id.clone(),
                runtime_id: output_channel(id),
                source_channel,
                schema,
            },
        );
    }
    let max_supersteps = match graph_max_supersteps(&doc.policies) {
        Ok(graph) => graph.or(host_max_supersteps),
        Err(reason) => {
            problems.push(invariant("/policies/max_supersteps", &reason));
            None
        }
    };
    if !problems.is_empty() {
        fill_public_ids(&mut problems, graph_id.as_str());
        return Err(problems);
    }
    let short = hash.as_str().get(..12).unwrap_or(hash.as_str());
    Ok(RuntimeGraph {
        id: format!("{}@{short}", graph_id.as_str()),
        graph_id,
        graph_hash: hash.clone(),
        channels,
        nodes,
        edges,
        outputs,
        max_supersteps,
    })
}

/// Per node id: the channels of its incoming edges and the ids of its outgoing edges.
pub(crate) struct NodeWiring {
    /// Node id → sorted channel ids of edges whose target it is.
    pub subscribe: BTreeMap<String, Vec<String>>,
    /// Node id → sorted ids of edges listing it as a source.
    pub outgoing: BTreeMap<String, Vec<String>>,
}

/// Indexes `edges` by node in one pass. `edges` is a `BTreeMap`, so both lists come out
/// sorted by edge id (and so by channel id, which only adds a common prefix).
pub(crate) fn node_wiring(edges: &BTreeMap<String, RuntimeEdge>) -> NodeWiring {
    let mut wiring = NodeWiring {
        subscribe: BTreeMap::new(),
        outgoing: BTreeMap::new(),
    };
    for edge in edges.values() {
        wiring
            .subscribe
            .entry(edge.to.clone())
            .or_default()
            .push(edge.channel_id.clone());
        let mut sources: Vec<&String> = edge.from.iter().collect();
        sources.sort();
        sources.dedup();
        for source in sources {
            wiring
                .outgoing
                .entry(source.clone())
                .or_default()
                .push(edge.id.clone());
        }
    }
    wiring
}

fn invariant(path: &str, message: &str) -> Diagnostic {
    Diagnostic::error(codes::LOWERING_INVARIANT_FAILED, path, message)
}

/// A `null` default is no default: readers see the reducer's zero (or nothing), as when the
/// default is absent.
fn non_null(value: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    value.filter(|v| !v.is_null()).cloned()
}

fn insert_channel(
    channels: &mut BTreeMap<String, Channel>,
    id: String,
    channel: Channel,
    problems: &mut Vec<Diagnostic>,
) {
    match channels.entry(id) {
        std::collections::btree_map::Entry::Occupied(taken) => problems.push(Diagnostic::error(
            codes::RUNTIME_ID_COLLISION,
            "",
            format!("runtime id {} is produced twice", taken.key()),
        )),
        std::collections::btree_map::Entry::Vacant(slot) => {
            slot.insert(channel);
        }
    }
}

fn parse_schema(
    raw: Option<&serde_json::Value>,
    path: &str,
    problems: &mut Vec<Diagnostic>,
) -> Option<Schema> {
    let raw = raw?;
    match Schema::parse(raw) {
        Ok(s) => Some(s),
        Err(reasons) => {
            problems.push(invariant(&format!("{path}/schema"), &reasons.join("; ")));
            None
        }
    }
}
