//! Graph versions over the locked tables: content-addressed and owner-scoped, ordered
//! newest first by `(published_at, graph_hash)`.

use docket_core::graph::GraphDocument;
use docket_core::model::{
    GraphHash, GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery, OwnerScope,
    Timestamp,
};
use docket_core::store::rules::graph::decode_stored;
use docket_core::store::rules::queries::graph_version_page;
use docket_core::store::StoreError;

use crate::tables::{GraphRow, Tables};

fn key(owner: &OwnerScope, graph_ref: &GraphRef) -> (OwnerScope, GraphId, GraphHash) {
    (
        owner.clone(),
        graph_ref.graph_id.clone(),
        graph_ref.graph_hash.clone(),
    )
}

/// Versions of `(owner, graph_id)`, newest first by `(published_at, graph_hash)`.
pub(crate) fn newest_first(
    tables: &Tables,
    owner: &OwnerScope,
    graph_id: &GraphId,
) -> Vec<GraphVersion> {
    let mut versions: Vec<GraphVersion> = tables
        .graphs
        .iter()
        .filter(|((o, id, _), _)| o == owner && id == graph_id)
        .map(|((_, id, hash), row)| GraphVersion {
            graph_ref: GraphRef {
                graph_id: id.clone(),
                graph_hash: hash.clone(),
            },
            published_at: row.published_at,
        })
        .collect();
    versions.sort_by(|a, b| {
        (b.published_at, &b.graph_ref.graph_hash).cmp(&(a.published_at, &a.graph_ref.graph_hash))
    });
    versions
}

/// `save_graph` of already encoded canonical bytes: idempotent for the same bytes (the
/// first `published_at` stays), a conflict for different ones.
pub(crate) fn save(
    tables: &mut Tables,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
    bytes: Vec<u8>,
    now: Timestamp,
) -> Result<(), StoreError> {
    match tables.graphs.get(&key(owner, graph_ref)) {
        Some(stored) if stored.bytes == bytes => Ok(()),
        Some(_) => Err(StoreError::GraphContentConflict),
        None => {
            tables.graphs.insert(
                key(owner, graph_ref),
                GraphRow {
                    bytes,
                    published_at: now,
                },
            );
            Ok(())
        }
    }
}

/// `fetch_graph`: stored bytes that do not decode are corrupt, never absent.
pub(crate) fn fetch(
    tables: &Tables,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<GraphDocument, StoreError> {
    let row = tables
        .graphs
        .get(&key(owner, graph_ref))
        .ok_or(StoreError::NotFound)?;
    decode_stored(graph_ref, &row.bytes)
}

/// `fetch_latest_graph_ref`.
pub(crate) fn latest_ref(
    tables: &Tables,
    owner: &OwnerScope,
    graph_id: &GraphId,
) -> Result<GraphRef, StoreError> {
    newest_first(tables, owner, graph_id)
        .into_iter()
        .next()
        .map(|v| v.graph_ref)
        .ok_or(StoreError::NotFound)
}

/// `list_graph_versions` with a validated query.
pub(crate) fn list_versions(
    tables: &Tables,
    owner: &OwnerScope,
    graph_id: &GraphId,
    query: &GraphVersionQuery,
) -> GraphVersionPage {
    let rows: Vec<GraphVersion> = newest_first(tables, owner, graph_id)
        .into_iter()
        .filter(|v| {
            query.before.as_ref().is_none_or(|c| {
                (v.published_at, &v.graph_ref.graph_hash) < (c.published_at, &c.graph_hash)
            })
        })
        .take(query.limit as usize + 1)
        .collect();
    graph_version_page(rows, query)
}
