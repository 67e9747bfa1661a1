//! Group commit (`docs/engine.md`, “Group commit”): a worker's vehicles share
//! `commit_claimed_batch` calls, every run still commits each of its checkpoints exactly once,
//! `max_commit_batch = 1` sends every commit alone, no more than `commit_batches_in_flight`
//! batches are at the store at once, and concurrent starts share `initialize_batch` calls.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use docket::core::memory::MemoryStore;
use docket::core::model::{
    Event, EventQuery, EventType, OwnerScope, Run, RunId, RunStatus, Scope, ValueMap,
    MAX_PAGE_LIMIT,
};
use docket::core::store::{
    Backend, BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, Layered, RunStore,
    StoreError, StoreLayer,
};
use docket::engine::WorkerConfig;
use docket::{AwaitOptions, Docket, DocketError, StartOptions};

use support::graphs::steps;

/// Records how the engine sends claimed commits to the store.
#[derive(Debug, Default)]
struct Recording {
    inner: MemoryStore,
    /// The member count of every `commit_claimed_batch` call.
    batches: Mutex<Vec<usize>>,
    /// `commit_claimed` calls (single commits).
    singles: AtomicUsize,
    /// The member count of every `initialize_batch` call, and `initialize` calls.
    start_batches: Mutex<Vec<usize>>,
    single_starts: AtomicUsize,
    /// What the store answers as its preferred batch (0: the inner store's).
    preferred: usize,
    /// `commit_claimed_batch` calls in progress, and the most seen at once.
    inside: AtomicUsize,
    most_inside: AtomicUsize,
    /// When above 0, each batch call waits (up to a deadline) until this many calls are in
    /// progress, then gives the engine a few more turns before answering: calls pile up to
    /// whatever limit the engine keeps, and past it if it keeps none.
    gather: usize,
}

#[async_trait]
impl StoreLayer for Recording {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    fn preferred_commit_batch(&self) -> usize {
        if self.preferred == 0 {
            self.inner.preferred_commit_batch()
        } else {
            self.preferred
        }
    }

    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.single_starts.fetch_add(1, Ordering::SeqCst);
        self.inner.initialize(owner, proposal, events).await
    }

    async fn initialize_batch(&self, members: Vec<BatchedInit>) -> Vec<Result<Run, StoreError>> {
        self.start_batches
            .lock()
            .expect("start batch sizes")
            .push(members.len());
        self.inner.initialize_batch(members).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        self.singles.fetch_add(1, Ordering::SeqCst);
        self.inner.commit_claimed(scope, proposal, events).await
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        self.batches
            .lock()
            .expect("batch sizes")
            .push(commits.len());
        let now_inside = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_inside.fetch_max(now_inside, Ordering::SeqCst);
        if self.gather > 0 {
            let deadline = Instant::now() + Duration::from_millis(500);
            while self.inside.load(Ordering::SeqCst) < self.gather && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        }
        let outcomes = self.inner.commit_claimed_batch(commits).await;
        self.inside.fetch_sub(1, Ordering::SeqCst);
        outcomes
    }
}

/// Starts `runs` runs of a 3-step graph, lets a worker of `concurrency` vehicles finish them
/// all, and returns the store and the claimed commits the runs hold (every checkpoint after
/// initialization).
async fn finish_runs(
    runs: usize,
    concurrency: usize,
    max_commit_batch: Option<usize>,
    preferred: usize,
) -> (Arc<Layered<Recording>>, usize) {
    let store = Recording {
        preferred,
        ..Recording::default()
    };
    let config = WorkerConfig {
        concurrency,
        max_commit_batch,
        ..WorkerConfig::default()
    };
    finish_runs_in(store, runs, config).await
}

/// [`finish_runs`] with the recording store and the worker's configuration given (its poll
/// interval is set to 10 ms).
async fn finish_runs_in(
    store: Recording,
    runs: usize,
    config: WorkerConfig,
) -> (Arc<Layered<Recording>>, usize) {
    let store = Arc::new(Layered(store));
    let docket = Docket::builder(store.clone(), docket::nodes::registry())
        .config(WorkerConfig {
            poll_interval_ms: 10,
            ..config
        })
        .build()
        .expect("facade");
    let graph = docket
        .save_graph_json(&steps(3).to_string())
        .await
        .expect("save");
    let mut started = Vec::new();
    for _ in 0..runs {
        let run = docket
            .start_run(&graph, ValueMap::new(), StartOptions::default())
            .await
            .expect("start");
        started.push(run.id);
    }
    let worker = docket.start_worker();
    let wait = AwaitOptions {
        timeout: Duration::from_secs(60),
        poll_interval: Duration::from_millis(5),
    };
    let mut claimed_commits = 0;
    for id in &started {
        let run = docket.await_run(id, wait).await.expect("finished");
        assert_eq!(run.status, RunStatus::Done, "{id}");
        claimed_commits += usize::try_from(run.checkpoint_seq - 1).expect("small");
        let page = store
            .list_events(
                &Scope::System,
                id,
                &EventQuery {
                    after_seq: 0,
                    limit: MAX_PAGE_LIMIT,
                },
            )
            .await
            .expect("events");
        assert!(!page.has_more, "{id}: a short history");
        let checkpoints = page
            .events
            .iter()
            .filter(|e| e.event_type == EventType::CheckpointCommitted)
            .count();
        assert_eq!(
            checkpoints as u64, run.checkpoint_seq,
            "{id}: every checkpoint committed exactly once"
        );
    }
    worker.shutdown().await;
    (store, claimed_commits)
}

