//! Graph versions: content addresses, owner scopes, paging, corruption.

mod common;

use common::*;
use docket_core::model::GraphHash;
use docket_core::store::{GraphStore, StoreError, StoreErrorKind};
use docket_postgres::testing;

fn kind<T: std::fmt::Debug>(result: Result<T, StoreError>) -> StoreErrorKind {
    result.expect_err("expected an error").kind()
}

#[tokio::test]
async fn graph_versions_are_content_addressed_and_owner_scoped() {
    let (store, _guard) = open().await;
    let a = tenant("a");
    let doc = graph_doc("g1", 0);
    let graph = graph_ref_of(&doc);
    store
        .save_graph(&a, &graph, &doc, t(0))
        .await
        .expect("save");
    store
        .save_graph(&a, &graph, &doc, t(9))
        .await
        .expect("idempotent");
    let versions = store
        .list_graph_versions(
            &a,
            &graph.graph_id,
            &docket_core::model::GraphVersionQuery {
                limit: 10,
                before: None,
            },
        )
        .await
        .expect("list");
    assert_eq!(versions.versions.len(), 1);
    assert_eq!(
        versions.versions[0].published_at,
        t(0),
        "re-saving keeps the publication time"
    );
    assert_eq!(store.fetch_graph(&a, &graph).await.expect("fetch"), doc);
    assert_eq!(
        kind(store.fetch_graph(&tenant("b"), &graph).await),
        StoreErrorKind::NotFound
    );
    let mut wrong = graph.clone();
    wrong.graph_hash = GraphHash::new("a".repeat(64)).expect("hash");
    assert_eq!(
        kind(store.save_graph(&a, &wrong, &doc, t(1)).await),
        StoreErrorKind::InvalidGraphHash
    );
    let other = graph_doc("g2", 0);
    assert_eq!(
        kind(store.save_graph(&a, &graph, &other, t(1)).await),
        StoreErrorKind::InvalidGraphDocument
    );
    // Paging newest first by (published_at, hash), cursor preserved on the empty page.
    for rev in 1..=3 {
        let d = graph_doc("g1", rev);
        store
            .save_graph(
                &a,
                &graph_ref_of(&d),
                &d,
                t(i64::try_from(rev).expect("rev")),
            )
            .await
            .expect("save rev");
    }
    let latest = store
        .fetch_latest_graph_ref(&a, &graph.graph_id)
        .await
        .expect("latest");
    assert_eq!(latest, graph_ref_of(&graph_doc("g1", 3)));
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = store
            .list_graph_versions(
                &a,
                &graph.graph_id,
                &docket_core::model::GraphVersionQuery {
                    limit: 1,
                    before: before.clone(),
                },
            )
            .await
            .expect("page");
        if page.versions.is_empty() {
            assert_eq!(page.next_before, before);
            assert!(!page.has_more);
            break;
        }
        seen.extend(page.versions.iter().map(|v| v.published_at));
        before = page.next_before;
    }
    assert_eq!(seen, vec![t(3), t(2), t(1), t(0)]);
    // Corrupt bytes are loud, never absent.
    testing::corrupt_graph(&store, &a, &graph)
        .await
        .expect("corrupt");
    assert_eq!(
        kind(store.fetch_graph(&a, &graph).await),
        StoreErrorKind::CorruptGraph
    );
    assert_eq!(
        kind(store.save_graph(&a, &graph, &doc, t(5)).await),
        StoreErrorKind::GraphContentConflict
    );
}
