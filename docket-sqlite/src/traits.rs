//! The store traits for [`SqliteStore`]: validate on the caller's task (before any lookup),
//! then hand one closure to the writer or a reader thread.
//!
//! Cancel safety: reads are cancel safe. A write future dropped after its job was queued does
//! not stop the job: it may still commit, which the caller resolves by re-reading.

use async_trait::async_trait;

use docket_core::graph::GraphDocument;
use docket_core::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphId, GraphRef, GraphVersionPage,
    GraphVersionQuery, OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, TenantId,
    Timestamp,
};
use docket_core::ops::OpsLifecycleRegistry;
use docket_core::store::rules::effects::validate_abandon_policy;
use docket_core::store::rules::graph::encode_for_save;
use docket_core::store::rules::queries::{
    validate_event_query, validate_graph_query, validate_prune_policy, validate_run_query,
};
use docket_core::store::rules::transition::{Commit, Init, Planned};
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, BatchedCommit, BatchedInit, ClaimBatch, ClaimRequest,
    ClaimedCommit, GraphStore, InitProposal, PrunePolicy, PruneReport, RunStore, StoreError,
    TenantShare, UnclaimedCommit, Wakeups,
};

use crate::sql::{immediate, immediate_unsynced, snapshot};
use crate::store::SqliteStore;
use crate::{claims, fairness, graphs, prune, reads, transitions};

impl SqliteStore {
    /// Sends a hint when a transition left a wake that is already due.
    fn finish(&self, planned: Planned) -> Run {
        if planned.wake_due {
            self.hint();
        }
        planned.run
    }

