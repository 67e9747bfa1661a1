//! Run listings: newest first, keyset pages, filters in the store, scopes.

use docket_core::model::{GraphId, OwnerScope, RunCursor, RunQuery, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

use crate::common::*;

#[tokio::test]
async fn listings_are_newest_first_paged_filtered_and_scoped() {
    let fx = open().await;
    let a = tenant("a");
    let b = tenant("b");
    let ga = publish(&fx.store, &a, "g").await;
    let ha = publish(&fx.store, &a, "h").await;
    let gb = publish(&fx.store, &b, "g").await;
    // started_at comes from the document; ties break by run id descending.
    for (id, owner, graph, started) in [
        ("a1", &a, &ga, 1),
        ("a2", &a, &ha, 2),
        ("a3", &a, &ga, 2),
        ("a4", &a, &ga, 3),
        ("b1", &b, &gb, 2),
    ] {
        let mut run = initialized_run(id, graph, t(started));
        run.updated_at = Some(t(started));
        fx.store
            .initialize(owner, init_proposal(run, t(100), t(started)), vec![])
            .await
            .expect("initialize");
    }
    let ids = |page: &docket_core::model::RunPage| {
        page.runs
            .iter()
            .map(|r| r.id.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    let mut seen = Vec::new();
    let mut before: Option<RunCursor> = None;
    loop {
        let page = fx
            .store
            .list_runs(
                &scope_of(&a),
                &RunQuery {
                    limit: 2,
                    before: before.clone(),
                    ..RunQuery::default()
                },
            )
            .await
            .expect("page");
        seen.extend(ids(&page));
        if !page.has_more {
            break;
        }
        before = page.next_before;
    }
    assert_eq!(seen, vec!["a4", "a3", "a2", "a1"]);
    let all = fx
        .store
        .list_runs(
            &Scope::System,
            &RunQuery {
                limit: 10,
                ..RunQuery::default()
            },
        )
        .await
        .expect("system");
    assert_eq!(ids(&all), vec!["a4", "b1", "a3", "a2", "a1"]);
    assert_eq!(all.runs[1].owner, b);
    let by_graph = fx
        .store
        .list_runs(
            &scope_of(&a),
            &RunQuery {
                limit: 10,
                graph_id: Some(GraphId::new("h").expect("id")),
                ..RunQuery::default()
            },
        )
        .await
        .expect("filter");
    assert_eq!(ids(&by_graph), vec!["a2"]);
    let none = fx
        .store
        .list_runs(
            &Scope::Tenantless,
            &RunQuery {
                limit: 10,
                ..RunQuery::default()
            },
        )
        .await
        .expect("tenantless");
    assert!(none.runs.is_empty() && !none.has_more && none.next_before.is_none());
    let cursor = RunCursor {
        started_at: t(2),
        run_id: rid("a3"),
    };
    let after_cursor = fx
        .store
        .list_runs(
            &scope_of(&a),
            &RunQuery {
                limit: 10,
                before: Some(cursor),
                ..RunQuery::default()
            },
        )
        .await
        .expect("cursor");
    assert_eq!(ids(&after_cursor), vec!["a2", "a1"]);
    let err = fx
        .store
        .list_runs(
            &Scope::System,
            &RunQuery {
                limit: 1001,
                ..RunQuery::default()
            },
        )
        .await
        .expect_err("limit");
    assert_eq!(err.kind(), StoreErrorKind::InvalidArgument);
}

#[tokio::test]
async fn status_filters_follow_commits() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start_simple(&fx.store, &owner, "r1").await;
    start_simple(&fx.store, &owner, "r2").await;
    let lease = claim_one(&fx.store, t(1)).await;
    assert_eq!(lease.run_id, run.id);
    commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(2),
    )
    .await;
    let done = fx
        .store
        .list_runs(
            &Scope::Tenantless,
            &RunQuery {
                limit: 10,
                statuses: Some(vec![RunStatus::Done, RunStatus::Failed]),
                ..RunQuery::default()
            },
        )
        .await
        .expect("done");
    assert_eq!(done.runs.len(), 1);
    assert_eq!(done.runs[0].id, run.id);
    assert_eq!(done.runs[0].checkpoint_seq, 2);
    assert_eq!(done.runs[0].finished_at, Some(t(2)));
}
