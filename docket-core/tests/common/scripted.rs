//! A store layer (`Layered<Scripted>` is the store) around the memory store that counts the
//! calls the lifecycle makes and injects failures or lost races, for the lifecycle tests
//! (scenarios 71–73 of `docs/scenarios.md`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;

use docket_core::memory::MemoryStore;
use docket_core::model::{Event, Run, RunId, Scope};
use docket_core::store::layer::{commit_each, initialize_each};
use docket_core::store::{
    Backend, BatchedCommit, ClaimedCommit, InitProposal, Layered, ReleaseWake, RunStore,
    StoreError, StoreLayer, UnclaimedCommit,
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
    pub fn new(inner: MemoryStore) -> Layered<Self> {
        Layered(Scripted {
            inner,
            ..Scripted::default()
        })
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
impl StoreLayer for Scripted {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn initialize(
        &self,
        owner: &docket_core::model::OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.initializes.fetch_add(1, Ordering::SeqCst);
        self.inner.initialize(owner, proposal, events).await
    }

    async fn initialize_batch(
        &self,
        members: Vec<docket_core::store::BatchedInit>,
    ) -> Vec<Result<Run, StoreError>> {
        initialize_each(self, members).await
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        commit_each(self, commits).await
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
}
