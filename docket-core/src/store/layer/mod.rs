//! Store layers: a store that wraps another and changes only the operations it names.
//!
//! Fault injection in tests, the benchmark's probes and the conformance suite's mutants all
//! wrap a real store and intercept one or two operations. Writing out the other twenty
//! forwarding methods by hand each time buries the one that matters, so a wrapper implements
//! [`StoreLayer`] — every method defaults to the inner store — and [`Layered`] turns it into a
//! [`Backend`].
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use async_trait::async_trait;
//! use docket_core::memory::MemoryStore;
//! use docket_core::store::{
//!     Backend, ClaimBatch, ClaimRequest, Layered, RunStore, StoreError, StoreLayer,
//! };
//!
//! /// Counts the claims a store hands out.
//! #[derive(Debug)]
//! struct CountClaims {
//!     inner: MemoryStore,
//!     leased: AtomicU64,
//! }
//!
//! #[async_trait]
//! impl StoreLayer for CountClaims {
//!     fn inner(&self) -> &dyn Backend {
//!         &self.inner
//!     }
//!
//!     async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
//!         let batch = self.inner.claim_due(policy).await?;
//!         self.leased.fetch_add(batch.leases.len() as u64, Ordering::Relaxed);
//!         Ok(batch)
//!     }
//! }
//!
//! let store: Arc<dyn Backend> = Arc::new(Layered(CountClaims {
//!     inner: MemoryStore::new(),
//!     leased: AtomicU64::new(0),
//! }));
//! # let _ = store;
//! ```
//!
//! The operation registry is layered too: [`Layered`] implements
//! [`OpsLifecycleRegistry`] whenever the inner store offers one (see
//! [`StoreLayer::offers_ops_registry`]), and a layer may override any registry call.
//!
//! # Cancel safety
//!
//! A layer adds no state of its own to the store's contract: each default is exactly as
//! cancel safe as the inner store's method.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::graph::GraphDocument;
use crate::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphId, GraphRef, GraphVersionPage,
    GraphVersionQuery, OwnerScope, Run, RunId, RunInfo, RunPage, RunQuery, Scope, TenantId,
    Timestamp,
};

use super::claim::{AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimRequest, TenantShare};
use super::error::StoreError;
use super::proposal::{BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, UnclaimedCommit};
use super::prune::{PrunePolicy, PruneReport};
use super::traits::{Backend, Wakeups};
#[cfg(doc)]
use super::traits::{GraphStore, RunStore};
use crate::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationPage, OperationQuery,
    OperationSpec, OperationTransition, OpsError, OpsLifecycleRegistry, SessionId,
};

mod forward;
mod ops;

/// Commits `commits` one by one through `layer`'s own [`StoreLayer::commit_claimed`]: the
/// [`StoreLayer::commit_claimed_batch`] of a layer that intercepts claimed commits, so that
/// batched commits meet its interception too.
pub async fn commit_each<L: StoreLayer + ?Sized>(
    layer: &L,
    commits: Vec<BatchedCommit>,
) -> Vec<Result<Run, StoreError>> {
    let mut outcomes = Vec::with_capacity(commits.len());
    for BatchedCommit {
        scope,
        proposal,
        events,
    } in commits
    {
        outcomes.push(layer.commit_claimed(&scope, proposal, events).await);
    }
    outcomes
}

/// Initializes `members` one by one through `layer`'s own [`StoreLayer::initialize`]: the
/// [`StoreLayer::initialize_batch`] of a layer that intercepts `initialize`, so that batched
/// starts meet its interception too.
pub async fn initialize_each<L: StoreLayer + ?Sized>(
    layer: &L,
    members: Vec<BatchedInit>,
) -> Vec<Result<Run, StoreError>> {
    let mut outcomes = Vec::with_capacity(members.len());
    for BatchedInit {
        owner,
        proposal,
        events,
    } in members
    {
        outcomes.push(layer.initialize(&owner, proposal, events).await);
    }
    outcomes
}

#[cfg(test)]
mod tests;

