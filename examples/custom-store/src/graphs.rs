//! [`GraphStore`]: content-addressed, owner-scoped graph versions.

use async_trait::async_trait;
use docket_core::graph::GraphDocument;
use docket_core::model::{
    GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery, OwnerScope, Timestamp,
};
use docket_core::store::rules::graph::{decode_stored, encode_for_save};
use docket_core::store::rules::queries::{graph_version_page, validate_graph_query};
use docket_core::store::{GraphStore, StoreError};

use crate::tables::{GraphRow, Tables};
use crate::MapStore;

fn key(
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> (OwnerScope, GraphId, docket_core::model::GraphHash) {
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

#[async_trait]
impl GraphStore for MapStore {
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let bytes = encode_for_save(graph_ref, graph)?;
        let mut tables = self.lock()?;
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

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        let tables = self.lock()?;
        let row = tables
            .graphs
            .get(&key(owner, graph_ref))
            .ok_or(StoreError::NotFound)?;
        decode_stored(graph_ref, &row.bytes)
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        newest_first(&*self.lock()?, owner, graph_id)
            .into_iter()
            .next()
            .map(|v| v.graph_ref)
            .ok_or(StoreError::NotFound)
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        validate_graph_query(query)?;
        let rows: Vec<GraphVersion> = newest_first(&*self.lock()?, owner, graph_id)
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
}
