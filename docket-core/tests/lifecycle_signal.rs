//! Signals: fetch → pure mutation → unclaimed commit, with bounded re-evaluation on a lost race
//! only (`docs/runs-and-moments.md`, “Signals”; `docs/runs-and-moments.md`, “The lifecycle”;
//! scenarios 71–73 and 83 of `docs/scenarios.md`).

mod common;

use std::sync::Arc;

use common::scripted::Scripted;
use common::*;
use docket_core::lifecycle::{self, SignalError, Signalled, MAX_SIGNAL_ATTEMPTS};
use docket_core::memory::MemoryStore;
use docket_core::model::{OwnerScope, Run, RunStatus, Scope};
use docket_core::runtime::{Disposition, Mutation};
use docket_core::store::{Layered, Message, RunStore, StoreError, StoreErrorKind};

async fn scripted_with_run() -> (Layered<Scripted>, Run) {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    (Scripted::new(store), run)
}

fn advance(run: &Run) -> Result<Mutation, &'static str> {
    Ok(Mutation::Commit(Box::new(next_moment(
        run,
        RunStatus::Running,
        Disposition::Continue,
        t(50),
    ))))
}

// ---- 71 ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_retryable_infrastructure_failure_is_surfaced_without_an_automatic_retry() {
    let (store, run) = scripted_with_run().await;
    store.fail_next_unclaimed_commits([StoreError::retryable(Message("connection reset".into()))]);
    let before = store.inner.raw_snapshot();
    let error = lifecycle::signal(&store, &Scope::System, &run.id, advance)
        .await
        .expect_err("surfaced");
    assert!(
        error.as_store().is_some_and(StoreError::is_retryable),
        "{error}"
    );
    assert_eq!(
        (store.fetch_count(), store.unclaimed_commit_count()),
        (1, 1)
    );
    assert_eq!(store.inner.raw_snapshot(), before);
}

#[tokio::test]
async fn other_commit_errors_are_surfaced_at_once() {
    for error in [
        StoreError::Conflict,
        StoreError::ambiguous(Message("lost after send".into())),
        StoreError::permanent(Message("read only".into())),
        StoreError::invalid_transition("nope"),
    ] {
        let (store, run) = scripted_with_run().await;
        let kind = error.kind();
        store.fail_next_unclaimed_commits([error]);
        let got = lifecycle::signal(&store, &Scope::System, &run.id, advance)
            .await
            .expect_err("surfaced");
        assert_eq!(got.as_store().map(StoreError::kind), Some(kind));
        assert_eq!(
            (store.fetch_count(), store.unclaimed_commit_count()),
            (1, 1)
        );
    }
}

#[tokio::test]
async fn fetch_errors_are_surfaced_without_calling_the_mutation() {
    let (store, run) = scripted_with_run().await;
    let mut calls = 0;
    let error = lifecycle::signal(&store, &tenant_scope("other"), &run.id, |r| {
        calls += 1;
        advance(r)
    })
    .await
    .expect_err("concealed");
    assert_eq!(
        error.as_store().map(StoreError::kind),
        Some(StoreErrorKind::NotFound)
    );
    assert_eq!((calls, store.unclaimed_commit_count()), (0, 0));

    store.inner.corrupt_run(&run.id).expect("corrupt");
    let error = lifecycle::signal(&store, &Scope::System, &run.id, advance)
        .await
        .expect_err("corrupt");
    assert_eq!(
        error.as_store().map(StoreError::kind),
        Some(StoreErrorKind::Corrupt)
    );
    assert_eq!(store.unclaimed_commit_count(), 0);
}

// ---- 72 ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_stale_checkpoint_refetches_and_reevaluates_exactly_four_times_then_gives_up() {
    let (store, run) = scripted_with_run().await;
    store.fail_next_unclaimed_commits((0..10).map(|_| StoreError::StaleCheckpoint));
    let mut evaluations = 0;
    let error = lifecycle::signal(&store, &Scope::System, &run.id, |r| {
        evaluations += 1;
        advance(r)
    })
    .await
    .expect_err("gives up");
    assert_eq!(
        error.as_store().map(StoreError::kind),
        Some(StoreErrorKind::StaleCheckpoint)
    );
    assert_eq!(MAX_SIGNAL_ATTEMPTS, 4);
    assert_eq!(evaluations, 4);
    assert_eq!(
        (store.fetch_count(), store.unclaimed_commit_count()),
        (4, 4)
    );
}

#[tokio::test]
async fn real_lost_races_reevaluate_against_the_fresh_run_and_then_commit() {
    let (store, run) = scripted_with_run().await;
    store.race_next_fetches(3);
    let mut seen = Vec::new();
    let outcome = lifecycle::signal(&store, &Scope::System, &run.id, |r| {
        seen.push(r.checkpoint_seq);
        advance(r)
    })
    .await
    .expect("fourth round commits");
    assert_eq!(
        seen,
        vec![1, 2, 3, 4],
        "each round sees the run the race left behind"
    );
    assert_eq!(outcome.run().checkpoint_seq, 5);
    assert_eq!(
        (store.fetch_count(), store.unclaimed_commit_count()),
        (4, 4)
    );
}

