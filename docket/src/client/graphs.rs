//! Publishing and reading graph versions.

use docket_core::graph::{
    compile_for_publication, parse_document, CompileOptions, Diagnostic, GraphDocument,
};
use docket_core::model::{GraphId, GraphRef, GraphVersionPage, GraphVersionQuery};

use super::Docket;
use crate::error::DocketError;

/// A published graph version and what the compiler had to say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Publication {
    /// The version's address.
    pub graph_ref: GraphRef,
    /// Non-blocking diagnostics (warnings and infos, e.g. `unbounded_cycle`), sorted. Show
    /// them to whoever published the graph.
    pub warnings: Vec<Diagnostic>,
}

impl Docket {
    /// Publishes `doc`: compiles it for publication (materializing node config defaults),
    /// then stores the effective document under its content address. Idempotent. Returns the
    /// address and the compiler's warnings.
    ///
    /// The graph is judged on its own: the host's superstep ceiling
    /// ([`crate::WorkerConfig::max_supersteps`]) bounds runs on this host, not the graph, so
    /// a cycle the graph leaves unbounded is still reported (`unbounded_cycle`). The stored
    /// document and its hash never depend on compile options.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::graph::{GraphDocument, NodeDecl, FINISH, START};
    /// use docket::{Docket, DocketError};
    /// use serde_json::json;
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// let doc = GraphDocument::builder("hello")
    ///     .node("hi", NodeDecl::new("std.set").with_config("values", json!({})))
    ///     .edge("a", START, "hi")
    ///     .edge("b", "hi", FINISH)
    ///     .build()?;
    /// let first = docket.publish_graph(&doc).await?;
    /// assert!(first.warnings.is_empty());
    /// // Idempotent: the same content has the same address.
    /// assert_eq!(docket.publish_graph(&doc).await?.graph_ref, first.graph_ref);
    ///
    /// // A node implementation this registry does not know: refused, with every diagnostic.
    /// let unknown = GraphDocument::builder("broken")
    ///     .node("x", "app.missing")
    ///     .edge("a", START, "x")
    ///     .edge("b", "x", FINISH)
    ///     .build()?;
    /// match docket.publish_graph(&unknown).await {
    ///     Err(DocketError::InvalidGraph { diagnostics }) => {
    ///         assert!(diagnostics.iter().any(|d| d.to_string().contains("app.missing")), "{diagnostics:?}")
    ///     }
    ///     other => panic!("expected an invalid graph, got {other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::InvalidGraph`] with every diagnostic (nothing stored); store errors
    /// (e.g. `GraphContentConflict`).
    pub async fn publish_graph(&self, doc: &GraphDocument) -> Result<Publication, DocketError> {
        let compiled = compile_for_publication(doc, self.engine.nodes(), CompileOptions::default())
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
        Ok(Publication {
            graph_ref,
            warnings: compiled.warnings,
        })
    }

    /// Parses a JSON graph document and publishes it ([`Docket::publish_graph`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::Docket;
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// let published = docket
    ///     .publish_graph_json(r#"{"schema_version": 1, "id": "hello",
    ///         "nodes": {"hi": {"implementation": "std.set"}},
    ///         "edges": {"a": {"from": "$start", "to": "hi"}, "b": {"from": "hi", "to": "$finish"}}}"#)
    ///     .await?;
    /// assert_eq!(published.graph_ref.graph_id.as_str(), "hello");
    /// // The stored document has the node's config defaults filled in.
    /// let stored = docket.fetch_graph(&published.graph_ref).await?;
    /// assert!(stored.nodes["hi"].config.contains_key("values"));
    ///
    /// // Broken JSON is refused with where it broke; so is a key given twice.
    /// let err = docket.publish_graph_json(r#"{"schema_version": 1,"#).await.unwrap_err();
    /// assert_eq!(err.kind(), "invalid_graph", "{err}");
    /// let err = docket.publish_graph_json(r#"{"id": "a", "id": "b"}"#).await.unwrap_err();
    /// assert!(err.to_string().contains("id"), "{err}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::InvalidGraph`] for unreadable JSON (with paths) or a graph that does not
    /// compile; store errors.
    pub async fn publish_graph_json(&self, json: &str) -> Result<Publication, DocketError> {
        let doc = parse_document(json)
            .map_err(|diagnostics| DocketError::InvalidGraph { diagnostics })?;
        self.publish_graph(&doc).await
    }

    /// [`Docket::publish_graph`], returning only the address.
    ///
    /// # Errors
    /// As [`Docket::publish_graph`].
    pub async fn save_graph(&self, doc: &GraphDocument) -> Result<GraphRef, DocketError> {
        Ok(self.publish_graph(doc).await?.graph_ref)
    }

    /// [`Docket::publish_graph_json`], returning only the address.
    ///
    /// # Errors
    /// As [`Docket::publish_graph_json`].
    pub async fn save_graph_json(&self, json: &str) -> Result<GraphRef, DocketError> {
        Ok(self.publish_graph_json(json).await?.graph_ref)
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
