//! Reads: scope concealment, run listing with keyset cursors, event pages with gaps, and
//! corruption reported as such.

mod common;

use common::*;
use docket_core::model::{CheckpointType, OwnerScope, RunCursor, RunQuery, RunStatus};
use docket_core::store::{InitProposal, RunStore, StoreErrorKind};

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
