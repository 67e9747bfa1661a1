//! Retention passes (`docs/storage-contract.md`, “Retention”): events by age, terminal runs by age,
//! old unreferenced graphs.

mod common;

use std::num::NonZeroU32;

use common::*;
use docket_core::model::{RunStatus, Scope};
use docket_core::store::{PrunePolicy, ReleaseWake, RunStore};

fn prune_policy(now_ms: i64, events_ms: u64, runs_ms: u64, batch: u32) -> PrunePolicy {
    PrunePolicy {
        now: t(now_ms),
        event_retention_ms: events_ms,
        run_retention_ms: runs_ms,
        batch_size: NonZeroU32::new(batch).unwrap(),
    }
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
