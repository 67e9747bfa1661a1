//! Publishing and reading graph versions.

use docket_core::graph::{compile_for_publication, parse_document, GraphDocument};
use docket_core::model::{GraphId, GraphRef, GraphVersionPage, GraphVersionQuery};

use super::Docket;
use crate::error::DocketError;

impl Docket {
    /// Publishes `doc`: compiles it for publication (materializing node config defaults),
    /// then stores the effective document under its content address. Idempotent.
    ///
    /// # Errors
    /// [`DocketError::InvalidGraph`] with every diagnostic (nothing stored); store errors
    /// (e.g. `GraphContentConflict`).
    pub async fn save_graph(&self, doc: &GraphDocument) -> Result<GraphRef, DocketError> {
        let compiled =
            compile_for_publication(doc, self.engine.nodes(), self.engine.compile_options())
                .map_err(|e| DocketError::InvalidGraph {
                    diagnostics: e.diagnostics,
                })?;
        let graph_ref = GraphRef {
            graph_id: compiled.runtime.graph_id.clone(),
            graph_hash: compiled.runtime.graph_hash.clone(),
        };
        self.backend()
            .save_graph(
                &self.owner,
                &graph_ref,
                &compiled.effective,
                self.engine.clock().now(),
            )
            .await?;
        Ok(graph_ref)
    }

    /// Parses a JSON graph document and publishes it.
    ///
    /// # Errors
    /// [`DocketError::InvalidGraph`] for unreadable JSON (with paths) or a graph that does not
    /// compile; store errors.
    pub async fn save_graph_json(&self, json: &str) -> Result<GraphRef, DocketError> {
        let doc = parse_document(json)
            .map_err(|diagnostics| DocketError::InvalidGraph { diagnostics })?;
        self.save_graph(&doc).await
    }

    /// The stored effective document of a version.
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; store errors (`CorruptGraph`, ...).
    pub async fn fetch_graph(&self, graph_ref: &GraphRef) -> Result<GraphDocument, DocketError> {
        Ok(self.backend().fetch_graph(&self.owner, graph_ref).await?)
    }

    /// The newest version of `graph_id`.
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; store errors.
    pub async fn fetch_latest_graph_ref(
        &self,
        graph_id: &GraphId,
    ) -> Result<GraphRef, DocketError> {
        Ok(self
            .backend()
            .fetch_latest_graph_ref(&self.owner, graph_id)
            .await?)
    }

    /// Versions of `graph_id`, newest first.
    ///
    /// # Errors
    /// Store errors (`InvalidArgument` for a bad limit).
    pub async fn list_graph_versions(
        &self,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, DocketError> {
        Ok(self
            .backend()
            .list_graph_versions(&self.owner, graph_id, query)
            .await?)
    }
}
