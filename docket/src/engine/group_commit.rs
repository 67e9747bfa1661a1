//! Group commit: the claimed commits of many vehicles share one store write
//! (`docs/engine.md`, “Group commit”).
//!
//! Every moment is committed under its own double fence, but a durable write per moment
//! bounds a worker by the store's fsyncs or round trips. [`GroupCommit`] is a store layer the
//! engine puts in front of the backend: a claimed commit joins a queue, and one batch at a
//! time goes to [`docket_core::store::RunStore::commit_claimed_batch`] with everything queued (at most
//! `max_commit_batch` members). The batching is self-clocking: up to
//! `commit_batches_in_flight` batches are in flight at once (default
//! [`DEFAULT_COMMIT_BATCHES_IN_FLIGHT`](crate::engine::DEFAULT_COMMIT_BATCHES_IN_FLIGHT)),
//! and a commit that finds fewer is sent at once, alone —
//! nobody ever waits for company; the commits that arrive while every slot is busy form the
//! next batches. So batches form only under pressure, and a store whose calls run in
//! parallel (a connection pool) keeps that parallelism. Each caller gets its own member's
//! outcome, so a fence lost by one run never touches its neighbours.
//!
//! Everything else passes through unchanged (see [`StoreLayer`]).
//!
//! # Cancel safety
//!
//! A batch runs on its own task, so dropping a caller's future never strands the other
//! members: the batch completes and the dropped caller's outcome is discarded, exactly as a
//! dropped single commit may still land. A batch task that fails to deliver (a store that
//! panics, or returns fewer outcomes than members) answers the undelivered members with
//! `Ambiguous`, which the vehicle resolves by re-reading.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use docket_core::model::{Event, Run, Scope};
use docket_core::store::{Backend, BatchedCommit, ClaimedCommit, Message, StoreError, StoreLayer};
use tokio::sync::oneshot;

/// A commit waiting for its batch, with the channel its outcome goes back on.
type Waiting = (BatchedCommit, oneshot::Sender<Result<Run, StoreError>>);

/// Commits that go to the store together, in order, in one batch: one commit, or a caller's
/// own batch (a chain of one run's moments, which must not be split or reordered).
type Unit = Vec<Waiting>;

/// The queue shared by callers and the batch tasks.
#[derive(Default)]
struct Queue {
    waiting: std::collections::VecDeque<Unit>,
    /// Batch tasks running; each takes whatever is queued when its batch returns.
    in_flight: usize,
}

/// The store layer that batches claimed commits. See the [module docs](self).
pub(crate) struct GroupCommit {
    inner: Arc<dyn Backend>,
    queue: Arc<Mutex<Queue>>,
    max_batch: usize,
    /// Most batch tasks running at once.
    in_flight: usize,
}

impl GroupCommit {
    /// Batches the claimed commits sent to `inner`, at most `max_batch` per store call and
    /// at most `in_flight` store calls at once.
    pub(crate) fn new(inner: Arc<dyn Backend>, max_batch: usize, in_flight: usize) -> Self {
        GroupCommit {
            inner,
            queue: Arc::new(Mutex::new(Queue::default())),
            max_batch: max_batch.max(1),
            in_flight: in_flight.max(1),
        }
    }
}

/// `backend` behind group commit: its claimed commits from many callers go to the store in
/// batches of at most `max_batch` (`0` and `1` send every commit alone), with at most
/// `in_flight` batches sent at once (`0` counts as 1); everything else passes through
/// unchanged. A worker does this itself when its
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
            .field("max_batch", &self.max_batch)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

fn lock(queue: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // The queue holds no invariant a panic could break half-way (a push or a drain), so a
    // poisoned lock is still usable.
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The outcome of a member whose batch never answered for it.
fn undelivered() -> StoreError {
    StoreError::ambiguous(Message(
        "the group commit batch ended without an outcome for this commit".into(),
    ))
}

/// Runs batches until the queue is empty, then gives its slot back under the same lock that
/// found the queue empty. Should the store panic instead, the guard gives the slot back.
async fn run_batches(inner: Arc<dyn Backend>, queue: Arc<Mutex<Queue>>, max_batch: usize) {
    let mut guard = Unwinding {
        queue: Arc::clone(&queue),
        finished: false,
    };
    loop {
        let batch: Vec<Waiting> = {
            let mut q = lock(&queue);
            if q.waiting.is_empty() {
                q.in_flight -= 1;
                guard.finished = true;
                break;
            }
            // Whole units, as many as fit; a unit larger than the limit goes alone.
            let mut batch: Vec<Waiting> = Vec::new();
            while let Some(unit) = q.waiting.front() {
                if !batch.is_empty() && batch.len() + unit.len() > max_batch {
                    break;
                }
                batch.extend(q.waiting.pop_front().into_iter().flatten());
            }
            batch
        };
        let (commits, senders): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
        let mut outcomes = inner.commit_claimed_batch(commits).await.into_iter();
        for sender in senders {
            // A caller that went away no longer wants its outcome.
            let _ = sender.send(outcomes.next().unwrap_or_else(|| Err(undelivered())));
        }
    }
}

/// Gives a batch task's slot back when it unwinds (a task that finished normally already
/// did). The members of the batch that panicked are answered by their dropped senders; if
/// no other task is left to take the queue, the members still queued are answered too
/// (their senders drop), so no caller waits for a task that will never come.
struct Unwinding {
    queue: Arc<Mutex<Queue>>,
    finished: bool,
}

impl Drop for Unwinding {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut q = lock(&self.queue);
        q.in_flight = q.in_flight.saturating_sub(1);
        if q.in_flight == 0 {
            q.waiting.clear();
        }
    }
}

#[async_trait]
impl StoreLayer for GroupCommit {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
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
        let mut outcomes = self.enqueue(vec![member]).await;
        outcomes.pop().unwrap_or_else(|| Err(undelivered()))
    }

    /// A caller's own batch (the engine's chained moments of one run) joins the queue as one
    /// unit: its members go to the store in one batch, in order, beside other commits.
    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        self.enqueue(commits).await
    }
}

impl GroupCommit {
    /// Queues `members` as one unit, starts a batch task if a slot is free, and waits for
    /// each member's outcome.
    async fn enqueue(&self, members: Vec<BatchedCommit>) -> Vec<Result<Run, StoreError>> {
        if members.is_empty() {
            return Vec::new();
        }
        let (unit, receivers): (Unit, Vec<_>) = members
            .into_iter()
            .map(|member| {
                let (sender, outcome) = oneshot::channel();
                ((member, sender), outcome)
            })
            .unzip();
        let start = {
            let mut q = lock(&self.queue);
            q.waiting.push_back(unit);
            let start = q.in_flight < self.in_flight;
            if start {
                q.in_flight += 1;
            }
            start
        };
        if start {
            tokio::spawn(run_batches(
                Arc::clone(&self.inner),
                Arc::clone(&self.queue),
                self.max_batch,
            ));
        }
        let mut outcomes = Vec::with_capacity(receivers.len());
        for outcome in receivers {
            outcomes.push(outcome.await.unwrap_or_else(|_| Err(undelivered())));
        }
        outcomes
    }
}
