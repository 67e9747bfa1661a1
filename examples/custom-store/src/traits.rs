//! The store traits for [`MapStore`]: validate with the shared rules first (no lock needed),
//! then take the lock once and call one function of a role file over the tables.
//!
//! Every operation runs inside that one critical section, never held across an `.await`,
//! which is what makes each of them atomic: all checks happen before the first write.

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
use docket_core::store::rules::transition::{Commit, Init};
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, ClaimedCommit, GraphStore,
    InitProposal, PrunePolicy, PruneReport, RunStore, StoreError, TenantShare, UnclaimedCommit,
    Wakeups,
};

use crate::store::MapStore;
use crate::{claims, graphs, prune, reads, transitions, wakeups};

#[async_trait]
impl RunStore for MapStore {
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let init = Init::new(owner, proposal, events)?;
        transitions::initialize(&mut *self.lock()?, owner, init)
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::claimed(proposal, events)?;
        transitions::commit(&mut *self.lock()?, scope, commit)
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::unclaimed(expected_seq, proposal, events)?;
        transitions::commit(&mut *self.lock()?, scope, commit)
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        reads::fetch(&*self.lock()?, scope, run_id)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        reads::inspect(&*self.lock()?, scope, run_id)
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        validate_run_query(query)?;
        Ok(reads::list_runs(&*self.lock()?, scope, query))
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
        claims::release(&mut *self.lock()?, run_id, token, now);
        Ok(())
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        validate_abandon_policy(policy)?;
        Ok(claims::abandon(&mut *self.lock()?, run_id, token, policy))
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        claims::retry_poisoned(&mut *self.lock()?, scope, run_id, now)
    }

    async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        claims::set_share(&mut *self.lock()?, tenant, share);
        Ok(())
    }

    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        Ok(claims::shares(&*self.lock()?))
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
        validate_event_query(query)?;
        reads::list_events(&*self.lock()?, scope, run_id, query)
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        validate_prune_policy(policy)?;
        let Some(_slot) = self.begin_prune() else {
            return Ok(PruneReport {
                skipped_locked: true,
                ..PruneReport::default()
            });
        };
        Ok(prune::prune(&mut *self.lock()?, policy))
    }

    fn wakeups(&self) -> Option<Wakeups> {
        wakeups::subscribe()
    }

    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        Some(self)
    }
}

#[async_trait]
impl GraphStore for MapStore {
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let bytes = encode_for_save(graph_ref, graph)?;
        graphs::save(&mut *self.lock()?, owner, graph_ref, bytes, now)
    }

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        graphs::fetch(&*self.lock()?, owner, graph_ref)
    }

    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        graphs::latest_ref(&*self.lock()?, owner, graph_id)
    }

    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        validate_graph_query(query)?;
        Ok(graphs::list_versions(
            &*self.lock()?,
            owner,
            graph_id,
            query,
        ))
    }
}
