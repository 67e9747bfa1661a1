//! Group commit: the claimed commits of many vehicles, and the starts of many callers, share
//! store writes (`docs/engine.md`, “Group commit”).
//!
//! Every moment is committed under its own double fence, but a durable write per moment
//! bounds a worker by the store's fsyncs or round trips. [`GroupCommit`] is a store layer the
//! engine puts in front of the backend: a claimed commit joins a queue, and one batch at a
//! time goes to [`docket_core::store::RunStore::commit_claimed_batch`] with everything queued
//! (at most `max_commit_batch` members). The batching is self-clocking: up to
//! `commit_batches_in_flight` batches are in flight at once (default
//! [`DEFAULT_COMMIT_BATCHES_IN_FLIGHT`](crate::engine::DEFAULT_COMMIT_BATCHES_IN_FLIGHT)), and
//! a commit that finds fewer is sent at once, alone — nobody ever waits for company; the
//! commits that arrive while every slot is busy form the next batches. So batches form only
//! under pressure, and a store whose calls run in parallel (a connection pool) keeps that
//! parallelism. Each caller gets its own member's outcome, so a fence lost by one run never
//! touches its neighbours.
//!
//! Starts (`initialize`, the durable write of `Docket::start_run`) queue the same way, in a
//! queue and slots of their own, and go to
//! [`docket_core::store::RunStore::initialize_batch`]: each run is still decided on its own (a
//! taken run id fails alone). A caller's own `initialize_batch` (`Docket::start_runs`) passes
//! through unchanged, as does everything else (see [`StoreLayer`]).
//!
//! # Cancel safety
//!
//! A batch runs on its own task, so dropping a caller's future never strands the other
//! members: the batch completes and the dropped caller's outcome is discarded, exactly as a
//! dropped single commit or start may still land. A batch task that fails to deliver (a store
//! that panics, or returns fewer outcomes than members) answers the undelivered members with
//! `Ambiguous`, which the vehicle resolves by re-reading.

mod batcher;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use docket_core::model::{Event, OwnerScope, Run, Scope};
use docket_core::store::{
    Backend, BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, StoreError, StoreLayer,
};

use batcher::{undelivered, BatchMember, Batcher};

/// The store layer that batches claimed commits and starts. See the [module docs](self).
pub(crate) struct GroupCommit {
    inner: Arc<dyn Backend>,
    commits: Batcher<BatchedCommit>,
    starts: Batcher<BatchedInit>,
}

impl GroupCommit {
    /// Batches the claimed commits and the starts sent to `inner`, each at most `max_batch`
    /// per store call and at most `in_flight` store calls at once.
    pub(crate) fn new(inner: Arc<dyn Backend>, max_batch: usize, in_flight: usize) -> Self {
        GroupCommit {
            inner,
            commits: Batcher::new(max_batch, in_flight),
            starts: Batcher::new(max_batch, in_flight),
        }
    }

    /// Sends one member through `batcher` and returns its outcome.
    async fn one<M: BatchMember>(
        &self,
        batcher: &Batcher<M>,
        member: M,
    ) -> Result<Run, StoreError> {
        let mut outcomes = batcher.enqueue(&self.inner, vec![member]).await;
        outcomes.pop().unwrap_or_else(|| Err(undelivered::<M>()))
    }
}

/// `backend` behind group commit: its claimed commits and its starts from many callers go to
/// the store in batches of at most `max_batch` (`0` and `1` send every one alone), with at
/// most `in_flight` batches of each kind sent at once (`0` counts as 1); everything else
/// passes through unchanged. A worker's engine does this itself when its
/// [`WorkerConfig::max_commit_batch`](crate::engine::WorkerConfig::max_commit_batch) — or,
/// left unset, its store's `preferred_commit_batch` — is above 1, with its
/// [`WorkerConfig::commit_batches_in_flight`](crate::engine::WorkerConfig::commit_batches_in_flight);
/// this is for code that commits claimed moments outside a worker (a benchmark, a custom
/// executor) and wants the same batching.
///
/// Batches form only under pressure: up to `in_flight` batches are in flight at once and a
/// commit that finds a free slot is sent at once, alone; the commits arriving while every
/// slot is busy form the next batches (`docs/engine.md`, “Group commit”). Each caller gets its
/// own member's outcome.
///
/// # Cancel safety
///
/// A batch runs on its own task: dropping a caller's future never strands the other members
/// of its batch, and the dropped commit may still land, exactly as a dropped single commit
/// may. A batch that ends without an outcome for a member answers it `Ambiguous`.
pub fn group_commit(
    backend: Arc<dyn Backend>,
    max_batch: usize,
    in_flight: usize,
) -> Arc<dyn Backend> {
    if max_batch <= 1 {
        return backend;
    }
    Arc::new(docket_core::store::Layered(GroupCommit::new(
        backend, max_batch, in_flight,
    )))
}

impl fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit")
            .field("inner", &self.inner)
            .field("max_batch", &self.commits.max_batch())
            .field("in_flight", &self.commits.in_flight())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl StoreLayer for GroupCommit {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let member = BatchedInit {
            owner: owner.clone(),
            proposal,
            events,
        };
        self.one(&self.starts, member).await
    }

    /// A caller's own batch of starts (`Docket::start_runs`) is one store call already: it goes
    /// to the store whole, beside the queue.
    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        self.inner.initialize_batch(members).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let member = BatchedCommit {
            scope: scope.clone(),
            proposal,
            events,
        };
        self.one(&self.commits, member).await
    }

    /// A caller's own batch (the engine's chained moments of one run) joins the queue as one
    /// unit: its members go to the store in one batch, in order, beside other commits.
    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        self.commits.enqueue(&self.inner, commits).await
    }
}
