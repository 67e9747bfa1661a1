//! Reads: scope concealment, run listing with keyset cursors, event pages with gaps, and
//! corruption reported as such.

mod common;

use common::*;
use docket_core::model::{
    CheckpointType, EventQuery, OwnerScope, RunCursor, RunQuery, RunStatus, Scope,
};
use docket_core::store::{ClaimedSchedule, InitProposal, ReleaseWake, RunStore, StoreErrorKind};
use docket_postgres::testing;

#[tokio::test]
async fn other_tenants_and_unknown_ids_are_indistinguishable() {
    let (store, _guard) = open().await;
    let a = tenant("a");
    let run = start(&store, &a, "r1", t(0)).await;
    start(&store, &OwnerScope::Tenantless, "r2", t(0)).await;
    for scope in [Scope::from(&a), Scope::System] {
        assert_eq!(
            store.fetch_run(&scope, &run.id).await.expect("visible"),
            run
        );
        store
            .fetch_event(&scope, &run.id, 1)
            .await
            .expect("visible event");
    }
    for scope in [Scope::from(&tenant("b")), Scope::Tenantless] {
        for id in [run.id.clone(), rid("unknown")] {
            assert_eq!(
                store
                    .fetch_run(&scope, &id)
                    .await
                    .expect_err("hidden")
                    .kind(),
                StoreErrorKind::NotFound
            );
            assert_eq!(
                store
                    .inspect_run(&scope, &id)
                    .await
                    .expect_err("hidden")
                    .kind(),
                StoreErrorKind::NotFound
            );
            assert_eq!(
                store
                    .fetch_event(&scope, &id, 1)
                    .await
                    .expect_err("hidden")
                    .kind(),
                StoreErrorKind::NotFound
            );
            assert_eq!(
                store
                    .fetch_latest_event(&scope, &id)
                    .await
                    .expect_err("hidden")
                    .kind(),
                StoreErrorKind::NotFound
            );
            let page = store
                .list_events(
                    &scope,
                    &id,
                    &EventQuery {
                        after_seq: 0,
                        limit: 5,
                    },
                )
                .await;
            assert_eq!(page.expect_err("hidden").kind(), StoreErrorKind::NotFound);
        }
    }
    let tenantless = store
        .list_runs(
            &Scope::Tenantless,
            &RunQuery {
                limit: 10,
                ..RunQuery::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(
        tenantless
            .runs
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        vec!["r2"]
    );
}

#[tokio::test]
async fn run_pages_are_newest_first_with_ties_broken_by_id_in_byte_order() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = save_graph(&store, &owner).await;
    // "B" < "a" in byte order but not in most natural-language collations.
    for (id, started) in [("a", 10), ("B", 10), ("c", 5), ("d", 20)] {
        let run = initialized_run(id, &graph, t(started));
        store
            .initialize(
                &owner,
                InitProposal {
                    run,
                    checkpoint_type: CheckpointType::RunInitialized,
                    wake_at: t(0),
                    now: t(0),
                },
                vec![],
            )
            .await
            .expect("init");
    }
    let mut order = Vec::new();
    let mut before: Option<RunCursor> = None;
    loop {
        let page = store
            .list_runs(
                &SYSTEM,
                &RunQuery {
                    limit: 1,
                    before: before.clone(),
                    ..RunQuery::default()
                },
            )
            .await
            .expect("page");
        if page.runs.is_empty() {
            assert_eq!(page.next_before, before, "an empty page keeps the cursor");
            assert!(!page.has_more);
            break;
        }
        assert_eq!(page.has_more, order.len() < 3);
        order.push(page.runs[0].id.as_str().to_owned());
        before = page.next_before;
    }
    assert_eq!(order, vec!["d", "a", "B", "c"]);
    let filtered = store
        .list_runs(
            &SYSTEM,
            &RunQuery {
                limit: 10,
                statuses: Some(vec![RunStatus::Waiting]),
                ..RunQuery::default()
            },
        )
        .await
        .expect("filter");
    assert!(filtered.runs.is_empty());
    let by_graph = store
        .list_runs(
            &SYSTEM,
            &RunQuery {
                limit: 10,
                graph_id: Some(graph.graph_id.clone()),
                graph_hash: Some(graph.graph_hash.clone()),
                statuses: Some(vec![RunStatus::Running]),
                before: None,
            },
        )
        .await
        .expect("filter");
    assert_eq!(by_graph.runs.len(), 4);
    for bad in [
        RunQuery {
            limit: 0,
            ..RunQuery::default()
        },
        RunQuery {
            limit: 5,
            statuses: Some(vec![]),
            ..RunQuery::default()
        },
    ] {
        assert_eq!(
            store
                .list_runs(&SYSTEM, &bad)
                .await
                .expect_err("invalid")
                .kind(),
            StoreErrorKind::InvalidArgument
        );
    }
}

#[tokio::test]
async fn event_pages_report_gaps_bounds_and_fully_pruned_runs() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let mut second = next(&run, t(2));
    second.event_seq = 4;
    let events = vec![
        event(&second, 3, t(2), "three"),
        event(&second, 4, t(2), "four"),
    ];
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                second.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
                t(2),
            ),
            events.clone(),
        )
        .await
        .expect("commit");
    let latest = store
        .fetch_latest_event(&SYSTEM, &run.id)
        .await
        .expect("latest");
    assert_eq!(latest, Some(events[1].clone()));
    let page = store
        .list_events(
            &SYSTEM,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 1,
            },
        )
        .await
        .expect("page");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!((page.next_after_seq, page.has_more), (1, true));
    assert_eq!(
        (
            page.oldest_available_seq,
            page.latest_available_seq,
            page.latest_seq
        ),
        (Some(1), Some(4), 4)
    );
    let page = store
        .list_events(
            &SYSTEM,
            &run.id,
            &EventQuery {
                after_seq: 1,
                limit: 5,
            },
        )
        .await
        .expect("page");
    assert_eq!(page.events, events);
    assert!(!page.has_more);
    assert_eq!(
        store
            .fetch_event(&SYSTEM, &run.id, 2)
            .await
            .expect_err("gap")
            .kind(),
        StoreErrorKind::NotFound
    );
    assert_eq!(
        store
            .fetch_event(&SYSTEM, &run.id, u64::MAX)
            .await
            .expect_err("absent")
            .kind(),
        StoreErrorKind::NotFound
    );

    // A run whose events are all gone: no latest event, empty page, latest_seq kept.
    let graph = save_graph(&store, &owner).await;
    let mut bare = initialized_run("bare", &graph, t(0));
    bare.event_seq = 4;
    store
        .initialize(
            &owner,
            InitProposal {
                run: bare.clone(),
                checkpoint_type: CheckpointType::RunInitialized,
                wake_at: t(0),
                now: t(0),
            },
            vec![],
        )
        .await
        .expect("init");
    assert_eq!(
        store
            .fetch_latest_event(&SYSTEM, &bare.id)
            .await
            .expect("latest"),
        None
    );
    let page = store
        .list_events(
            &SYSTEM,
            &bare.id,
            &EventQuery {
                after_seq: 0,
                limit: 5,
            },
        )
        .await
        .expect("page");
    assert!(page.events.is_empty());
    assert_eq!(
        (
            page.oldest_available_seq,
            page.latest_available_seq,
            page.latest_seq,
            page.next_after_seq
        ),
        (None, None, 4, 0)
    );
    assert_eq!(
        store
            .list_events(
                &SYSTEM,
                &bare.id,
                &EventQuery {
                    after_seq: 0,
                    limit: 0
                }
            )
            .await
            .expect_err("limit")
            .kind(),
        StoreErrorKind::InvalidArgument
    );
}

