//! Retention: strict cutoffs, terminal runs only, cascades, graph versions beyond the newest
//! ten and unreferenced, bounded batches, and one pruner at a time.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{OwnerScope, Run, Timestamp};
use docket_core::store::{
    GraphStore, PrunePolicy, PruneReport, ReleaseWake, RunStore, StoreErrorKind,
};
use docket_postgres::testing;

fn prune_policy(batch: u32) -> PrunePolicy {
    PrunePolicy {
        now: t(1_000),
        event_retention_ms: 500,
        run_retention_ms: 800,
        batch_size: NonZeroU32::new(batch).expect("batch"),
    }
}

/// Finishes `run` with a document last updated at `updated`, committed (events persisted) at
/// `now`.
async fn finish(
    store: &docket_postgres::PostgresStore,
    run: &Run,
    updated: Timestamp,
    now: Timestamp,
) {
    let finished = done(run, updated);
    let events = vec![event(&finished, 2, updated, "done")];
    store
        .commit_unclaimed(
            &SYSTEM,
            1,
            unclaimed(finished, ReleaseWake::Terminal, now),
            events,
        )
        .await
        .expect("finish");
}

#[tokio::test]
async fn a_pass_prunes_old_events_old_terminal_runs_and_unreferenced_old_graphs() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let old_done = start(&store, &owner, "old_done", t(0)).await;
    let boundary_done = start(&store, &owner, "boundary_done", t(0)).await;
    let old_running = start(&store, &owner, "old_running", t(0)).await;
    finish(&store, &old_done, t(100), t(600)).await;
    finish(&store, &boundary_done, t(200), t(600)).await;
    let signal = next(&old_running, t(500));
    store
        .commit_unclaimed(
            &SYSTEM,
            1,
            unclaimed(signal.clone(), ReleaseWake::Immediate, t(500)),
            vec![event(&signal, 2, t(500), "at the cutoff")],
        )
        .await
        .expect("signal");
    // Eleven more revisions of g1 for the owner (rev 0 stays referenced), ten for tenant b.
    for rev in 1..=11 {
        let doc = graph_doc("g1", rev);
        store
            .save_graph(
                &owner,
                &graph_ref_of(&doc),
                &doc,
                t(i64::try_from(rev).expect("rev")),
            )
            .await
            .expect("save");
    }
    let b = tenant("b");
    for rev in 1..=10 {
        let doc = graph_doc("g1", rev);
        store
            .save_graph(&b, &graph_ref_of(&doc), &doc, t(0))
            .await
            .expect("save");
    }

    let report = store.prune(&prune_policy(100)).await.expect("prune");
    assert_eq!(
        report,
        PruneReport {
            events_deleted: 3,
            runs_deleted: 1,
            cascade_events_deleted: 1,
            graphs_deleted: 1,
            skipped_locked: false
        }
    );
    assert_eq!(
        store
            .fetch_run(&SYSTEM, &old_done.id)
            .await
            .expect_err("pruned")
            .kind(),
        StoreErrorKind::NotFound
    );
    store
        .fetch_run(&SYSTEM, &boundary_done.id)
        .await
        .expect("the exact boundary is kept");
    store
        .fetch_event(&SYSTEM, &old_running.id, 2)
        .await
        .expect("an event at the cutoff is kept");
    assert_eq!(
        store
            .fetch_event(&SYSTEM, &old_running.id, 1)
            .await
            .expect_err("pruned")
            .kind(),
        StoreErrorKind::NotFound
    );
    let pruned_rev = graph_ref_of(&graph_doc("g1", 1));
    assert_eq!(
        store
            .fetch_graph(&owner, &pruned_rev)
            .await
            .expect_err("pruned")
            .kind(),
        StoreErrorKind::NotFound
    );
    store
        .fetch_graph(&owner, &graph_ref_of(&graph_doc("g1", 0)))
        .await
        .expect("referenced versions stay");
    store
        .fetch_graph(&b, &pruned_rev)
        .await
        .expect("ranking is per owner scope");
    // Nothing is left to do.
    assert_eq!(
        store.prune(&prune_policy(100)).await.expect("prune"),
        PruneReport::default()
    );
}

#[tokio::test]
async fn batches_bound_each_category() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    for i in 0..3 {
        start(&store, &owner, &format!("r{i}"), t(0)).await;
    }
    let first = store.prune(&prune_policy(2)).await.expect("prune");
    assert_eq!(first.events_deleted, 2);
    let second = store.prune(&prune_policy(2)).await.expect("prune");
    assert_eq!(second.events_deleted, 1);
    let mut bad = prune_policy(2);
    bad.event_retention_ms = 900;
    assert_eq!(
        store.prune(&bad).await.expect_err("invalid").kind(),
        StoreErrorKind::InvalidArgument
    );
}

#[tokio::test]
async fn a_pass_skips_while_another_pruner_holds_the_lock() {
    let (store, guard) = open().await;
    start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let mut other = testing::pool(&store).begin().await.expect("begin");
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('docket:pruner:' || $1, 0))")
        .bind(guard.schema())
        .execute(&mut *other)
        .await
        .expect("lock");
    let before = snapshot(&store).await;
    let report = store.prune(&prune_policy(10)).await.expect("prune");
    assert_eq!(
        report,
        PruneReport {
            skipped_locked: true,
            ..PruneReport::default()
        }
    );
    assert_eq!(snapshot(&store).await, before);
    other.commit().await.expect("release the lock");
    assert_eq!(
        store
            .prune(&prune_policy(10))
            .await
            .expect("prune")
            .events_deleted,
        1
    );
}

/// Scenario 168 of `docs/scenarios.md`: a terminal run another session holds locked is skipped, not
/// waited for, and the rest of the pass still commits; the next pass takes it once it is free.
#[tokio::test]
async fn a_locked_old_run_is_skipped_and_pruned_by_a_later_pass() {
    let (store, guard) = open().await;
    let owner = OwnerScope::Tenantless;
    for id in ["held", "free"] {
        let run = start(&store, &owner, id, t(0)).await;
        finish(&store, &run, t(100), t(150)).await;
    }
    let mut other = testing::pool(&store).begin().await.expect("begin");
    sqlx::query(&format!(
        "SELECT 1 FROM {}.runs WHERE run_id = 'held' FOR UPDATE",
        guard.schema()
    ))
    .execute(&mut *other)
    .await
    .expect("lock");
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.prune(&prune_policy(10)),
    )
    .await
    .expect("the pass does not wait for the locked row")
    .expect("prune");
    assert_eq!(report.runs_deleted, 1, "{report:?}");
    assert!(store.fetch_run(&SYSTEM, &rid("held")).await.is_ok());
    assert_eq!(
        store
            .fetch_run(&SYSTEM, &rid("free"))
            .await
            .expect_err("pruned")
            .kind(),
        StoreErrorKind::NotFound
    );
    other.rollback().await.expect("release");
    let later = store.prune(&prune_policy(10)).await.expect("prune");
    assert_eq!(later.runs_deleted, 1, "{later:?}");
    assert_eq!(
        store
            .fetch_run(&SYSTEM, &rid("held"))
            .await
            .expect_err("pruned")
            .kind(),
        StoreErrorKind::NotFound
    );
}
