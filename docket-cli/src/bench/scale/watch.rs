//! A pass-through store for the scale phases, cheap enough to leave the worker's memory
//! alone: it counts finished runs (in total and inside an open measuring window) with atomics
//! only, hands one backlog permit back per finished run, can hide the store's push hints
//! (the worker then only polls), and times one watched run from its start to its first node
//! call after a claim leased it (told by the worker's nodes through [`StartHook`]) — the
//! moment its vehicle starts the run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::{Notify, Semaphore};

use docket_core::model::{Event, Run, RunId, Scope};
use docket_core::store::{
    Backend, BatchedCommit, ClaimBatch, ClaimRequest, ClaimedCommit, Layered, StoreError,
    StoreLayer, Wakeups,
};

use crate::bench::started::StartHook;

/// The run (h) is timing.
#[derive(Debug)]
struct Target {
    id: RunId,
    leased: bool,
    /// When the claim call that leased it began and returned.
    claim: Option<(Instant, Instant)>,
    started: Option<Instant>,
}

/// The watching store.
pub(crate) struct Watch {
    inner: Arc<dyn Backend>,
    hints: bool,
    finished: AtomicU64,
    counting: AtomicBool,
    counted: AtomicU64,
    backlog: Arc<Semaphore>,
    target: Mutex<Option<Target>>,
    read: Notify,
    claim_failures: AtomicU64,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("inner", &self.inner)
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// Watches `inner`; with `hints` false the worker sees no push hints. Every finished run
    /// returns one permit to `backlog`.
    pub(crate) fn new(inner: Arc<dyn Backend>, hints: bool, backlog: Arc<Semaphore>) -> Self {
        Watch {
            inner,
            hints,
            finished: AtomicU64::new(0),
            counting: AtomicBool::new(false),
            counted: AtomicU64::new(0),
            backlog,
            target: Mutex::new(None),
            read: Notify::new(),
            claim_failures: AtomicU64::new(0),
        }
    }

    /// Runs finished so far.
    pub(crate) fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    /// Starts or stops counting finished runs into [`Watch::counted`].
    pub(crate) fn count(&self, on: bool) {
        self.counting.store(on, Ordering::SeqCst);
    }

    /// Runs finished while counting was on.
    pub(crate) fn counted(&self) -> u64 {
        self.counted.load(Ordering::SeqCst)
    }

    /// Times run `id` from now on (forgetting any earlier target).
    pub(crate) fn target(&self, id: RunId) {
        if let Ok(mut target) = self.target.lock() {
            *target = Some(Target {
                id,
                leased: false,
                claim: None,
                started: None,
            });
        }
    }

    /// When the target's first node was called after a claim leased it, waiting at most until
    /// `deadline`.
    pub(crate) async fn started(&self, deadline: Instant) -> Option<Instant> {
        loop {
            let read = self
                .target
                .lock()
                .ok()
                .and_then(|t| t.as_ref().and_then(|t| t.started));
            if read.is_some() {
                return read;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            // A notification between the check and the wait is kept as a permit.
            let _ = tokio::time::timeout(left, self.read.notified()).await;
        }
    }

    /// When the claim call that leased the target began and returned (`None` before it).
    pub(crate) fn target_claim(&self) -> Option<(Instant, Instant)> {
        self.target
            .lock()
            .ok()
            .and_then(|t| t.as_ref().and_then(|t| t.claim))
    }

    /// Claim calls that failed so far (each one backs the worker's poll timer off).
    pub(crate) fn claim_failures(&self) -> u64 {
        self.claim_failures.load(Ordering::SeqCst)
    }

    fn count_finished(&self, run: &Run) {
        if run.status.is_terminal() {
            self.finished.fetch_add(1, Ordering::SeqCst);
            if self.counting.load(Ordering::SeqCst) {
                self.counted.fetch_add(1, Ordering::SeqCst);
            }
            self.backlog.add_permits(1);
        }
    }
}

impl StartHook for Layered<Watch> {
    /// The target's first node call after a claim leased it: its start.
    fn node_called(&self, run_id: &RunId) {
        let now = Instant::now();
        let mut hit = false;
        if let Ok(mut target) = self.0.target.lock() {
            if let Some(t) = target.as_mut() {
                if t.leased && t.started.is_none() && &t.id == run_id {
                    t.started = Some(now);
                    hit = true;
                }
            }
        }
        if hit {
            self.0.read.notify_one();
        }
    }
}

#[async_trait]
impl StoreLayer for Watch {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    fn wakeups(&self) -> Option<Wakeups> {
        if self.hints {
            self.inner.wakeups()
        } else {
            None
        }
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let run = self.inner.commit_claimed(scope, proposal, events).await?;
        self.count_finished(&run);
        Ok(run)
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        let outcomes = self.inner.commit_claimed_batch(commits).await;
        for run in outcomes.iter().flatten() {
            self.count_finished(run);
        }
        outcomes
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let began = Instant::now();
        let batch = self.inner.claim_due(policy).await.inspect_err(|_| {
            self.claim_failures.fetch_add(1, Ordering::SeqCst);
        })?;
        let returned = Instant::now();
        if let Ok(mut target) = self.target.lock() {
            if let Some(t) = target.as_mut() {
                if batch.leases.iter().any(|l| l.run_id == t.id) {
                    t.leased = true;
                    t.claim = Some((began, returned));
                }
            }
        }
        Ok(batch)
    }
}