    async fn commit(&self, scope: &Scope, commit: Commit) -> Result<Run, StoreError> {
        let scope = scope.clone();
        let planned = self
            .inner
            .workers
            .write(move |conn| immediate(conn, |tx| transitions::commit(tx, &scope, commit)))
            .await?;
        Ok(self.finish(planned))
    }
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let init = Init::new(owner, proposal, events)?;
        let owner = owner.clone();
        let planned = self
            .inner
            .workers
            .write(move |conn| immediate(conn, |tx| transitions::initialize(tx, &owner, init)))
            .await?;
        Ok(self.finish(planned))
    }

    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        if members.is_empty() {
            return Vec::new();
        }
        let count = members.len();
        // The stateless checks run here, on the caller's task, as for a single start.
        let members: Vec<transitions::InitMember> = members
            .into_iter()
            .map(|m| Init::new(&m.owner, m.proposal, m.events).map(|init| (m.owner, init)))
            .collect();
        let outcomes = self
            .inner
            .workers
            .write(move |conn| Ok(transitions::initialize_batch(conn, members)))
            .await;
        match outcomes {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|outcome| outcome.map(|planned| self.finish(planned)))
                .collect(),
            // The writer never ran the job (closed or gone): nothing was written.
            Err(error) => (0..count).map(|_| Err(error.clone())).collect(),
        }
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.commit(scope, Commit::claimed(proposal, events)?).await
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        if commits.is_empty() {
            return Vec::new();
        }
        let count = commits.len();
        // The stateless checks run here, on the caller's task, as for a single commit.
        let members: Vec<transitions::BatchMember> = commits
            .into_iter()
            .map(|c| Commit::claimed(c.proposal, c.events).map(|commit| (c.scope, commit)))
            .collect();
        let outcomes = self
            .inner
            .workers
            .write(move |conn| Ok(transitions::commit_batch(conn, members)))
            .await;
        match outcomes {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|outcome| outcome.map(|planned| self.finish(planned)))
                .collect(),
            // The writer never ran the job (closed or gone): nothing was written.
            Err(error) => (0..count).map(|_| Err(error.clone())).collect(),
        }
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.commit(scope, Commit::unclaimed(expected_seq, proposal, events)?)
            .await
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        Ok(self.inspect_run(scope, run_id).await?.run)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        let (scope, run_id) = (scope.clone(), run_id.clone());
        self.inner
            .workers
            .read(move |conn| snapshot(conn, |tx| reads::inspect(tx, &scope, &run_id)))
            .await
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        validate_run_query(query)?;
        let (scope, query) = (scope.clone(), query.clone());
        self.inner
            .workers
            .read(move |conn| reads::list_runs(conn, &scope, &query))
            .await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let policy = *policy;
        let synchronous = self.inner.options.synchronous;
        let (mut batch, documents) = self
            .inner
            .workers
            .write(move |conn| {
                immediate_unsynced(conn, synchronous, |tx| claims::claim_due(tx, &policy))
            })
            .await?;
        // Decoded here, not on the writer: the one writer serializes every write.
        claims::attach_runs(&mut batch, documents);
        Ok(batch)
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let (run_id, token) = (run_id.clone(), token.clone());
        self.inner
            .workers
            .write(move |conn| immediate(conn, |tx| claims::release(tx, &run_id, &token, now)))
            .await
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        validate_abandon_policy(policy)?;
        let (run_id, token, policy) = (run_id.clone(), token.clone(), *policy);
        self.inner
            .workers
            .write(move |conn| immediate(conn, |tx| claims::abandon(tx, &run_id, &token, &policy)))
            .await
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        let (scope, run_id) = (scope.clone(), run_id.clone());
        let (run, recovered) = self
            .inner
            .workers
            .write(move |conn| {
                immediate(conn, |tx| claims::retry_poisoned(tx, &scope, &run_id, now))
            })
            .await?;
        if recovered {
            self.hint();
        }
        Ok(run)
    }

    async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        let tenant = tenant.clone();
        self.inner
            .workers
            .write(move |conn| immediate(conn, |tx| fairness::set_share(tx, &tenant, share)))
            .await
    }

    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        self.inner.workers.read(|conn| fairness::shares(conn)).await
    }

    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        let (scope, run_id) = (scope.clone(), run_id.clone());
        self.inner
            .workers
            .read(move |conn| reads::fetch_event(conn, &scope, &run_id, seq))
            .await
    }

    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        let (scope, run_id) = (scope.clone(), run_id.clone());
        self.inner
            .workers
            .read(move |conn| reads::fetch_latest_event(conn, &scope, &run_id))
            .await
    }

    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        validate_event_query(query)?;
        let (scope, run_id, query) = (scope.clone(), run_id.clone(), *query);
        self.inner
            .workers
            .read(move |conn| reads::list_events(conn, &scope, &run_id, &query))
            .await
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        validate_prune_policy(policy)?;
        let policy = *policy;
        self.inner
            .workers
            .write(move |conn| immediate(conn, |tx| prune::prune(tx, &policy)))
            .await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        Some(self.inner.wake.subscribe())
    }

    /// Batches of up to [`PREFERRED_COMMIT_BATCH`](crate::PREFERRED_COMMIT_BATCH): every
    /// commit is a write transaction with its own fsync on the one writer connection, and a
    /// batch is one transaction, so its members share that fsync.
    fn preferred_commit_batch(&self) -> usize {
        crate::PREFERRED_COMMIT_BATCH
    }

    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        Some(self)
    }
}

#[async_trait]
impl GraphStore for SqliteStore {
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let bytes = encode_for_save(graph_ref, graph)?;
        let (owner, graph_ref) = (owner.clone(), graph_ref.clone());
        self.inner
            .workers
            .write(move |conn| {
                immediate(conn, |tx| graphs::save(tx, &owner, &graph_ref, &bytes, now))
            })
            .await
    }

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        let (owner, graph_ref) = (owner.clone(), graph_ref.clone());
        self.inner
            .workers
            .read(move |conn| graphs::fetch(conn, &owner, &graph_ref))
            .await
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        let (owner, graph_id) = (owner.clone(), graph_id.clone());
        self.inner
            .workers
            .read(move |conn| graphs::latest(conn, &owner, &graph_id))
            .await
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        validate_graph_query(query)?;
        let (owner, graph_id, query) = (owner.clone(), graph_id.clone(), query.clone());
        self.inner
            .workers
            .read(move |conn| graphs::list(conn, &owner, &graph_id, &query))
            .await
    }
}
