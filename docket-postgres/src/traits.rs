//! The store traits, delegating to the operation modules.

use async_trait::async_trait;
use docket_core::graph::GraphDocument;
use docket_core::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphId, GraphRef, GraphVersionPage,
    GraphVersionQuery, OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, TenantId,
    Timestamp,
};
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, BatchedCommit, BatchedInit, ClaimBatch, ClaimRequest,
    ClaimedCommit, GraphStore, InitProposal, PrunePolicy, PruneReport, RunStore, StoreError,
    TenantShare, UnclaimedCommit, Wakeups,
};

use docket_core::ops::OpsLifecycleRegistry;

use crate::store::PostgresStore;

/// Cancel safety: reads are cancel safe. A write future dropped after its statement (or its
/// COMMIT) was sent may or may not have been applied; single-statement writes either applied
/// completely or not at all, and a dropped transaction is rolled back by the server.
#[async_trait]
impl RunStore for PostgresStore {
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.do_initialize(owner, proposal, events).await
    }

    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        self.do_initialize_batch(members).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.do_commit_claimed(scope, proposal, events).await
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        self.do_commit_claimed_batch(commits).await
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.do_commit_unclaimed(scope, expected_seq, proposal, events)
            .await
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        self.read_run(scope, run_id)
            .await?
            .map(|stored| stored.run)
            .ok_or(StoreError::NotFound)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        self.do_inspect(scope, run_id).await
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        self.do_list_runs(scope, query).await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        self.do_claim_due(policy).await
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.do_release(run_id, token, now).await
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        self.do_abandon(run_id, token, policy).await
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        self.do_retry_poisoned(scope, run_id, now).await
    }

    async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        self.do_set_tenant_share(tenant, share).await
    }

    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        self.do_tenant_shares().await
    }

    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        self.do_fetch_event(scope, run_id, seq).await
    }

    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        self.do_fetch_latest_event(scope, run_id).await
    }

    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        self.do_list_events(scope, run_id, query).await
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        self.do_prune(policy).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        self.inner.wake.subscribe()
    }

    /// Batches of up to [`PREFERRED_COMMIT_BATCH`](crate::PREFERRED_COMMIT_BATCH): a batch
    /// of distinct runs is one statement, so its members share one round trip and one
    /// commit.
    fn preferred_commit_batch(&self) -> usize {
        crate::PREFERRED_COMMIT_BATCH
    }

    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        Some(self)
    }
}

#[async_trait]
impl GraphStore for PostgresStore {
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.do_save_graph(owner, graph_ref, graph, now).await
    }

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        self.do_fetch_graph(owner, graph_ref).await
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        self.do_fetch_latest_graph_ref(owner, graph_id).await
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        self.do_list_graph_versions(owner, graph_id, query).await
    }
}
