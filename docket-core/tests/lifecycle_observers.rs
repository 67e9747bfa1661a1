//! After-commit checkpoint observers (`docs/runs-and-moments.md`, “Checkpoints and the envelope”;
//! `docs/runs-and-moments.md`, “The lifecycle”; scenarios 58 and 67 of `docs/scenarios.md`).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use common::*;
use docket_core::lifecycle::{Checkpoint, CheckpointObserver, Lifecycle, ObserverError};
use docket_core::model::{CheckpointType, EventType, OwnerScope, RunStatus, Scope};
use docket_core::runtime::Disposition;
use docket_core::store::{RunStore, StoreErrorKind};

const DEADLINE: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct Recorder {
    seen: Mutex<Vec<Checkpoint>>,
}

impl Recorder {
    fn seen(&self) -> Vec<Checkpoint> {
        self.seen.lock().expect("recorder lock").clone()
    }
}

#[async_trait]
impl CheckpointObserver for Recorder {
    async fn observe(&self, checkpoint: &Checkpoint) -> Result<(), ObserverError> {
        self.seen
            .lock()
            .expect("recorder lock")
            .push(checkpoint.clone());
        Ok(())
    }
}

#[derive(Debug)]
struct Failing;

#[async_trait]
impl CheckpointObserver for Failing {
    fn name(&self) -> &str {
        "failing"
    }

    async fn observe(&self, _: &Checkpoint) -> Result<(), ObserverError> {
        Err("observer exploded".into())
    }
}

#[derive(Debug)]
struct Panicking;

#[async_trait]
impl CheckpointObserver for Panicking {
    async fn observe(&self, _: &Checkpoint) -> Result<(), ObserverError> {
        panic!("observer panicked on purpose")
    }
}

/// Never finishes; records that it started.
#[derive(Debug, Default)]
struct Blocking {
    started: AtomicBool,
}

#[async_trait]
impl CheckpointObserver for Blocking {
    async fn observe(&self, _: &Checkpoint) -> Result<(), ObserverError> {
        self.started.store(true, Ordering::SeqCst);
        futures::future::pending::<()>().await;
        Ok(())
    }
}

#[tokio::test]
async fn observers_see_start_and_cancel_checkpoints_and_failures_are_only_counted() {
    let (store, graph) = store_with_graph().await;
    let recorder = Arc::new(Recorder::default());
    let composer = Lifecycle::new()
        .with_observer(Arc::new(Failing))
        .with_observer(recorder.clone());
    assert_eq!(composer.observer_count(), 2);
    let started = composer
        .start(
            &store,
            &OwnerScope::Tenantless,
            init_moment(&rid("r1"), &graph, t(0)),
        )
        .await
        .expect("start");
    assert_eq!(started.run.status, RunStatus::Running);
    let info = store
        .inspect_run(&Scope::System, &started.run.id)
        .await
        .expect("inspect");
    assert_eq!(info.wake_at, Some(t(0)));
    let cancelled = composer
        .signal(&store, &Scope::Tenantless, &started.run.id, |r| {
            cancel_mutation(r, t(5))
        })
        .await
        .expect("cancel");
    assert_eq!(cancelled.run().status, RunStatus::Cancelled);

    assert!(eventually(DEADLINE, || recorder.seen().len() == 2).await);
    assert!(eventually(DEADLINE, || composer.observer_failures() == 2).await);
    let seen = recorder.seen();
    let types: Vec<_> = seen.iter().map(|c| c.checkpoint_type).collect();
    assert_eq!(
        types,
        vec![CheckpointType::RunInitialized, CheckpointType::RunCancelled]
    );
    let cancel = &seen[1];
    assert_eq!(cancel.seq, 2);
    assert_eq!(&cancel.run, cancelled.run());
    assert_eq!(cancel.created_at, t(5));
    assert_eq!(
        cancel.events.last().map(|e| e.event_type),
        Some(EventType::CheckpointCommitted)
    );
    assert_eq!(cancel.metadata["checkpoint_type"], "run_cancelled");
    // The failing observer changed nothing durable.
    let stored = store
        .fetch_run(&Scope::System, &started.run.id)
        .await
        .expect("fetch");
    assert_eq!(&stored, cancelled.run());
}

#[tokio::test]
async fn observers_see_claimed_moments_with_the_committed_run() {
    let (store, graph) = store_with_graph().await;
    let recorder = Arc::new(Recorder::default());
    let composer = Lifecycle::new().with_observer(recorder.clone());
    let run = composer
        .start(
            &store,
            &OwnerScope::Tenantless,
            init_moment(&rid("r1"), &graph, t(0)),
        )
        .await
        .expect("start")
        .run;
    let lease = claim_one(&store, t(1)).await;
    let m = next_moment(&run, RunStatus::Running, Disposition::Continue, t(2));
    let committed = composer
        .commit_moment(&store, &Scope::System, m, 1, &lease.claim_token, t(2))
        .await
        .expect("commit");
    assert!(eventually(DEADLINE, || recorder.seen().len() == 2).await);
    let checkpoint = recorder.seen().remove(1);
    assert_eq!(checkpoint.checkpoint_type, CheckpointType::StepCommitted);
    assert_eq!((checkpoint.seq, &checkpoint.run), (2, &committed.run));
    assert_eq!(checkpoint.events, committed.events.as_slice());
    assert_eq!(&checkpoint.metadata, &committed.checkpoint_metadata);
}

