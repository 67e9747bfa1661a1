//! A `RunStore` wrapper around the memory store that counts the calls the lifecycle makes and
//! injects failures or lost races, for the lifecycle tests (spec §9.4 71–73).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;

use docket_core::memory::MemoryStore;
use docket_core::model::{
    ClaimToken, Event, EventPage, EventQuery, Run, RunId, RunInfo, RunPage, RunQuery, Scope,
    Timestamp,
};
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimPolicy, ClaimedCommit, InitProposal,
    PrunePolicy, PruneReport, ReleaseWake, RunStore, StoreError, UnclaimedCommit, Wakeups,
};

use super::{t, unclaimed};

/// Counts, scripted failures and scripted races around a real memory store.
#[derive(Debug, Default)]
pub struct Scripted {
    pub inner: MemoryStore,
    pub fetches: AtomicU32,
    pub unclaimed_commits: AtomicU32,
    pub claimed_commits: AtomicU32,
    pub initializes: AtomicU32,
    /// Errors returned (without touching the store) by the next unclaimed commits.
    commit_failures: Mutex<VecDeque<StoreError>>,
    /// How many upcoming fetches are followed by a competing signal commit, which makes the
    /// fetched seq stale for real.
    races: AtomicU32,
}

impl Scripted {
    pub fn new(inner: MemoryStore) -> Self {
        Scripted {
            inner,
            ..Scripted::default()
        }
    }

    pub fn fail_next_unclaimed_commits(&self, errors: impl IntoIterator<Item = StoreError>) {
        self.commit_failures
            .lock()
            .expect("script lock")
            .extend(errors);
    }

    pub fn race_next_fetches(&self, n: u32) {
        self.races.store(n, Ordering::SeqCst);
    }

    pub fn fetch_count(&self) -> u32 {
        self.fetches.load(Ordering::SeqCst)
    }

    pub fn unclaimed_commit_count(&self) -> u32 {
        self.unclaimed_commits.load(Ordering::SeqCst)
    }

    fn take_race(&self) -> bool {
        self.races
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

#[async_trait]
impl RunStore for Scripted {
    async fn initialize(
        &self,
        owner: &docket_core::model::OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.initializes.fetch_add(1, Ordering::SeqCst);
        self.inner.initialize(owner, proposal, events).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.claimed_commits.fetch_add(1, Ordering::SeqCst);
        self.inner.commit_claimed(scope, proposal, events).await
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.unclaimed_commits.fetch_add(1, Ordering::SeqCst);
        let scripted = self
            .commit_failures
            .lock()
            .expect("script lock")
            .pop_front();
        if let Some(error) = scripted {
            return Err(error);
        }
        self.inner
            .commit_unclaimed(scope, expected_seq, proposal, events)
            .await
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let run = self.inner.fetch_run(scope, run_id).await?;
        if self.take_race() {
            // Another signal lands between this fetch and the caller's commit.
            let (proposal, events) = unclaimed(
                &run,
                run.status,
                if run.status == docket_core::model::RunStatus::Waiting {
                    ReleaseWake::External
                } else {
                    ReleaseWake::Immediate
                },
                t(500),
            );
            self.inner
                .commit_unclaimed(scope, run.checkpoint_seq, proposal, events)
                .await
                .expect("the competing commit lands");
        }
        Ok(run)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        self.inner.inspect_run(scope, run_id).await
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        self.inner.list_runs(scope, query).await
    }

    async fn claim_due(&self, policy: &ClaimPolicy) -> Result<ClaimBatch, StoreError> {
        self.inner.claim_due(policy).await
    }

    async fn refresh_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner.refresh_claim(run_id, token, now).await
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner.release_claim(run_id, token, now).await
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        self.inner.abandon_claim(run_id, token, policy).await
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        self.inner.retry_poisoned_run(scope, run_id, now).await
    }

    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        self.inner.fetch_event(scope, run_id, seq).await
    }

    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        self.inner.fetch_latest_event(scope, run_id).await
    }

    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        self.inner.list_events(scope, run_id, query).await
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        self.inner.prune(policy).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        self.inner.wakeups()
    }
}
