//! `Scripted`: a store layer (`Layered<Scripted>` is the `Backend`) over the memory store
//! that counts calls, records claim policies and injects commit failures, ambiguous commits,
//! claim errors and blocked claims.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use docket::core::graph::GraphDocument;
use docket::core::memory::MemoryStore;
use docket::core::model::{ClaimToken, Event, GraphRef, OwnerScope, Run, RunId, Scope, Timestamp};
use docket::core::store::layer::commit_each;
use docket::core::store::{
    Backend, BatchedCommit, ClaimBatch, ClaimRequest, ClaimedCommit, GraphStore, Layered, Message,
    RunStore, StoreError, StoreLayer,
};

/// What the next claimed commit does.
#[derive(Debug)]
pub enum CommitScript {
    /// Apply the commit as the store would (a place-holder before a later script).
    Apply,
    /// Return this error without touching the store.
    Fail(StoreError),
    /// Apply the commit, then report an ambiguous outcome (acknowledgement lost).
    ApplyThenAmbiguous,
    /// Report an ambiguous outcome without applying.
    AmbiguousNotApplied,
    /// Wait for a permit of the semaphore, then apply the commit.
    Gate(Arc<Semaphore>),
}

/// Counts and scripts around a real memory store.
#[derive(Debug, Default)]
pub struct Scripted {
    pub inner: MemoryStore,
    pub claims: AtomicU32,
    pub releases: AtomicU32,
    pub claimed_commits: AtomicU32,
    /// The member count of every `commit_claimed_batch` call, in order.
    pub claimed_batches: Mutex<Vec<usize>>,
    pub fetches: AtomicU32,
    pub graph_fetches: AtomicU32,
    commit_scripts: Mutex<VecDeque<CommitScript>>,
    claim_errors: AtomicU32,
    /// Whether injected claim failures are permanent (a read-only store) or retryable.
    permanent_claim_errors: std::sync::atomic::AtomicBool,
    claim_panics: AtomicU32,
    /// Claim policies seen, in order.
    pub policies: Mutex<Vec<ClaimRequest>>,
    /// When set, every claim waits for a permit first.
    gate: Mutex<Option<Arc<Semaphore>>>,
    /// Claim futures dropped before they finished.
    pub dropped_claims: Arc<AtomicU32>,
    /// How long each claim takes (tokio time, so a paused clock advances through it).
    claim_delay: Mutex<Duration>,
    /// How long each of the next claims takes, before `claim_delay` applies again.
    claim_delays: Mutex<std::collections::VecDeque<Duration>>,
    /// When each claim started (tokio time).
    pub claim_starts: Mutex<Vec<tokio::time::Instant>>,
}

struct DropGuard(Arc<AtomicU32>, bool);

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Scripted {
    pub fn new() -> Arc<Layered<Self>> {
        Arc::new(Layered(Scripted::default()))
    }

    pub fn script_commits(&self, scripts: impl IntoIterator<Item = CommitScript>) {
        self.commit_scripts.lock().expect("lock").extend(scripts);
    }

    pub fn fail_next_claims(&self, n: u32) {
        self.claim_errors.store(n, Ordering::SeqCst);
    }

    /// The next `n` claims fail with a permanent `Unavailable` (a store that refuses writes).
    pub fn refuse_next_claims_permanently(&self, n: u32) {
        self.permanent_claim_errors.store(true, Ordering::SeqCst);
        self.claim_errors.store(n, Ordering::SeqCst);
    }

    /// The next `n` claims panic (a broken store), after counting themselves.
    pub fn panic_next_claims(&self, n: u32) {
        self.claim_panics.store(n, Ordering::SeqCst);
    }

    /// Makes claims wait for permits of the returned semaphore (none yet).
    pub fn gate_claims(&self) -> Arc<Semaphore> {
        let gate = Arc::new(Semaphore::new(0));
        *self.gate.lock().expect("lock") = Some(Arc::clone(&gate));
        gate
    }

    /// Makes every claim take `delay` before it reads the store.
    pub fn delay_claims(&self, delay: Duration) {
        *self.claim_delay.lock().expect("lock") = delay;
    }

    /// Makes the next claims take these durations, one each, in order (then `delay_claims`'s
    /// again).
    pub fn delay_next_claims(&self, delays: impl IntoIterator<Item = Duration>) {
        self.claim_delays.lock().expect("lock").extend(delays);
    }

    pub fn ungate_claims(&self) {
        if let Some(gate) = self.gate.lock().expect("lock").take() {
            gate.add_permits(10_000);
        }
    }

    pub fn count(counter: &AtomicU32) -> u32 {
        counter.load(Ordering::SeqCst)
    }

    pub fn claim_limits(&self) -> Vec<u32> {
        self.policies
            .lock()
            .expect("lock")
            .iter()
            .map(|p| p.limit.get())
            .collect()
    }
}

#[async_trait]
impl StoreLayer for Scripted {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        self.claimed_batches
            .lock()
            .expect("lock")
            .push(commits.len());
        commit_each(self, commits).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.claimed_commits.fetch_add(1, Ordering::SeqCst);
        let script = self.commit_scripts.lock().expect("lock").pop_front();
        match script {
            None | Some(CommitScript::Apply) => {
                self.inner.commit_claimed(scope, proposal, events).await
            }
            Some(CommitScript::Fail(error)) => Err(error),
            Some(CommitScript::ApplyThenAmbiguous) => {
                self.inner.commit_claimed(scope, proposal, events).await?;
                Err(StoreError::ambiguous(Message(
                    "connection lost after COMMIT".into(),
                )))
            }
            Some(CommitScript::AmbiguousNotApplied) => Err(StoreError::ambiguous(Message(
                "connection lost before COMMIT".into(),
            ))),
            Some(CommitScript::Gate(gate)) => {
                if let Ok(permit) = gate.acquire().await {
                    permit.forget();
                }
                self.inner.commit_claimed(scope, proposal, events).await
            }
        }
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        self.inner.fetch_run(scope, run_id).await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let mut guard = DropGuard(Arc::clone(&self.dropped_claims), false);
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.policies.lock().expect("lock").push(*policy);
        self.claim_starts
            .lock()
            .expect("lock")
            .push(tokio::time::Instant::now());
        let scripted = self.claim_delays.lock().expect("lock").pop_front();
        let delay = scripted.unwrap_or_else(|| *self.claim_delay.lock().expect("lock"));
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let gate = self.gate.lock().expect("lock").clone();
        if let Some(gate) = gate {
            let _permit = gate.acquire().await;
        }
        let fail = self
            .claim_errors
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        guard.1 = true;
        let panic = self
            .claim_panics
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        assert!(!panic, "injected claim panic");
        if fail {
            let message = Message("injected claim failure".into());
            return Err(if self.permanent_claim_errors.load(Ordering::SeqCst) {
                StoreError::permanent(message)
            } else {
                StoreError::retryable(message)
            });
        }
        self.inner.claim_due(policy).await
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        self.inner.release_claim(run_id, token, now).await
    }

    async fn fetch_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<GraphDocument, StoreError> {
        self.graph_fetches.fetch_add(1, Ordering::SeqCst);
        self.inner.fetch_graph(owner, graph_ref).await
    }
}