#[tokio::test]
async fn rejected_and_unchanged_operations_notify_no_observer() {
    let (store, graph) = store_with_graph().await;
    let recorder = Arc::new(Recorder::default());
    let composer = Lifecycle::new().with_observer(recorder.clone());
    let m = init_moment(&rid("r1"), &graph, t(0));
    let run = composer
        .start(&store, &OwnerScope::Tenantless, m.clone())
        .await
        .expect("start")
        .run;
    let conflict = composer
        .start(&store, &OwnerScope::Tenantless, m)
        .await
        .expect_err("again");
    assert_eq!(
        conflict.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::Conflict)
    );
    composer
        .signal(&store, &Scope::Tenantless, &run.id, |r| {
            cancel_mutation(r, t(1))
        })
        .await
        .expect("cancel");
    composer
        .signal(&store, &Scope::Tenantless, &run.id, |r| {
            cancel_mutation(r, t(2))
        })
        .await
        .expect("unchanged");
    composer
        .signal(&store, &Scope::Tenantless, &run.id, |_| {
            Err::<docket_core::runtime::Mutation, _>("no")
        })
        .await
        .expect_err("refused");
    // Wait until the two real commits were observed, then make sure nothing else arrives:
    // every notification is spawned before its operation returns, so by now all are queued.
    assert!(eventually(DEADLINE, || recorder.seen().len() == 2).await);
    tokio::task::yield_now().await;
    assert_eq!(recorder.seen().len(), 2);
}

#[tokio::test]
async fn a_blocking_observer_cannot_delay_the_committed_result() {
    let (store, graph) = store_with_graph().await;
    let blocking = Arc::new(Blocking::default());
    let recorder = Arc::new(Recorder::default());
    let composer = Lifecycle::new()
        .with_observer(blocking.clone())
        .with_observer(recorder.clone());
    let started = tokio::time::timeout(
        DEADLINE,
        composer.start(
            &store,
            &OwnerScope::Tenantless,
            init_moment(&rid("r1"), &graph, t(0)),
        ),
    )
    .await
    .expect("the API result is not held up by the observer")
    .expect("start");
    let cancelled = tokio::time::timeout(
        DEADLINE,
        composer.signal(&store, &Scope::Tenantless, &started.run.id, |r| {
            cancel_mutation(r, t(1))
        }),
    )
    .await
    .expect("not held up either")
    .expect("cancel");
    assert!(cancelled.is_committed());
    assert!(eventually(DEADLINE, || blocking.started.load(Ordering::SeqCst)).await);
    assert!(eventually(DEADLINE, || recorder.seen().len() == 2).await);
    assert_eq!(composer.observer_failures(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_observer_is_counted_and_the_others_still_run() {
    let (store, graph) = store_with_graph().await;
    let recorder = Arc::new(Recorder::default());
    let composer = Lifecycle::new()
        .with_observer(Arc::new(Panicking))
        .with_observer(recorder.clone());
    composer
        .start(
            &store,
            &OwnerScope::Tenantless,
            init_moment(&rid("r1"), &graph, t(0)),
        )
        .await
        .expect("start");
    assert!(eventually(DEADLINE, || composer.observer_failures() == 1).await);
    assert!(eventually(DEADLINE, || recorder.seen().len() == 1).await);
    store
        .fetch_run(&Scope::System, &rid("r1"))
        .await
        .expect("the commit stands");
}

#[test]
fn without_a_runtime_observers_are_counted_as_failed_and_the_commit_stands() {
    let (store, graph) = futures::executor::block_on(store_with_graph());
    let recorder = Arc::new(Recorder::default());
    let composer = Lifecycle::new().with_observer(recorder.clone());
    let started = futures::executor::block_on(composer.start(
        &store,
        &OwnerScope::Tenantless,
        init_moment(&rid("r1"), &graph, t(0)),
    ))
    .expect("start");
    assert_eq!(composer.observer_failures(), 1);
    assert!(recorder.seen().is_empty());
    let stored = futures::executor::block_on(store.fetch_run(&Scope::System, &started.run.id))
        .expect("fetch");
    assert_eq!(stored, started.run);
}

#[tokio::test]
async fn clones_of_a_composer_share_observers_and_failure_counts() {
    let (store, graph) = store_with_graph().await;
    let composer = Lifecycle::new().with_observer(Arc::new(Failing));
    let clone = composer.clone();
    clone
        .start(
            &store,
            &OwnerScope::Tenantless,
            init_moment(&rid("r1"), &graph, t(0)),
        )
        .await
        .expect("start");
    assert!(eventually(DEADLINE, || composer.observer_failures() == 1).await);
}
