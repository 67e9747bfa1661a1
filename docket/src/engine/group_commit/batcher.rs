//! The queue behind group commit: store calls of one kind from many callers, sent as batches
//! with at most a fixed number of batches at the store at once.
//!
//! The same machinery batches claimed commits (`commit_claimed_batch`) and starts
//! (`initialize_batch`); [`BatchMember`] says which store call a kind of member goes to.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use docket_core::model::Run;
use docket_core::store::{Backend, BatchedCommit, BatchedInit, Message, StoreError};
use tokio::sync::oneshot;

/// One member of a batch, and the store call that takes a batch of them.
pub(super) trait BatchMember: Send + Sized + 'static {
    /// What the outcomes of a member of this kind are called in errors.
    const KIND: &'static str;

    /// Sends `batch` to `store` as one call: one outcome per member, in order.
    fn send(
        store: Arc<dyn Backend>,
        batch: Vec<Self>,
    ) -> impl Future<Output = Vec<Result<Run, StoreError>>> + Send;
}

impl BatchMember for BatchedCommit {
    const KIND: &'static str = "commit";

    async fn send(store: Arc<dyn Backend>, batch: Vec<Self>) -> Vec<Result<Run, StoreError>> {
        store.commit_claimed_batch(batch).await
    }
}

impl BatchMember for BatchedInit {
    const KIND: &'static str = "start";

    async fn send(store: Arc<dyn Backend>, batch: Vec<Self>) -> Vec<Result<Run, StoreError>> {
        store.initialize_batch(batch).await
    }
}

/// A member waiting for its batch, with the channel its outcome goes back on.
type Waiting<M> = (M, oneshot::Sender<Result<Run, StoreError>>);

/// Members that go to the store together, in order, in one batch: one member, or a caller's
/// own batch (a chain of one run's moments, which must not be split or reordered).
type Unit<M> = Vec<Waiting<M>>;

/// The queue shared by callers and the batch tasks.
struct Queue<M> {
    waiting: VecDeque<Unit<M>>,
    /// Batch tasks running; each takes whatever is queued when its batch returns.
    in_flight: usize,
}

/// Batches members of one kind: at most `max_batch` per store call, at most `in_flight`
/// store calls at once.
pub(super) struct Batcher<M> {
    queue: Arc<Mutex<Queue<M>>>,
    max_batch: usize,
    in_flight: usize,
}

impl<M: BatchMember> Batcher<M> {
    /// A batcher of at most `max_batch` members per call and `in_flight` calls at once (each
    /// at least 1).
    pub(super) fn new(max_batch: usize, in_flight: usize) -> Self {
        Batcher {
            queue: Arc::new(Mutex::new(Queue {
                waiting: VecDeque::new(),
                in_flight: 0,
            })),
            max_batch: max_batch.max(1),
            in_flight: in_flight.max(1),
        }
    }

    /// The most members per store call.
    pub(super) fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// The most store calls at once.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues `members` as one unit, starts a batch task on `store` if a slot is free, and
    /// waits for each member's outcome.
    pub(super) async fn enqueue(
        &self,
        store: &Arc<dyn Backend>,
        members: Vec<M>,
    ) -> Vec<Result<Run, StoreError>> {
        if members.is_empty() {
            return Vec::new();
        }
        let (unit, receivers): (Unit<M>, Vec<_>) = members
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
                Arc::clone(store),
                Arc::clone(&self.queue),
                self.max_batch,
            ));
        }
        let mut outcomes = Vec::with_capacity(receivers.len());
        for outcome in receivers {
            outcomes.push(outcome.await.unwrap_or_else(|_| Err(undelivered::<M>())));
        }
        outcomes
    }
}

fn lock<M>(queue: &Mutex<Queue<M>>) -> MutexGuard<'_, Queue<M>> {
    // The queue holds no invariant a panic could break half-way (a push or a drain), so a
    // poisoned lock is still usable.
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The outcome of a member whose batch never answered for it.
pub(super) fn undelivered<M: BatchMember>() -> StoreError {
    StoreError::ambiguous(Message(format!(
        "the group commit batch ended without an outcome for this {}",
        M::KIND
    )))
}

/// Runs batches until the queue is empty, then gives its slot back under the same lock that
/// found the queue empty. Should the store panic instead, the guard gives the slot back.
async fn run_batches<M: BatchMember>(
    store: Arc<dyn Backend>,
    queue: Arc<Mutex<Queue<M>>>,
    max_batch: usize,
) {
    let mut guard = Unwinding {
        queue: Arc::clone(&queue),
        finished: false,
    };
    loop {
        let batch: Vec<Waiting<M>> = {
            let mut q = lock(&queue);
            if q.waiting.is_empty() {
                q.in_flight -= 1;
                guard.finished = true;
                break;
            }
            // Whole units, as many as fit; a unit larger than the limit goes alone.
            let mut batch: Vec<Waiting<M>> = Vec::new();
            while let Some(unit) = q.waiting.front() {
                if !batch.is_empty() && batch.len() + unit.len() > max_batch {
                    break;
                }
                batch.extend(q.waiting.pop_front().into_iter().flatten());
            }
            batch
        };
        let (members, senders): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
        let mut outcomes = M::send(Arc::clone(&store), members).await.into_iter();
        for sender in senders {
            // A caller that went away no longer wants its outcome.
            let _ = sender.send(outcomes.next().unwrap_or_else(|| Err(undelivered::<M>())));
        }
    }
}

/// Gives a batch task's slot back when it unwinds (a task that finished normally already
/// did). The members of the batch that panicked are answered by their dropped senders; if
/// no other task is left to take the queue, the members still queued are answered too
/// (their senders drop), so no caller waits for a task that will never come.
struct Unwinding<M> {
    queue: Arc<Mutex<Queue<M>>>,
    finished: bool,
}

impl<M> Drop for Unwinding<M> {
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
