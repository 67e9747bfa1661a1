//! Step 2 of a drain: the run's runtime graph, from the cache or the store.

use std::sync::Arc;

use docket_core::graph::RuntimeGraph;
use docket_core::model::GraphRef;
use docket_core::runtime::{check_execution_policy, RuntimeError};
use docket_core::store::StoreError;

use super::Drain;
use crate::engine::cache::CacheLookup;
use crate::engine::outcome::{IncompatibleReason, VehicleError};

/// What loading the graph decided.
pub(super) enum GraphLoad {
    /// Run it.
    Ready(Arc<RuntimeGraph>),
    /// The stored graph cannot run anywhere: poisoning hand-back.
    Incompatible(IncompatibleReason),
    /// This host cannot run it: non-poisoning hand-back.
    HostIncompatible(RuntimeError),
}

impl Drain<'_> {
    fn graph_ref(&self) -> GraphRef {
        GraphRef {
            graph_id: self.lease.graph_id.clone(),
            graph_hash: self.lease.graph_hash.clone(),
        }
    }

    pub(super) async fn runtime_graph(&self) -> Result<GraphLoad, VehicleError> {
        let graph_ref = self.graph_ref();
        if self.vehicle.use_cache {
            let lookup =
                self.e
                    .cache
                    .fetch(&self.lease.owner, &graph_ref, self.e.monotonic.now_ms());
            let result = match &lookup {
                CacheLookup::Compiled(_) => "hit",
                CacheLookup::Incompatible(_) => "incompatible",
                CacheLookup::Miss => "miss",
            };
            tracing::debug!(result, "docket.graph_cache.fetch");
            match lookup {
                CacheLookup::Compiled(rtg) => return Ok(self.host_check(rtg)),
                CacheLookup::Incompatible(reason) => return Ok(GraphLoad::Incompatible(reason)),
                CacheLookup::Miss => {}
            }
        }
        let doc = match self
            .e
            .backend
            .fetch_graph(&self.lease.owner, &graph_ref)
            .await
        {
            Ok(doc) => doc,
            Err(StoreError::CorruptGraph { detail }) => {
                return Ok(self.incompatible(IncompatibleReason::CorruptGraph { detail }))
            }
            Err(StoreError::NotFound) => {
                return Err(self.invariant(format!(
                    "graph {}@{} of the claimed run is missing",
                    graph_ref.graph_id, graph_ref.graph_hash
                )))
            }
            Err(e) => return Err(self.store_error(e)),
        };
        let compiled = self
            .e
            .compiler
            .compile(&doc, &self.e.nodes, self.e.compile_options());
        let rtg = match compiled {
            Ok(rtg) => rtg,
            Err(error) => {
                tracing::info!(
                    result = "error",
                    diagnostics = error.diagnostics.len(),
                    "docket.graph.compile"
                );
                return Ok(
                    self.incompatible(IncompatibleReason::GraphCompilationFailed {
                        diagnostics: error.diagnostics,
                    }),
                );
            }
        };
        tracing::debug!(result = "ok", "docket.graph.compile");
        if rtg.graph_id != self.lease.graph_id || rtg.graph_hash != self.lease.graph_hash {
            return Ok(
                self.incompatible(IncompatibleReason::EffectiveIdentityMismatch {
                    graph_id: rtg.graph_id,
                    graph_hash: rtg.graph_hash,
                }),
            );
        }
        let rtg = Arc::new(rtg);
        let load = self.host_check(Arc::clone(&rtg));
        if matches!(load, GraphLoad::Ready(_)) && self.vehicle.use_cache {
            self.e
                .cache
                .put_compiled(&self.lease.owner, &graph_ref, rtg);
        }
        Ok(load)
    }

    /// The host policy check runs on every claim (it depends on this host, not the graph).
    fn host_check(&self, rtg: Arc<RuntimeGraph>) -> GraphLoad {
        match check_execution_policy(&rtg, self.e.config.max_attempt_elapsed_ms) {
            Ok(()) => GraphLoad::Ready(rtg),
            Err(error) => GraphLoad::HostIncompatible(error),
        }
    }

    fn incompatible(&self, reason: IncompatibleReason) -> GraphLoad {
        if self.vehicle.use_cache {
            self.e.cache.put_incompatible(
                &self.lease.owner,
                &self.graph_ref(),
                reason.clone(),
                self.e.monotonic.now_ms(),
            );
        }
        GraphLoad::Incompatible(reason)
    }
}
