//! Event reads: single events, the newest, and pages with gaps and retained bounds.

mod common;

use common::*;
use docket_core::model::{EventQuery, EventType, Run, RunStatus, Scope};
use docket_core::store::{PrunePolicy, ReleaseWake, RunStore, StoreErrorKind};

/// Run `r1` with events 1, 2 (init), 3 and then a gap to 7, 8.
async fn with_gap(fx: &Fx) -> Run {
    let run = fx.start("r1", t(0)).await;
    let (next, events) = advance(&run, RunStatus::Running, t(1));
    let run = fx
        .store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(1)),
            events,
        )
        .await
        .unwrap();
    let (mut next, _) = advance(&run, RunStatus::Running, t(2));
    next.event_seq = 8;
    let events = vec![
        event(&next, 7, EventType::NodeCompleted, t(2)),
        event(&next, 8, EventType::CheckpointCommitted, t(2)),
    ];
    fx.store
        .commit_unclaimed(
            &Scope::System,
            2,
            unclaimed(next, ReleaseWake::Immediate, t(2)),
            events,
        )
        .await
        .unwrap()
}

fn seqs(page: &docket_core::model::EventPage) -> Vec<u64> {
    page.events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn pages_walk_the_events_in_order_across_gaps() {
    let fx = fx().await;
    let run = with_gap(&fx).await;
    let first = fx
        .store
        .list_events(
            &Scope::Tenantless,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(seqs(&first), vec![1, 2]);
    assert_eq!((first.next_after_seq, first.has_more), (2, true));
    assert_eq!(
        (first.oldest_available_seq, first.latest_available_seq),
        (Some(1), Some(8))
    );
    assert_eq!(first.latest_seq, 8);
    let second = fx
        .store
        .list_events(
            &Scope::Tenantless,
            &run.id,
            &EventQuery {
                after_seq: 2,
                limit: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(seqs(&second), vec![3, 7]);
    let third = fx
        .store
        .list_events(
            &Scope::Tenantless,
            &run.id,
            &EventQuery {
                after_seq: 7,
                limit: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(seqs(&third), vec![8]);
    assert_eq!((third.next_after_seq, third.has_more), (8, false));
    let past = fx
        .store
        .list_events(
            &Scope::Tenantless,
            &run.id,
            &EventQuery {
                after_seq: u64::MAX,
                limit: 2,
            },
        )
        .await
        .unwrap();
    assert!(past.events.is_empty());
    assert_eq!(past.next_after_seq, u64::MAX);
}

#[tokio::test]
async fn single_event_reads_distinguish_absent_seqs() {
    let fx = fx().await;
    let run = with_gap(&fx).await;
    let seven = fx
        .store
        .fetch_event(&Scope::Tenantless, &run.id, 7)
        .await
        .unwrap();
    assert_eq!(seven.event_type, EventType::NodeCompleted);
    for seq in [4, 9, u64::MAX] {
        let error = fx
            .store
            .fetch_event(&Scope::Tenantless, &run.id, seq)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::NotFound, "seq {seq}");
    }
    let latest = fx
        .store
        .fetch_latest_event(&Scope::Tenantless, &run.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.seq, 8);
}

#[tokio::test]
async fn unknown_runs_and_bad_limits_are_refused() {
    let fx = fx().await;
    let error = fx
        .store
        .list_events(
            &Scope::System,
            &rid("ghost"),
            &EventQuery {
                after_seq: 0,
                limit: 5,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    let error = fx
        .store
        .fetch_latest_event(&Scope::System, &rid("ghost"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    let run = fx.start("r1", t(0)).await;
    for limit in [0, 1001] {
        let error = fx
            .store
            .list_events(
                &Scope::System,
                &run.id,
                &EventQuery {
                    after_seq: 0,
                    limit,
                },
            )
            .await
            .unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
    }
}

#[tokio::test]
async fn pruned_events_leave_bounds_that_say_so() {
    let fx = fx().await;
    let run = with_gap(&fx).await;
    // Events 1..3 were inserted at t(0)/t(1), 7..8 at t(2); keep the ones from t(2) on.
    let report = fx
        .store
        .prune(&PrunePolicy {
            now: t(1_002),
            event_retention_ms: 1_000,
            run_retention_ms: 1_000_000,
            batch_size: std::num::NonZeroU32::new(100).unwrap(),
        })
        .await
        .unwrap();
    assert_eq!(report.events_deleted, 3);
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
        .unwrap();
    assert_eq!(seqs(&page), vec![7, 8]);
    assert_eq!(
        (page.oldest_available_seq, page.latest_available_seq),
        (Some(7), Some(8))
    );
    let error = fx
        .store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn a_fully_pruned_run_reports_no_retained_events() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    fx.store
        .prune(&PrunePolicy {
            now: t(10),
            event_retention_ms: 1,
            run_retention_ms: 1,
            batch_size: std::num::NonZeroU32::new(100).unwrap(),
        })
        .await
        .unwrap();
    assert_eq!(
        fx.store
            .fetch_latest_event(&Scope::System, &run.id)
            .await
            .unwrap(),
        None
    );
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
        .unwrap();
    assert!(page.events.is_empty());
    assert_eq!(
        (
            page.oldest_available_seq,
            page.latest_available_seq,
            page.latest_seq
        ),
        (None, None, 2)
    );
    assert!(!page.has_more);
}