#[tokio::test]
async fn four_real_lost_races_end_stale_with_only_the_competitors_committed() {
    let (store, run) = scripted_with_run().await;
    store.race_next_fetches(4);
    let error = lifecycle::signal(&store, &Scope::System, &run.id, advance)
        .await
        .expect_err("stale");
    assert_eq!(
        error.as_store().map(StoreError::kind),
        Some(StoreErrorKind::StaleCheckpoint)
    );
    let stored = store
        .inner
        .fetch_run(&Scope::System, &run.id)
        .await
        .expect("fetch");
    assert_eq!(
        stored.checkpoint_seq, 5,
        "four competing commits, none of ours"
    );
}

// ---- 73 ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_no_change_decision_publishes_nothing() {
    let (store, run) = scripted_with_run().await;
    let before = store.inner.raw_snapshot();
    let outcome = lifecycle::signal(&store, &Scope::System, &run.id, |r| {
        Ok::<_, &str>(Mutation::Unchanged(Box::new(r.clone())))
    })
    .await
    .expect("unchanged");
    assert_eq!(outcome, Signalled::Unchanged(Box::new(run.clone())));
    assert!(!outcome.is_committed());
    assert_eq!(outcome.into_run(), run);
    assert_eq!(store.unclaimed_commit_count(), 0);
    assert_eq!(store.inner.raw_snapshot(), before);
}

#[tokio::test]
async fn a_mutation_error_publishes_nothing() {
    let (store, run) = scripted_with_run().await;
    let before = store.inner.raw_snapshot();
    let error = lifecycle::signal(&store, &Scope::System, &run.id, |_| {
        Err::<Mutation, _>("invalid_input")
    })
    .await
    .expect_err("refused");
    assert!(matches!(error, SignalError::Mutation("invalid_input")));
    assert!(error.as_store().is_none());
    assert_eq!(
        (store.fetch_count(), store.unclaimed_commit_count()),
        (1, 0)
    );
    assert_eq!(store.inner.raw_snapshot(), before);
}

#[tokio::test]
async fn a_mutation_answering_for_another_run_is_refused_without_writing() {
    let (store, run) = scripted_with_run().await;
    let other = initialized_run(
        &rid("other"),
        &docket_core::model::GraphRef {
            graph_id: run.graph_id.clone(),
            graph_hash: run.graph_hash.clone(),
        },
        t(0),
    );
    let before = store.inner.raw_snapshot();
    let stray = other.clone();
    let error = lifecycle::signal(&store, &Scope::System, &run.id, move |_| advance(&stray))
        .await
        .expect_err("other run's moment");
    assert!(
        matches!(error, SignalError::InvalidMutation { .. }),
        "{error}"
    );
    let error = lifecycle::signal(&store, &Scope::System, &run.id, move |_| {
        Ok::<_, &str>(Mutation::Unchanged(Box::new(other.clone())))
    })
    .await
    .expect_err("other run");
    assert!(
        matches!(error, SignalError::InvalidMutation { .. }),
        "{error}"
    );
    assert_eq!(store.unclaimed_commit_count(), 0);
    assert_eq!(store.inner.raw_snapshot(), before);
}

// ---- cancellation semantics through the lifecycle (`docs/state-machines.md`, “Run status”) ------

#[tokio::test]
async fn cancelling_twice_commits_once_and_then_reports_the_cancelled_run_unchanged() {
    let (store, run) = scripted_with_run().await;
    let first = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        cancel_mutation(r, t(5))
    })
    .await
    .expect("cancel");
    assert!(first.is_committed());
    let before = store.inner.raw_snapshot();
    let second = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        cancel_mutation(r, t(6))
    })
    .await
    .expect("unchanged");
    assert_eq!(second, Signalled::Unchanged(Box::new(first.run().clone())));
    assert_eq!(store.inner.raw_snapshot(), before, "no sequence consumed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_cancellations_serialize_to_one_committed_checkpoint() {
    for _ in 0..25 {
        let (store, graph) = store_with_graph().await;
        let store = Arc::new(store);
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
        let tasks: Vec<_> = (0..4)
            .map(|i| {
                let store = Arc::clone(&store);
                let id = run.id.clone();
                tokio::spawn(async move {
                    lifecycle::signal(&*store, &Scope::Tenantless, &id, |r| {
                        cancel_mutation(r, t(10 + i))
                    })
                    .await
                })
            })
            .collect();
        let mut committed = 0;
        for task in tasks {
            let outcome = task.await.expect("task").expect("cancel never fails here");
            assert_eq!(outcome.run().status, RunStatus::Cancelled);
            committed += usize::from(outcome.is_committed());
        }
        assert_eq!(committed, 1);
        let stored = store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("fetch");
        assert_eq!(stored.checkpoint_seq, 2);
    }
}

#[tokio::test]
async fn cancelling_a_finished_run_is_refused_by_the_mutation() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let (proposal, events) = unclaimed(
        &run,
        RunStatus::Done,
        docket_core::store::ReleaseWake::Terminal,
        t(1),
    );
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("done");
    let before = store.raw_snapshot();
    let error = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        cancel_mutation(r, t(2))
    })
    .await
    .expect_err("inactive");
    assert!(matches!(error, SignalError::Mutation("inactive_run")));
    assert_eq!(store.raw_snapshot(), before);
}

#[tokio::test]
async fn signal_futures_are_send_so_they_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let store = MemoryStore::new();
    let id = rid("r1");
    let future = lifecycle::signal(&store, &Scope::System, &id, advance);
    assert_send(&future);
    let error = future.await.expect_err("no such run");
    assert_eq!(
        error.as_store().map(StoreError::kind),
        Some(StoreErrorKind::NotFound)
    );
}
