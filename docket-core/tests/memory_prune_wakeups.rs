//! Retention (`docs/storage-contract.md`, “Retention”) and wake hints (`docs/storage-contract.md`,
//! “Wake hints”) on the memory store.

mod common;

use std::num::NonZeroU32;
use std::time::Duration;

use futures::{FutureExt, StreamExt};

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::{
    AbandonMode, AbandonPolicy, ClaimedSchedule, PrunePolicy, ReleaseWake, RunStore, Wakeups,
};

fn prune_policy(now_ms: i64, event_ms: u64, run_ms: u64, batch: u32) -> PrunePolicy {
    PrunePolicy {
        now: t(now_ms),
        event_retention_ms: event_ms,
        run_retention_ms: run_ms,
        batch_size: NonZeroU32::new(batch).expect("nonzero"),
    }
}

// ---- pruning -----------------------------------------------------------------------------

#[tokio::test]
async fn event_retention_is_strict_and_applies_to_any_status() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "live", t(1_000)).await;
    // Events inserted at exactly the cutoff stay.
    let at_cutoff =
        assert_no_change(&store, store.prune(&prune_policy(2_000, 1_000, 1_000, 10))).await;
    assert_eq!(at_cutoff.events_deleted, 0);
    let report = store
        .prune(&prune_policy(2_001, 1_000, 1_000, 10))
        .await
        .expect("prune");
    assert_eq!((report.events_deleted, report.runs_deleted), (2, 0));
    // The live run itself stays.
    store
        .fetch_run(&Scope::System, &run.id)
        .await
        .expect("run kept");
}

#[tokio::test]
async fn events_go_oldest_first_in_batches() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let (proposal, events) = unclaimed(&run, RunStatus::Running, ReleaseWake::Immediate, t(10));
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("commit");
    let report = store
        .prune(&prune_policy(100, 50, 50, 2))
        .await
        .expect("prune");
    assert_eq!(report.events_deleted, 2);
    let page = store
        .list_events(
            &Scope::System,
            &run.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("page");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![3]
    );
}

#[tokio::test]
async fn event_deletion_runs_before_run_deletion_in_one_pass() {
    let (store, graph) = store_with_graph().await;
    let done = start_run(&store, &OwnerScope::Tenantless, &graph, "done", t(0)).await;
    let (proposal, events) = unclaimed(&done, RunStatus::Done, ReleaseWake::Terminal, t(0));
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("done");
    let report = store
        .prune(&prune_policy(10_000, 100, 100, 10))
        .await
        .expect("prune");
    assert_eq!(
        (
            report.events_deleted,
            report.runs_deleted,
            report.cascade_events_deleted
        ),
        (3, 1, 0)
    );
}

#[tokio::test]
async fn graph_ranking_is_per_owner_and_graph_id() {
    let store = MemoryStore::new();
    for v in 1..=10 {
        publish(&store, &OwnerScope::Tenantless, "g", v, t(0)).await;
        publish(&store, &tenant("a"), "g", v, t(0)).await;
        publish(&store, &OwnerScope::Tenantless, "h", v, t(0)).await;
    }
    let report = assert_no_change(&store, store.prune(&prune_policy(1_000, 1, 1, 100))).await;
    assert_eq!(report.graphs_deleted, 0);
}

#[tokio::test]
async fn a_concurrent_pass_reports_skipped_locked_and_deletes_nothing() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let held = store.hold_prune_lock().expect("lock free");
    assert!(store.hold_prune_lock().is_none());
    let report = assert_no_change(&store, store.prune(&prune_policy(10_000, 1, 1, 10))).await;
    assert!(report.skipped_locked);
    assert_eq!(report.events_deleted, 0);
    drop(held);
    let report = store
        .prune(&prune_policy(10_000, 1, 1, 10))
        .await
        .expect("prune");
    assert!(!report.skipped_locked);
    assert_eq!(report.events_deleted, 2);
}

// ---- wakeups -----------------------------------------------------------------------------

fn pending(hints: &mut Wakeups) -> usize {
    let mut n = 0;
    while let Some(Some(())) = hints.next().now_or_never() {
        n += 1;
    }
    n
}

async fn one_hint(hints: &mut Wakeups) {
    tokio::time::timeout(Duration::from_secs(5), hints.next())
        .await
        .expect("a hint within the deadline")
        .expect("the stream is open");
}

#[tokio::test]
async fn a_due_initialize_sends_a_hint_and_a_future_one_stays_silent() {
    let (store, graph) = store_with_graph().await;
    let mut hints = store.wakeups().expect("wakeups");
    start_run(&store, &OwnerScope::Tenantless, &graph, "due", t(0)).await;
    one_hint(&mut hints).await;
    let run = initialized_run(&rid("later"), &graph, t(0));
    let events = init_events(&run, t(0));
    store
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(run, t(5_000), t(0)),
            events,
        )
        .await
        .expect("initialize");
    assert_eq!(pending(&mut hints), 0);
}

