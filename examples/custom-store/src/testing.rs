//! The conformance harness of [`MapStore`]: a new store per case, its tables rendered as the
//! raw snapshot, and corruption by overwriting stored text.

use std::sync::Arc;

use async_trait::async_trait;
use docket_conformance::{Capabilities, Harness};
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::store::{Backend, StoreError};

use crate::store::MapStore;
use crate::wakeups;

/// Text no decoder accepts.
const GARBAGE: &str = "{\"truncated";

/// Opens a fresh [`MapStore`] per case; the guard is a handle on it for the hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapHarness;

#[async_trait]
impl Harness for MapHarness {
    type Guard = Arc<MapStore>;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let store = Arc::new(MapStore::new());
        Ok((store.clone(), store))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: wakeups::OFFERED,
            ops_registry: true,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.lock()?.render())
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        let mut tables = guard.lock()?;
        let row = tables.runs.get_mut(run_id).ok_or(StoreError::NotFound)?;
        row.document = GARBAGE.to_owned();
        Ok(())
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        let mut tables = guard.lock()?;
        let row = tables
            .events
            .get_mut(run_id)
            .and_then(|rows| rows.get_mut(&seq))
            .ok_or(StoreError::NotFound)?;
        row.json = GARBAGE.to_owned();
        Ok(())
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        let mut tables = guard.lock()?;
        let key = (
            owner.clone(),
            graph_ref.graph_id.clone(),
            graph_ref.graph_hash.clone(),
        );
        let row = tables.graphs.get_mut(&key).ok_or(StoreError::NotFound)?;
        row.bytes = GARBAGE.as_bytes().to_vec();
        Ok(())
    }

    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        Ok(guard.lock()?.render_ops())
    }

    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        Ok(Arc::new(guard.reopen()))
    }
}
