//! Retention: events by age, terminal runs with their events, unreferenced old graph versions.

use std::num::NonZeroU32;

use docket_core::model::{EventQuery, OwnerScope, RunStatus, Scope, Timestamp};
use docket_core::store::{
    ClaimedSchedule, GraphStore, PrunePolicy, ReleaseWake, RunStore, StoreErrorKind,
};

use crate::common::*;

fn prune_policy(now: Timestamp, event_ms: u64, run_ms: u64, batch: u32) -> PrunePolicy {
    PrunePolicy {
        now,
        event_retention_ms: event_ms,
        run_retention_ms: run_ms,
        batch_size: NonZeroU32::new(batch).expect("batch"),
    }
}

#[tokio::test]
async fn events_older_than_the_cutoff_go_first_and_the_cutoff_is_strict() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(10),
    )
    .await;
    // Event 1 was inserted at t(0), event 2 at t(10). Cutoff t(0) itself keeps both.
    let none = fx
        .store
        .prune(&prune_policy(t(100), 100, 1_000, 10))
        .await
        .expect("prune");
    assert_eq!(none.events_deleted, 0);
    let one = fx
        .store
        .prune(&prune_policy(t(101), 100, 1_000, 10))
        .await
        .expect("prune");
    assert_eq!(one.events_deleted, 1);
    let page = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("events");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![2]
    );
    assert_eq!((page.oldest_available_seq, page.latest_seq), (Some(2), 2));
    let gone = fx
        .store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .expect_err("pruned");
    assert_eq!(gone.kind(), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn terminal_runs_are_deleted_in_batches_with_their_events_and_live_runs_stay() {
    let fx = open().await;
    let owner = tenant("acme");
    let graph = publish(&fx.store, &owner, "g").await;
    for i in 0..3 {
        let run = start(&fx.store, &owner, &format!("done{i}"), &graph, t(0)).await;
        let lease = claim_one(&fx.store, t(1)).await;
        commit_as_holder(
            &fx.store,
            &run,
            &lease.claim_token,
            RunStatus::Done,
            ClaimedSchedule::Release(ReleaseWake::Terminal),
            t(2 + i),
        )
        .await;
    }
    let live = start(&fx.store, &owner, "live", &graph, t(1_000_000)).await;
    // Events go by age first (oldest first, at most 2), then runs (at most 2) with whatever
    // events they still have. Inserted: done0..2 and live at t(0), done_i's commit at t(2+i).
    let first = fx
        .store
        .prune(&prune_policy(t(1_000), 500, 500, 2))
        .await
        .expect("prune");
    let counts = |r: docket_core::store::PruneReport| {
        (r.events_deleted, r.runs_deleted, r.cascade_events_deleted)
    };
    // done0#1, done1#1 by age; done0 and done1 with their seq-2 events.
    assert_eq!(counts(first), (2, 2, 2));
    let second = fx
        .store
        .prune(&prune_policy(t(1_000), 500, 500, 2))
        .await
        .expect("prune");
    // done2#1 and live#1 by age (any status); done2 with done2#2.
    assert_eq!(counts(second), (2, 1, 1));
    for i in 0..3 {
        let err = fx
            .store
            .fetch_run(&Scope::System, &rid(&format!("done{i}")))
            .await
            .expect_err("pruned");
        assert_eq!(err.kind(), StoreErrorKind::NotFound);
    }
    assert_eq!(
        fx.store
            .fetch_run(&Scope::System, &live.id)
            .await
            .expect("live"),
        live
    );
    let snapshot = fx.snapshot().await;
    assert!(!snapshot.contains("done"), "leftovers:\n{snapshot}");
}

#[tokio::test]
async fn ties_in_event_age_break_by_run_id_then_seq() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    // "a" < "a!" as ids, although ':' (a key separator) sorts after '!'.
    start_simple(&fx.store, &owner, "a!").await;
    start_simple(&fx.store, &owner, "a").await;
    let report = fx
        .store
        .prune(&prune_policy(t(100), 10, 10, 1))
        .await
        .expect("prune");
    assert_eq!(report.events_deleted, 1);
    let gone = fx
        .store
        .fetch_event(&Scope::System, &rid("a"), 1)
        .await
        .expect_err("oldest by (inserted_at, run_id)");
    assert_eq!(gone.kind(), StoreErrorKind::NotFound);
    assert!(fx
        .store
        .fetch_event(&Scope::System, &rid("a!"), 1)
        .await
        .is_ok());
}

#[tokio::test]
async fn graph_versions_go_oldest_first_then_by_owner_graph_and_hash() {
    let fx = open().await;
    let tenantless = OwnerScope::Tenantless;
    let acme = tenant("acme");
    let mut oldest = Vec::new();
    for (owner, id) in [(&acme, "g"), (&tenantless, "h")] {
        for v in 0..11 {
            let r = publish_variant(&fx.store, owner, id, v, t(v as i64)).await;
            if v == 0 {
                oldest.push((owner.clone(), r));
            }
        }
    }
    let report = fx
        .store
        .prune(&prune_policy(t(100), 1, 1, 1))
        .await
        .expect("prune");
    assert_eq!(report.graphs_deleted, 1);
    // Both oldest versions are prunable and tie on time: tenantless goes before any tenant.
    let (acme_owner, acme_ref) = &oldest[0];
    let (tl_owner, tl_ref) = &oldest[1];
    assert!(fx.store.fetch_graph(acme_owner, acme_ref).await.is_ok());
    let err = fx
        .store
        .fetch_graph(tl_owner, tl_ref)
        .await
        .expect_err("pruned");
    assert_eq!(err.kind(), StoreErrorKind::NotFound);
    let report = fx
        .store
        .prune(&prune_policy(t(100), 1, 1, 5))
        .await
        .expect("prune");
    assert_eq!(report.graphs_deleted, 1);
    assert!(fx.store.fetch_graph(acme_owner, acme_ref).await.is_err());
}