#[tokio::test]
async fn corrupt_rows_are_reported_as_corrupt_never_as_absent() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start(&store, &owner, "r1", t(0)).await;
    let healthy = start(&store, &owner, "r2", t(0)).await;
    testing::corrupt_event(&store, &run.id, 1)
        .await
        .expect("corrupt event");
    assert_eq!(
        store
            .fetch_event(&SYSTEM, &run.id, 1)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    assert_eq!(
        store
            .fetch_latest_event(&SYSTEM, &run.id)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    assert_eq!(
        store
            .list_events(
                &SYSTEM,
                &run.id,
                &EventQuery {
                    after_seq: 0,
                    limit: 5
                }
            )
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    testing::corrupt_run(&store, &run.id)
        .await
        .expect("corrupt run");
    assert_eq!(
        store
            .fetch_run(&SYSTEM, &run.id)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    assert_eq!(
        store
            .inspect_run(&SYSTEM, &run.id)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    // Transitions compare columns only: a stale signal is stale and writes nothing, and one
    // whose fence matches replaces the undecodable document, which then reads again.
    let before = snapshot(&store).await;
    let mut behind = run.clone();
    behind.updated_at = Some(t(1));
    let result = store
        .commit_unclaimed(
            &SYSTEM,
            run.checkpoint_seq - 1,
            unclaimed(behind, ReleaseWake::Immediate, t(1)),
            vec![],
        )
        .await;
    assert_eq!(
        result.expect_err("stale").kind(),
        StoreErrorKind::StaleCheckpoint
    );
    assert_eq!(snapshot(&store).await, before);
    let replaced = store
        .commit_unclaimed(
            &SYSTEM,
            run.checkpoint_seq,
            unclaimed(next(&run, t(1)), ReleaseWake::Immediate, t(1)),
            vec![],
        )
        .await
        .expect("a fenced commit replaces the corrupt document");
    assert_eq!(
        store.fetch_run(&SYSTEM, &run.id).await.expect("readable"),
        replaced
    );
    // Other runs are unaffected; listing never decodes documents.
    assert_eq!(
        store
            .fetch_run(&SYSTEM, &healthy.id)
            .await
            .expect("healthy"),
        healthy
    );
    let all = store
        .list_runs(
            &SYSTEM,
            &RunQuery {
                limit: 10,
                ..RunQuery::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(all.runs.len(), 2);
}