#[tokio::test]
async fn concurrent_vehicles_share_batches_and_every_checkpoint_commits_once() {
    let (store, claimed_commits) = finish_runs(24, 8, Some(64), 0).await;
    let batches = store.0.batches.lock().expect("batch sizes").clone();
    assert_eq!(
        store.0.singles.load(Ordering::SeqCst),
        0,
        "no commit bypassed the batches"
    );
    assert_eq!(
        batches.iter().sum::<usize>(),
        claimed_commits,
        "every claimed commit went through exactly one batch: {batches:?}"
    );
    assert!(
        batches.iter().any(|&n| n > 1),
        "eight vehicles shared at least one batch: {batches:?}"
    );
    assert!(
        batches.iter().all(|&n| (1..=64).contains(&n)),
        "{batches:?}"
    );
}

#[tokio::test]
async fn a_batch_limit_of_one_sends_every_commit_alone() {
    // The worker's own setting wins over the store's preference.
    let (store, claimed_commits) = finish_runs(6, 4, Some(1), 64).await;
    assert_alone_but_the_chains(&store, 6, claimed_commits);
}

/// Without group commit every claimed commit goes alone, except each run's last barrier and
/// completion, which its vehicle sends as one batch of two (`docs/engine.md`, “Chained
/// completion”).
fn assert_alone_but_the_chains(store: &Layered<Recording>, runs: usize, claimed_commits: usize) {
    let batches = store.0.batches.lock().expect("batch sizes").clone();
    assert_eq!(batches, vec![2; runs], "one chain per run");
    assert_eq!(
        store.0.singles.load(Ordering::SeqCst),
        claimed_commits - 2 * runs
    );
}

#[tokio::test]
async fn left_unset_the_batch_limit_is_the_stores_preference() {
    // A store asking for batches of at most 3 gets batches, none larger.
    let (store, claimed_commits) = finish_runs(24, 8, None, 3).await;
    let batches = store.0.batches.lock().expect("batch sizes").clone();
    assert_eq!(store.0.singles.load(Ordering::SeqCst), 0);
    assert_eq!(batches.iter().sum::<usize>(), claimed_commits);
    assert!(batches.iter().all(|&n| (1..=3).contains(&n)), "{batches:?}");
    assert!(batches.iter().any(|&n| n > 1), "{batches:?}");
    // The memory store, like Redis, prefers every commit alone.
    let (store, claimed_commits) = finish_runs(6, 4, None, 0).await;
    assert_alone_but_the_chains(&store, 6, claimed_commits);
}

#[tokio::test]
async fn no_more_batches_than_the_configured_count_are_at_the_store_at_once() {
    for in_flight in [1, 3] {
        let store = Recording {
            gather: in_flight,
            ..Recording::default()
        };
        let config = WorkerConfig {
            // Eight vehicles' commits make four batches of two: enough for every slot.
            concurrency: 8,
            max_commit_batch: Some(2),
            commit_batches_in_flight: in_flight,
            ..WorkerConfig::default()
        };
        let (store, claimed_commits) = finish_runs_in(store, 24, config).await;
        let batches = store.0.batches.lock().expect("batch sizes").clone();
        assert_eq!(
            batches.iter().sum::<usize>(),
            claimed_commits,
            "every claimed commit went through exactly one batch: {batches:?}"
        );
        assert_eq!(
            store.0.most_inside.load(Ordering::SeqCst),
            in_flight,
            "the most batch calls at the store at once, with {in_flight} allowed"
        );
    }
}

#[tokio::test]
async fn concurrent_starts_share_batches_and_a_taken_run_id_fails_alone() {
    let store = Arc::new(Layered(Recording::default()));
    let docket = Docket::builder(store.clone(), docket::nodes::registry())
        .config(WorkerConfig {
            max_commit_batch: Some(64),
            ..WorkerConfig::default()
        })
        .build()
        .expect("facade");
    let graph = docket
        .save_graph_json(&steps(1).to_string())
        .await
        .expect("save");
    // 30 starts with run ids of their own and two that ask for the same one, all at once.
    let twice = RunId::new("run_asked_for_twice").expect("run id");
    let ids: Vec<Option<RunId>> = (0..30)
        .map(|_| None)
        .chain([Some(twice.clone()), Some(twice.clone())])
        .collect();
    let starts = ids.into_iter().map(|run_id| {
        let docket = docket.clone();
        let graph = graph.clone();
        tokio::spawn(async move {
            let options = StartOptions {
                run_id,
                ..StartOptions::default()
            };
            docket.start_run(&graph, ValueMap::new(), options).await
        })
    });
    let outcomes = futures::future::join_all(starts).await;
    let mut started = Vec::new();
    let mut refused = Vec::new();
    for outcome in outcomes {
        match outcome.expect("start task") {
            Ok(run) => started.push(run),
            Err(e) => refused.push(e),
        }
    }
    assert_eq!(started.len(), 31, "every start but one landed: {refused:?}");
    assert!(
        matches!(
            refused.as_slice(),
            [DocketError::Store(StoreError::Conflict)]
        ),
        "the second start of the taken id failed alone: {refused:?}"
    );
    for run in &started {
        let stored = docket.fetch_run(&run.id).await.expect("stored");
        assert_eq!(stored.checkpoint_seq, 1, "{}", run.id);
    }
    let batches = store.0.start_batches.lock().expect("sizes").clone();
    assert_eq!(store.0.single_starts.load(Ordering::SeqCst), 0);
    assert_eq!(batches.iter().sum::<usize>(), 32, "{batches:?}");
    assert!(
        batches.iter().any(|&n| n > 1),
        "concurrent starts shared a batch: {batches:?}"
    );
}
