//! Retention passes (`docs/storage-contract.md`, “Retention”): events by age, terminal runs by age,
//! old unreferenced graphs.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{GraphVersionQuery, OwnerScope, Run, RunStatus, Scope};
use docket_core::store::{GraphStore, PrunePolicy, ReleaseWake, RunStore, StoreErrorKind};

fn prune_policy(now_ms: i64, events_ms: u64, runs_ms: u64, batch: u32) -> PrunePolicy {
    PrunePolicy {
        now: t(now_ms),
        event_retention_ms: events_ms,
        run_retention_ms: runs_ms,
        batch_size: NonZeroU32::new(batch).unwrap(),
    }
}

/// Finishes a fresh run: the document says `updated_at = at`, the events are persisted at
/// `persisted` (the caller's clock of the commit).
async fn finish(fx: &Fx, id: &str, at: i64, persisted: i64) -> Run {
    let run = fx.start(id, t(0)).await;
    let (done, events) = advance(&run, RunStatus::Done, t(at));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(done, ReleaseWake::Terminal, t(persisted)),
            events,
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn event_retention_is_strict_and_batched_oldest_first() {
    let fx = fx().await;
    fx.start("a", t(0)).await; // events at t(0)
    let b = fx.start("b", t(0)).await;
    let (next, events) = advance(&b, RunStatus::Running, t(10));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(10)),
            events,
        )
        .await
        .unwrap();
    // Cutoff exactly t(10): the event inserted at t(10) stays.
    let report = fx
        .store
        .prune(&prune_policy(110, 100, 1_000, 3))
        .await
        .unwrap();
    assert_eq!(report.events_deleted, 3, "batch size caps the deletions");
    let report = fx
        .store
        .prune(&prune_policy(110, 100, 1_000, 3))
        .await
        .unwrap();
    assert_eq!(report.events_deleted, 1);
    let report = fx
        .unchanged(fx.store.prune(&prune_policy(110, 100, 1_000, 3)))
        .await
        .unwrap();
    assert_eq!(report, Default::default());
    let latest = fx
        .store
        .fetch_latest_event(&Scope::System, &b.id)
        .await
        .unwrap();
    assert_eq!(latest.map(|e| e.seq), Some(3));
}

#[tokio::test]
async fn old_terminal_runs_go_with_their_events_and_live_runs_stay() {
    let fx = fx().await;
    finish(&fx, "old", 5, 900).await;
    finish(&fx, "recent", 500, 900).await;
    fx.start("live", t(0)).await;
    // Cutoffs: events persisted before t(400) (the three runs' init events), terminal runs
    // last updated before t(400) ("old", whose final event persisted at t(900) cascades).
    let report = fx
        .store
        .prune(&prune_policy(1_000, 600, 600, 10))
        .await
        .unwrap();
    assert_eq!(report.events_deleted, 6);
    assert_eq!(report.runs_deleted, 1);
    assert_eq!(report.cascade_events_deleted, 1);
    let error = fx
        .store
        .fetch_run(&Scope::System, &rid("old"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    assert!(fx
        .store
        .fetch_run(&Scope::System, &rid("recent"))
        .await
        .is_ok());
    assert!(fx
        .store
        .fetch_run(&Scope::System, &rid("live"))
        .await
        .is_ok());
    assert!(
        !fx.snapshot().contains("run_id=\"old\""),
        "no orphan events remain"
    );
}

#[tokio::test]
async fn only_unreferenced_graph_versions_beyond_the_newest_ten_are_pruned() {
    let fx = fx().await; // graph g, referenced below, published at t(0)
    fx.start("keeps-g", t(0)).await;
    let mut refs = Vec::new();
    for i in 0..13 {
        let doc = graph_doc("g", &format!("later {i}"));
        let graph = graph_ref_of(&doc);
        fx.store
            .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(10 + i))
            .await
            .unwrap();
        refs.push(graph);
    }
    // 14 versions: the 10 newest stay; of the 4 older ones the referenced original stays.
    let report = fx
        .store
        .prune(&prune_policy(1_000, 0, 0, 100))
        .await
        .unwrap();
    assert_eq!(report.graphs_deleted, 3);
    let page = fx
        .store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &fx.graph.graph_id,
            &GraphVersionQuery {
                limit: 100,
                before: None,
            },
        )
        .await
        .unwrap();
    let kept: Vec<_> = page.versions.iter().map(|v| v.graph_ref.clone()).collect();
    assert_eq!(kept.len(), 11);
    assert!(kept.contains(&fx.graph));
    for gone in &refs[..3] {
        assert!(!kept.contains(gone));
    }
}

#[tokio::test]
async fn event_retention_longer_than_run_retention_is_refused() {
    let fx = fx().await;
    let error = fx
        .rejected(fx.store.prune(&prune_policy(1_000, 600, 500, 10)))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
}
