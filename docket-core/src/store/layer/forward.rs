//! [`Layered`] as a run and graph store: every call goes to the layer's method of the same
//! name.

use async_trait::async_trait;

use crate::graph::GraphDocument;
use crate::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphId, GraphRef, GraphVersionPage,
    GraphVersionQuery, OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, TenantId,
    Timestamp,
};
use crate::ops::OpsLifecycleRegistry;
use crate::store::claim::{AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, TenantShare};
use crate::store::error::StoreError;
use crate::store::proposal::{
    BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, UnclaimedCommit,
};
use crate::store::prune::{PrunePolicy, PruneReport};
use crate::store::traits::{GraphStore, RunStore, Wakeups};

use super::{Layered, StoreLayer};

#[async_trait]
impl<L: StoreLayer> RunStore for Layered<L> {
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        StoreLayer::initialize(&self.0, owner, proposal, events).await
    }

    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        StoreLayer::initialize_batch(&self.0, members).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        StoreLayer::commit_claimed(&self.0, scope, proposal, events).await
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        StoreLayer::commit_claimed_batch(&self.0, commits).await
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        StoreLayer::commit_unclaimed(&self.0, scope, expected_seq, proposal, events).await
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        StoreLayer::fetch_run(&self.0, scope, run_id).await
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        StoreLayer::inspect_run(&self.0, scope, run_id).await
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        StoreLayer::list_runs(&self.0, scope, query).await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        StoreLayer::claim_due(&self.0, policy).await
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        StoreLayer::release_claim(&self.0, run_id, token, now).await
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        StoreLayer::abandon_claim(&self.0, run_id, token, policy).await
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        StoreLayer::retry_poisoned_run(&self.0, scope, run_id, now).await
    }

    async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        StoreLayer::set_tenant_share(&self.0, tenant, share).await
    }

    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        StoreLayer::tenant_shares(&self.0).await
    }

    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        StoreLayer::fetch_event(&self.0, scope, run_id, seq).await
    }

    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        StoreLayer::fetch_latest_event(&self.0, scope, run_id).await
    }

    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        StoreLayer::list_events(&self.0, scope, run_id, query).await
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        StoreLayer::prune(&self.0, policy).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        StoreLayer::wakeups(&self.0)
    }

    fn preferred_commit_batch(&self) -> usize {
        StoreLayer::preferred_commit_batch(&self.0)
    }

    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        StoreLayer::offers_ops_registry(&self.0).then_some(self as &dyn OpsLifecycleRegistry)
    }
}

#[async_trait]
impl<L: StoreLayer> GraphStore for Layered<L> {
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        StoreLayer::save_graph(&self.0, owner, graph_ref, graph, now).await
    }

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        StoreLayer::fetch_graph(&self.0, owner, graph_ref).await
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        StoreLayer::fetch_latest_graph_ref(&self.0, owner, graph_id).await
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        StoreLayer::list_graph_versions(&self.0, owner, graph_id, query).await
    }
}
