//! The store traits over the locked state. Each method takes the lock once, runs one of the
//! synchronous operations, releases the lock, and only then sends a wake hint.

use async_trait::async_trait;

use crate::graph::GraphDocument;
use crate::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphId, GraphRef, GraphVersionPage,
    GraphVersionQuery, OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, TenantId,
    Timestamp,
};
use crate::ops::OpsLifecycleRegistry;
use crate::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, ClaimedCommit, GraphStore,
    InitProposal, PrunePolicy, PruneReport, RunStore, StoreError, TenantShare, UnclaimedCommit,
    Wakeups,
};

use crate::store::rules::transition::{Commit, Init, Planned};

use super::{claims, graphs, prune, reads, transitions, MemoryStore};

impl MemoryStore {
    /// Sends a hint when a transition left a wake that is already due.
    fn finish(&self, planned: Planned) -> Run {
        if planned.wake_due {
            self.hint();
        }
        planned.run
    }
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let init = Init::new(owner, proposal, events)?;
        let planned = transitions::initialize(&mut *self.lock()?, owner, init)?;
        Ok(self.finish(planned))
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::claimed(proposal, events)?;
        let planned = transitions::commit(
            &mut *self.lock()?,
            scope,
            commit,
            self.faults.skip_claimed_seq_fence,
        )?;
        Ok(self.finish(planned))
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::unclaimed(expected_seq, proposal, events)?;
        let planned = transitions::commit(&mut *self.lock()?, scope, commit, false)?;
        Ok(self.finish(planned))
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        reads::fetch_run(&*self.lock()?, scope, run_id)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        reads::inspect_run(&*self.lock()?, scope, run_id)
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        reads::list_runs(&*self.lock()?, scope, query)
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        Ok(claims::claim_due(&mut *self.lock()?, policy))
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        // Silent by contract: a released run is found by the next poll.
        claims::release_claim(&mut *self.lock()?, run_id, token, now);
        Ok(())
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        claims::abandon_claim(
            &mut *self.lock()?,
            run_id,
            token,
            policy,
            self.faults.abandon_keeps_attempts,
        )
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        let (run, recovered) = claims::retry_poisoned_run(&mut *self.lock()?, scope, run_id, now)?;
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
        claims::set_tenant_share(&mut *self.lock()?, tenant, share);
        Ok(())
    }

    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        Ok(claims::tenant_shares(&*self.lock()?))
    }

    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        reads::fetch_event(&*self.lock()?, scope, run_id, seq)
    }

    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        reads::fetch_latest_event(&*self.lock()?, scope, run_id)
    }

    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        reads::list_events(&*self.lock()?, scope, run_id, query)
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        let Some(_pass) = self.begin_prune() else {
            return Ok(PruneReport {
                skipped_locked: true,
                ..PruneReport::default()
            });
        };
        prune::prune(&mut *self.lock()?, policy)
    }

    fn wakeups(&self) -> Option<Wakeups> {
        Some(super::hint_stream(&self.wake))
    }

    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        Some(self)
    }
}

#[async_trait]
impl GraphStore for MemoryStore {
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        graphs::save_graph(&mut *self.lock()?, owner, graph_ref, graph, now)
    }

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        graphs::fetch_graph(&*self.lock()?, owner, graph_ref)
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        graphs::fetch_latest_graph_ref(&*self.lock()?, owner, graph_id)
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        graphs::list_graph_versions(&*self.lock()?, owner, graph_id, query)
    }
}