#[tokio::test]
async fn commits_hint_only_for_due_wakes() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut hints = store.wakeups().expect("wakeups");
    let lease = claim_one(&store, t(0)).await;
    let mut current = run;
    let schedules = [
        (ClaimedSchedule::RetainClaim, 0),
        (ClaimedSchedule::Release(ReleaseWake::At(t(100))), 0),
    ];
    for (schedule, expected) in schedules {
        let (proposal, events) = claimed(
            &current,
            RunStatus::Running,
            &lease.claim_token,
            schedule,
            t(1),
        );
        current = store
            .commit_claimed(&Scope::System, proposal, events)
            .await
            .expect("commit");
        assert_eq!(pending(&mut hints), expected, "{schedule:?}");
    }
    // A timed wake that is already due at the commit's now.
    let (proposal, events) = unclaimed(&current, RunStatus::Running, ReleaseWake::At(t(2)), t(3));
    current = store
        .commit_unclaimed(&Scope::System, 3, proposal, events)
        .await
        .expect("commit");
    assert_eq!(pending(&mut hints), 1);
    let (proposal, events) = unclaimed(&current, RunStatus::Running, ReleaseWake::Immediate, t(4));
    current = store
        .commit_unclaimed(&Scope::System, 4, proposal, events)
        .await
        .expect("commit");
    assert_eq!(pending(&mut hints), 1);
    let (proposal, events) = unclaimed(&current, RunStatus::Waiting, ReleaseWake::External, t(5));
    store
        .commit_unclaimed(&Scope::System, 5, proposal, events)
        .await
        .expect("commit");
    assert_eq!(pending(&mut hints), 0);
}

#[tokio::test]
async fn release_abandon_and_claims_are_silent_but_poison_recovery_hints() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut hints = store.wakeups().expect("wakeups");
    let lease = claim_one(&store, t(0)).await;
    store
        .release_claim(&run.id, &lease.claim_token, t(1))
        .await
        .expect("release");
    let lease = claim_one(&store, t(1)).await;
    let policy = AbandonPolicy {
        expected_seq: 1,
        now: t(2),
        retry_at: t(2),
        max_claim_abandons: NonZeroU32::new(1).expect("nonzero"),
        mode: AbandonMode::Poisoning,
    };
    store
        .abandon_claim(&run.id, &lease.claim_token, &policy)
        .await
        .expect("abandon");
    let lease = claim_one(&store, t(2)).await;
    store
        .abandon_claim(&run.id, &lease.claim_token, &policy)
        .await
        .expect("poison");
    assert_eq!(pending(&mut hints), 0);
    store
        .retry_poisoned_run(&Scope::System, &run.id, t(3))
        .await
        .expect("recover");
    assert_eq!(pending(&mut hints), 1);
    // Retrying a healthy run changes nothing and says nothing.
    store
        .retry_poisoned_run(&Scope::System, &run.id, t(4))
        .await
        .expect("no-op");
    assert_eq!(pending(&mut hints), 0);
}

#[tokio::test]
async fn rejected_writes_send_no_hint_and_every_subscriber_gets_its_own() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut first = store.wakeups().expect("wakeups");
    let mut second = store.wakeups().expect("wakeups");
    let (proposal, events) = unclaimed(&run, RunStatus::Running, ReleaseWake::Immediate, t(1));
    let stale = store
        .commit_unclaimed(&Scope::System, 0, proposal.clone(), events.clone())
        .await;
    assert!(stale.is_err());
    assert_eq!((pending(&mut first), pending(&mut second)), (0, 0));
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("commit");
    assert_eq!((pending(&mut first), pending(&mut second)), (1, 1));
}

#[tokio::test]
async fn a_lagging_subscriber_still_learns_that_something_is_due() {
    let (store, graph) = store_with_graph().await;
    let mut hints = store.wakeups().expect("wakeups");
    for i in 0..200 {
        start_run(
            &store,
            &OwnerScope::Tenantless,
            &graph,
            &format!("r{i}"),
            t(0),
        )
        .await;
    }
    assert!(pending(&mut hints) >= 1);
}

#[tokio::test]
async fn the_hint_stream_ends_when_the_store_is_dropped() {
    let store = MemoryStore::new();
    let mut hints = store.wakeups().expect("wakeups");
    drop(store);
    let end = tokio::time::timeout(Duration::from_secs(5), hints.next())
        .await
        .expect("resolves");
    assert!(end.is_none());
}
