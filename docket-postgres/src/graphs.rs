//! Content-addressed graph versions (`docs/storage-contract.md`, “Graph versions”), owner-scoped.

use docket_core::graph::GraphDocument;
use docket_core::model::{
    GraphCursor, GraphHash, GraphId, GraphRef, GraphVersion, GraphVersionPage, GraphVersionQuery,
    OwnerScope, Timestamp,
};
use docket_core::store::rules::{graph, queries};
use docket_core::store::StoreError;
use sqlx::Row;

use crate::error;
use crate::store::PostgresStore;

/// A concurrent pruner may delete a version between our insert-if-absent and our read-back;
/// a few rounds settle it.
const SAVE_ROUNDS: usize = 3;

impl PostgresStore {
    pub(crate) async fn do_save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        doc: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let bytes = graph::encode_for_save(graph_ref, doc)?;
        let mut conn = self.conn().await?;
        for _ in 0..SAVE_ROUNDS {
            let inserted = self
                .q(&self.sql().save_graph)
                .bind(owner.tenant_id().map(|t| t.as_str()))
                .bind(graph_ref.graph_id.as_str())
                .bind(graph_ref.graph_hash.as_str())
                .bind(&bytes)
                .bind(now.as_micros())
                .fetch_optional(&mut conn)
                .await
                .map_err(error::sent)?;
            if inserted.is_some() {
                return Ok(());
            }
            match self.graph_bytes(&mut conn, owner, graph_ref).await? {
                Some(stored) if stored == bytes => return Ok(()),
                Some(_) => return Err(StoreError::GraphContentConflict),
                None => continue,
            }
        }
        Err(StoreError::retryable(docket_core::store::Message(
            "the graph version kept disappearing while being saved".into(),
        )))
    }

    async fn graph_bytes(
        &self,
        conn: &mut sqlx::PgConnection,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let row = self
            .q(&self.sql().fetch_graph)
            .bind(owner.scope_key())
            .bind(graph_ref.graph_id.as_str())
            .bind(graph_ref.graph_hash.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(error::safe)?;
        row.map(|row| {
            row.try_get::<Vec<u8>, _>("graph")
                .map_err(|e| StoreError::CorruptGraph {
                    detail: e.to_string(),
                })
        })
        .transpose()
    }

    pub(crate) async fn do_fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        let mut conn = self.conn().await?;
        let bytes = self.graph_bytes(&mut conn, owner, graph_ref).await?;
        conn.reuse();
        graph::decode_stored(graph_ref, &bytes.ok_or(StoreError::NotFound)?)
    }

    async fn graph_page(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        before: Option<&GraphCursor>,
        rows: i64,
    ) -> Result<Vec<GraphVersion>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = self
            .q(&self.sql().list_graph_versions)
            .bind(owner.scope_key())
            .bind(graph_id.as_str())
            .bind(before.map(|c| c.published_at.as_micros()))
            .bind(before.map(|c| c.graph_hash.as_str()))
            .bind(rows)
            .fetch_all(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        rows.iter()
            .map(|row| {
                let corrupt = |detail: String| StoreError::CorruptGraph { detail };
                let hash: String = row
                    .try_get("graph_hash")
                    .map_err(|e| corrupt(e.to_string()))?;
                let published_at: i64 = row
                    .try_get("published_at")
                    .map_err(|e| corrupt(e.to_string()))?;
                Ok(GraphVersion {
                    graph_ref: GraphRef {
                        graph_id: graph_id.clone(),
                        graph_hash: GraphHash::new(hash).map_err(|e| corrupt(e.to_string()))?,
                    },
                    published_at: Timestamp::from_micros(published_at),
                })
            })
            .collect()
    }

    pub(crate) async fn do_fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        let newest = self.graph_page(owner, graph_id, None, 1).await?;
        newest
            .into_iter()
            .next()
            .map(|v| v.graph_ref)
            .ok_or(StoreError::NotFound)
    }

    pub(crate) async fn do_list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        queries::validate_graph_query(query)?;
        let versions = self
            .graph_page(
                owner,
                graph_id,
                query.before.as_ref(),
                i64::from(query.limit) + 1,
            )
            .await?;
        Ok(queries::graph_version_page(versions, query))
    }
}
