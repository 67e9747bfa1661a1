//! The harness of the reference memory store (and the model the property test compares every
//! backend with). Reopening makes a new store value over the same shared state, which is what
//! a restart would find in a durable store.

use std::sync::Arc;

use async_trait::async_trait;
use docket_core::memory::MemoryStore;
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::store::{Backend, StoreError};

use crate::harness::{Capabilities, Harness};

/// Opens a new [`MemoryStore`] per case; the guard keeps a handle for the hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryHarness;

#[async_trait]
impl Harness for MemoryHarness {
    type Guard = Arc<MemoryStore>;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let store = Arc::new(MemoryStore::new());
        Ok((store.clone(), store))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: true,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.raw_snapshot())
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        guard.corrupt_run(run_id)
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        guard.corrupt_event(run_id, seq)
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        guard.corrupt_graph(owner, graph_ref)
    }

    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.raw_ops_snapshot())
    }

    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        Ok(Arc::new(guard.reopen()))
    }
}
