//! Group commit: the claimed commits of many vehicles share one store write
//! (`docs/engine.md`, “Group commit”).
//!
//! Every moment is committed under its own double fence, but a durable write per moment
//! bounds a worker by the store's fsyncs or round trips. [`GroupCommit`] is a store layer the
//! engine puts in front of the backend: a claimed commit joins a queue, and one batch at a
//! time goes to [`docket_core::store::RunStore::commit_claimed_batch`] with everything queued (at most
//! `max_commit_batch` members). The batch is self-clocking: a commit that finds the queue
//! idle is sent at once, alone — nobody ever waits for company — and the commits that arrive
//! while a batch is in flight form the next one. Each caller gets its own member's outcome,
//! so a fence lost by one run never touches its neighbours.
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

/// The queue shared by callers and the batch task.
#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// A batch task is running; it takes whatever is queued when its batch returns.
    in_flight: bool,
}

/// The store layer that batches claimed commits. See the [module docs](self).
pub(crate) struct GroupCommit {
    inner: Arc<dyn Backend>,
    queue: Arc<Mutex<Queue>>,
    max_batch: usize,
}

impl GroupCommit {
    /// Batches the claimed commits sent to `inner`, at most `max_batch` per store call.
    pub(crate) fn new(inner: Arc<dyn Backend>, max_batch: usize) -> Self {
        GroupCommit {
            inner,
            queue: Arc::new(Mutex::new(Queue::default())),
            max_batch: max_batch.max(1),
        }
    }
}

impl fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit")
            .field("inner", &self.inner)
            .field("max_batch", &self.max_batch)
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

/// Runs batches until the queue is empty, then clears `in_flight` under the same lock that
/// found it empty. Should the store panic instead, the guard clears it and answers anything
/// still queued.
async fn run_batches(inner: Arc<dyn Backend>, queue: Arc<Mutex<Queue>>, max_batch: usize) {
    let mut guard = Unwinding {
        queue: Arc::clone(&queue),
        finished: false,
    };
    loop {
        let batch: Vec<Waiting> = {
            let mut q = lock(&queue);
            if q.waiting.is_empty() {
                q.in_flight = false;
                guard.finished = true;
                break;
            }
            let take = q.waiting.len().min(max_batch);
            q.waiting.drain(..take).collect()
        };
        let (commits, senders): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
        let mut outcomes = inner.commit_claimed_batch(commits).await.into_iter();
        for sender in senders {
            // A caller that went away no longer wants its outcome.
            let _ = sender.send(outcomes.next().unwrap_or_else(|| Err(undelivered())));
        }
    }
}

/// Clears `in_flight` when a batch task unwinds. A task that finished normally already did,
/// and a new task may own the queue by now, so then it does nothing.
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
        q.in_flight = false;
        // Their senders drop here, and each caller sees `undelivered`.
        q.waiting.clear();
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
        let (sender, outcome) = oneshot::channel();
        let start = {
            let mut q = lock(&self.queue);
            q.waiting.push((
                BatchedCommit {
                    scope: scope.clone(),
                    proposal,
                    events,
                },
                sender,
            ));
            !std::mem::replace(&mut q.in_flight, true)
        };
        if start {
            tokio::spawn(run_batches(
                Arc::clone(&self.inner),
                Arc::clone(&self.queue),
                self.max_batch,
            ));
        }
        outcome.await.unwrap_or_else(|_| Err(undelivered()))
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        // A caller that batches by itself needs no queue.
        self.inner.commit_claimed_batch(commits).await
    }
}
