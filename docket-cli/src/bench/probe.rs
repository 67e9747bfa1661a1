//! A pass-through store that watches the end-to-end phase from the outside, so the engine runs
//! unmodified: it times claim-to-start (from the `claim_due` call that leased a run to the
//! first node call of that run, told by the worker's nodes through [`StartHook`]) and counts
//! finished runs (a claimed commit that made the run terminal). It is a [`StoreLayer`], used
//! as `Layered<Probe>`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use hdrhistogram::Histogram;
use tokio::sync::Semaphore;

use docket_core::model::{Event, Run, RunId, Scope};
use docket_core::store::{
    Backend, BatchedCommit, ClaimBatch, ClaimRequest, ClaimedCommit, Layered, StoreError,
    StoreLayer,
};

use super::driver::{histogram, record};
use super::started::StartHook;

/// The watching store.
pub(crate) struct Probe {
    inner: Arc<dyn Backend>,
    /// Run → when the `claim_due` call that leased it began.
    leased: Mutex<HashMap<RunId, Instant>>,
    claim_to_start: Mutex<Histogram<u64>>,
    finished: AtomicU64,
    finished_at: Mutex<Vec<Instant>>,
    /// Gets one permit back per finished run (the producers' backlog bound).
    backlog: Arc<Semaphore>,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl Probe {
    /// Watches `inner`; every finished run returns one permit to `backlog`.
    pub(crate) fn new(inner: Arc<dyn Backend>, backlog: Arc<Semaphore>) -> Self {
        Probe {
            inner,
            leased: Mutex::new(HashMap::new()),
            claim_to_start: Mutex::new(histogram()),
            finished: AtomicU64::new(0),
            finished_at: Mutex::new(Vec::new()),
            backlog,
        }
    }

    /// Runs finished so far.
    pub(crate) fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    /// Runs that finished within `[from, to]`.
    pub(crate) fn finished_between(&self, from: Instant, to: Instant) -> u64 {
        self.finished_at
            .lock()
            .map(|times| times.iter().filter(|t| **t >= from && **t <= to).count() as u64)
            .unwrap_or(0)
    }

    /// The claim-to-start latencies recorded so far.
    pub(crate) fn claim_to_start(&self) -> Histogram<u64> {
        self.claim_to_start
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|_| histogram())
    }
}

impl StartHook for Layered<Probe> {
    /// The first node call of a run leased since the probe began: its claim-to-start.
    fn node_called(&self, run_id: &RunId) {
        let leased = self.0.leased.lock().ok().and_then(|mut m| m.remove(run_id));
        if let Some(asked) = leased {
            if let Ok(mut h) = self.0.claim_to_start.lock() {
                record(&mut h, asked.elapsed());
            }
        }
    }
}

impl Probe {
    /// Counts a committed run that reached a terminal status.
    fn count_finished(&self, run: &Run) {
        if run.status.is_terminal() {
            let at = Instant::now();
            if let Ok(mut times) = self.finished_at.lock() {
                times.push(at);
            }
            self.finished.fetch_add(1, Ordering::SeqCst);
            self.backlog.add_permits(1);
        }
    }
}

#[async_trait]
impl StoreLayer for Probe {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
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
        // The whole batch goes to the store as one, as it would without the probe.
        let outcomes = self.inner.commit_claimed_batch(commits).await;
        for run in outcomes.iter().flatten() {
            self.count_finished(run);
        }
        outcomes
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let asked = Instant::now();
        let batch = self.inner.claim_due(policy).await?;
        if let Ok(mut leased) = self.leased.lock() {
            for lease in &batch.leases {
                leased.insert(lease.run_id.clone(), asked);
            }
        }
        Ok(batch)
    }
}
