//! Graph versions (`docs/storage-contract.md`, “Graph versions”): content-addressed, owner-scoped,
//! verified on fetch.

use crate::graph::GraphDocument;
use crate::model::{
    GraphHash, GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery, OwnerScope,
    Timestamp,
};
use crate::store::rules::graph::{decode_stored, encode_for_save};
use crate::store::rules::queries::{graph_version_page, validate_graph_query};
use crate::store::StoreError;

use super::state::{GraphKey, GraphRow, State};

fn key(owner: &OwnerScope, graph_ref: &GraphRef) -> GraphKey {
    GraphKey {
        owner: owner.clone(),
        graph_id: graph_ref.graph_id.clone(),
        graph_hash: graph_ref.graph_hash.clone(),
    }
}

/// Whether `owner` has saved the version `(graph_id, graph_hash)`.
pub(super) fn graph_exists(
    state: &State,
    owner: &OwnerScope,
    graph_id: &GraphId,
    graph_hash: &GraphHash,
) -> bool {
    state.graphs.contains_key(&GraphKey {
        owner: owner.clone(),
        graph_id: graph_id.clone(),
        graph_hash: graph_hash.clone(),
    })
}

/// Insert-if-absent, then compare bytes: identical content keeps its publication time.
pub(super) fn save_graph(
    state: &mut State,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
    graph: &GraphDocument,
    now: Timestamp,
) -> Result<(), StoreError> {
    let bytes = encode_for_save(graph_ref, graph)?;
    let key = key(owner, graph_ref);
    match state.graphs.get(&key) {
        Some(existing) if existing.bytes == bytes => Ok(()),
        Some(_) => Err(StoreError::GraphContentConflict),
        None => {
            state.graphs.insert(
                key,
                GraphRow {
                    bytes,
                    published_at: now,
                },
            );
            Ok(())
        }
    }
}

/// The stored document, re-verified against its address.
pub(super) fn fetch_graph(
    state: &State,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<GraphDocument, StoreError> {
    let row = state
        .graphs
        .get(&key(owner, graph_ref))
        .ok_or(StoreError::NotFound)?;
    decode_stored(graph_ref, &row.bytes)
}

/// The versions of `(owner, graph_id)`, newest first by `(published_at, graph_hash)`.
pub(super) fn versions_newest_first(
    state: &State,
    owner: &OwnerScope,
    graph_id: &GraphId,
) -> Vec<GraphVersion> {
    let mut versions: Vec<GraphVersion> = state
        .graphs
        .iter()
        .filter(|(key, _)| &key.owner == owner && &key.graph_id == graph_id)
        .map(|(key, row)| GraphVersion {
            graph_ref: GraphRef {
                graph_id: key.graph_id.clone(),
                graph_hash: key.graph_hash.clone(),
            },
            published_at: row.published_at,
        })
        .collect();
    versions.sort_by(|a, b| {
        (b.published_at, &b.graph_ref.graph_hash).cmp(&(a.published_at, &a.graph_ref.graph_hash))
    });
    versions
}

/// The head of [`versions_newest_first`].
pub(super) fn fetch_latest_graph_ref(
    state: &State,
    owner: &OwnerScope,
    graph_id: &GraphId,
) -> Result<GraphRef, StoreError> {
    versions_newest_first(state, owner, graph_id)
        .into_iter()
        .next()
        .map(|version| version.graph_ref)
        .ok_or(StoreError::NotFound)
}

/// One keyset page of versions; the cursor is exclusive.
pub(super) fn list_graph_versions(
    state: &State,
    owner: &OwnerScope,
    graph_id: &GraphId,
    query: &GraphVersionQuery,
) -> Result<GraphVersionPage, StoreError> {
    validate_graph_query(query)?;
    let rows: Vec<GraphVersion> = versions_newest_first(state, owner, graph_id)
        .into_iter()
        .filter(|v| {
            query.before.as_ref().is_none_or(|c| {
                (v.published_at, &v.graph_ref.graph_hash) < (c.published_at, &c.graph_hash)
            })
        })
        .take(query.limit as usize + 1)
        .collect();
    Ok(graph_version_page(rows, query))
}
