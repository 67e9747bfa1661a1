//! Graph versions: idempotent saves, content conflicts, hash checks, verified fetches, order.

mod common;

use common::*;
use docket_core::model::{GraphHash, GraphId, GraphVersionQuery, OwnerScope};
use docket_core::store::{GraphStore, StoreErrorKind};
use docket_sqlite::testing::{corrupt_graph, execute_sql};

#[tokio::test]
async fn a_saved_graph_fetches_back_equal() {
    let fx = fx().await;
    let fetched = fx
        .store
        .fetch_graph(&OwnerScope::Tenantless, &fx.graph)
        .await
        .unwrap();
    assert_eq!(fetched, fx.doc);
}

#[tokio::test]
async fn saving_identical_content_again_keeps_the_publication_time() {
    let fx = fx().await;
    let before = fx.snapshot();
    fx.store
        .save_graph(&OwnerScope::Tenantless, &fx.graph, &fx.doc, t(999))
        .await
        .unwrap();
    assert_eq!(before, fx.snapshot());
    let page = fx
        .store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &fx.graph.graph_id,
            &GraphVersionQuery {
                limit: 10,
                before: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.versions.len(), 1);
    assert_eq!(page.versions[0].published_at, t(0));
}

#[tokio::test]
async fn different_stored_bytes_under_the_address_are_a_content_conflict() {
    let fx = fx().await;
    // Bytes that are valid JSON but not what this content encodes to.
    execute_sql(
        fx.guard.path(),
        "UPDATE docket_graph_versions SET graph = CAST('{\"id\":\"g\"}' AS BLOB)",
    )
    .unwrap();
    let error = fx
        .rejected(
            fx.store
                .save_graph(&OwnerScope::Tenantless, &fx.graph, &fx.doc, t(5)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::GraphContentConflict);
}

#[tokio::test]
async fn a_wrong_hash_or_a_foreign_id_is_refused_before_writing() {
    let fx = fx().await;
    let other = graph_doc("g", "v2");
    let error = fx
        .rejected(
            fx.store
                .save_graph(&OwnerScope::Tenantless, &fx.graph, &other, t(5)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::InvalidGraphHash);
    let foreign = graph_doc("h", "v1");
    let error = fx
        .rejected(
            fx.store
                .save_graph(&OwnerScope::Tenantless, &fx.graph, &foreign, t(5)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::InvalidGraphDocument);
}

#[tokio::test]
async fn corrupt_stored_bytes_are_corrupt_graph_never_absent() {
    let fx = fx().await;
    corrupt_graph(fx.guard.path(), &OwnerScope::Tenantless, &fx.graph).unwrap();
    let error = fx
        .store
        .fetch_graph(&OwnerScope::Tenantless, &fx.graph)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::CorruptGraph);
    // A corrupt version is never silently replaced by a re-save.
    let error = fx
        .rejected(
            fx.store
                .save_graph(&OwnerScope::Tenantless, &fx.graph, &fx.doc, t(5)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::GraphContentConflict);
}

#[tokio::test]
async fn a_corrupt_stored_hash_is_corrupt_graph_for_metadata_reads() {
    let fx = fx().await;
    execute_sql(
        fx.guard.path(),
        "UPDATE docket_graph_versions SET graph_hash = 'bad' || char(1)",
    )
    .unwrap();
    let error = fx
        .store
        .fetch_latest_graph_ref(&OwnerScope::Tenantless, &fx.graph.graph_id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::CorruptGraph);
}

/// Saves versions v0..n of graph `p` at the given publication times.
async fn versions(fx: &Fx, times: &[i64]) -> Vec<GraphHash> {
    let mut hashes = Vec::new();
    for (i, at) in times.iter().enumerate() {
        let doc = graph_doc("p", &format!("v{i}"));
        let graph = graph_ref_of(&doc);
        fx.store
            .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(*at))
            .await
            .unwrap();
        hashes.push(graph.graph_hash);
    }
    hashes
}

#[tokio::test]
async fn the_latest_version_is_newest_by_publication_then_hash() {
    let fx = fx().await;
    let hashes = versions(&fx, &[10, 30, 30, 20]).await;
    let latest = fx
        .store
        .fetch_latest_graph_ref(&OwnerScope::Tenantless, &GraphId::new("p").unwrap())
        .await
        .unwrap();
    let expected = hashes[1].clone().max(hashes[2].clone());
    assert_eq!(latest.graph_hash, expected);
}

#[tokio::test]
async fn versions_page_newest_first_with_an_exclusive_cursor() {
    let fx = fx().await;
    let hashes = versions(&fx, &[10, 20, 30, 40, 50]).await;
    let id = GraphId::new("p").unwrap();
    let mut query = GraphVersionQuery {
        limit: 2,
        before: None,
    };
    let mut seen = Vec::new();
    let mut more = Vec::new();
    loop {
        let page = fx
            .store
            .list_graph_versions(&OwnerScope::Tenantless, &id, &query)
            .await
            .unwrap();
        seen.extend(page.versions.iter().map(|v| v.graph_ref.graph_hash.clone()));
        more.push(page.has_more);
        if !page.has_more {
            break;
        }
        query.before = page.next_before;
    }
    let mut expected = hashes.clone();
    expected.reverse();
    assert_eq!(seen, expected);
    assert_eq!(more, vec![true, true, false]);
}

#[tokio::test]
async fn an_unknown_graph_lists_empty_and_bad_limits_are_refused() {
    let fx = fx().await;
    let id = GraphId::new("nope").unwrap();
    let page = fx
        .store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &id,
            &GraphVersionQuery {
                limit: 5,
                before: None,
            },
        )
        .await
        .unwrap();
    assert!(page.versions.is_empty() && !page.has_more && page.next_before.is_none());
    for limit in [0, 1001] {
        let error = fx
            .store
            .list_graph_versions(
                &OwnerScope::Tenantless,
                &id,
                &GraphVersionQuery {
                    limit,
                    before: None,
                },
            )
            .await
            .unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::InvalidArgument);
    }
}