/// A wrapper around another store; every operation it does not override goes to
/// [`StoreLayer::inner`] unchanged. Wrap it in [`Layered`] to use it as a [`Backend`].
///
/// Each method has the contract (and the `# Errors`) of the [`RunStore`], [`GraphStore`] or
/// [`OpsLifecycleRegistry`] method of the same name; an override is free to break it on purpose, which is what fault
/// injection is for.
#[async_trait]
pub trait StoreLayer: Send + Sync + Debug + 'static {
    /// The store this layer forwards to.
    fn inner(&self) -> &dyn Backend;

    /// See [`RunStore::initialize`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.inner().initialize(owner, proposal, events).await
    }

    /// See [`RunStore::initialize_batch`]. The default hands the whole batch to the inner
    /// store, so batching survives layering; a layer that overrides
    /// [`StoreLayer::initialize`] must override this too (with [`initialize_each`]), or
    /// batched starts pass it by.
    ///
    /// # Errors
    /// As the inner store's.
    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        self.inner().initialize_batch(members).await
    }

    /// See [`RunStore::commit_claimed`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.inner().commit_claimed(scope, proposal, events).await
    }

    /// See [`RunStore::commit_claimed_batch`]. The default hands the whole batch to the inner
    /// store, so batching survives layering; a layer that overrides
    /// [`StoreLayer::commit_claimed`] must override this too, or batched commits pass it by.
    ///
    /// # Errors
    /// As the inner store's.
    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        self.inner().commit_claimed_batch(commits).await
    }

    /// See [`RunStore::commit_unclaimed`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.inner()
            .commit_unclaimed(scope, expected_seq, proposal, events)
            .await
    }

    /// See [`RunStore::fetch_run`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        self.inner().fetch_run(scope, run_id).await
    }

    /// See [`RunStore::inspect_run`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        self.inner().inspect_run(scope, run_id).await
    }

    /// See [`RunStore::list_runs`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        self.inner().list_runs(scope, query).await
    }

    /// See [`RunStore::claim_due`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        self.inner().claim_due(policy).await
    }

    /// See [`RunStore::release_claim`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner().release_claim(run_id, token, now).await
    }

    /// See [`RunStore::abandon_claim`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        self.inner().abandon_claim(run_id, token, policy).await
    }

    /// See [`RunStore::retry_poisoned_run`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        self.inner().retry_poisoned_run(scope, run_id, now).await
    }

    /// See [`RunStore::set_tenant_share`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        self.inner().set_tenant_share(tenant, share).await
    }

    /// See [`RunStore::tenant_shares`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        self.inner().tenant_shares().await
    }

    /// See [`RunStore::fetch_event`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        self.inner().fetch_event(scope, run_id, seq).await
    }

    /// See [`RunStore::fetch_latest_event`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        self.inner().fetch_latest_event(scope, run_id).await
    }

    /// See [`RunStore::list_events`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        self.inner().list_events(scope, run_id, query).await
    }

    /// See [`RunStore::prune`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        self.inner().prune(policy).await
    }

    /// See [`RunStore::wakeups`].
    fn wakeups(&self) -> Option<Wakeups> {
        self.inner().wakeups()
    }

    /// See [`RunStore::preferred_commit_batch`]: the inner store's, so a layer keeps the
    /// batching its store asks for.
    fn preferred_commit_batch(&self) -> usize {
        self.inner().preferred_commit_batch()
    }

    /// See [`GraphStore::save_graph`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn save_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
        graph: &GraphDocument,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner().save_graph(owner, graph_ref, graph, now).await
    }

    /// See [`GraphStore::fetch_graph`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        self.inner().fetch_graph(owner, graph_ref).await
    }

    /// See [`GraphStore::fetch_latest_graph_ref`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn fetch_latest_graph_ref(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
    ) -> Result<GraphRef, StoreError> {
        self.inner().fetch_latest_graph_ref(owner, graph_id).await
    }

    /// See [`GraphStore::list_graph_versions`].
    ///
    /// # Errors
    /// As the inner store's.
    async fn list_graph_versions(
        &self,
        owner: &OwnerScope,
        graph_id: &GraphId,
        query: &GraphVersionQuery,
    ) -> Result<GraphVersionPage, StoreError> {
        self.inner()
            .list_graph_versions(owner, graph_id, query)
            .await
    }

    /// Whether the layered store offers an operation registry: by default exactly when the
    /// inner store does. A layer that implements the registry calls itself returns `true`.
    fn offers_ops_registry(&self) -> bool {
        self.inner().ops_registry().is_some()
    }

    /// See [`OpsLifecycleRegistry::register_operation`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn register_operation(
        &self,
        owner: &SessionId,
        spec: &OperationSpec,
        max_concurrent: Option<u32>,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        inner_ops(self.inner())?
            .register_operation(owner, spec, max_concurrent, now)
            .await
    }

    /// See [`OpsLifecycleRegistry::transition_operation`] (every named transition goes
    /// through it).
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn transition_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        inner_ops(self.inner())?
            .transition_operation(owner, id, transition, now)
            .await
    }

    /// See [`OpsLifecycleRegistry::terminate_owner`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn terminate_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        inner_ops(self.inner())?
            .terminate_owner(owner, reason, now)
            .await
    }

    /// See [`OpsLifecycleRegistry::retire_owner`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn retire_owner(
        &self,
        owner: &SessionId,
        reason: &str,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        inner_ops(self.inner())?
            .retire_owner(owner, reason, now)
            .await
    }

    /// See [`OpsLifecycleRegistry::operation_snapshot`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn operation_snapshot(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
        inner_ops(self.inner())?.operation_snapshot(owner, id).await
    }

    /// See [`OpsLifecycleRegistry::list_operations`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn list_operations(
        &self,
        owner: &SessionId,
        query: &OperationQuery,
    ) -> Result<OperationPage, OpsError> {
        inner_ops(self.inner())?.list_operations(owner, query).await
    }

    /// See [`OpsLifecycleRegistry::collect_completed`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn collect_completed(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        inner_ops(self.inner())?.collect_completed(owner).await
    }

    /// See [`OpsLifecycleRegistry::is_owner_retired`].
    ///
    /// # Errors
    /// As the inner registry's; a permanent `Unavailable` when the inner store has none.
    async fn is_owner_retired(&self, owner: &SessionId) -> Result<bool, OpsError> {
        inner_ops(self.inner())?.is_owner_retired(owner).await
    }

    /// See [`OpsLifecycleRegistry::operation_wakeups`].
    fn operation_wakeups(&self) -> Option<Wakeups> {
        self.inner()
            .ops_registry()
            .and_then(OpsLifecycleRegistry::operation_wakeups)
    }
}

/// The inner store's registry, or the error of a store without one.
fn inner_ops(inner: &dyn Backend) -> Result<&dyn OpsLifecycleRegistry, OpsError> {
    inner.ops_registry().ok_or_else(OpsError::no_registry)
}

/// A [`StoreLayer`] as a [`Backend`]. A newtype rather than a blanket impl, so that a type
/// may be a store and a layer at once without the two impls colliding.
#[derive(Debug, Default)]
pub struct Layered<L>(pub L);

impl<L> std::ops::Deref for Layered<L> {
    type Target = L;

    fn deref(&self) -> &L {
        &self.0
    }
}
