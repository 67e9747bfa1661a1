//! Graph versions: idempotent saves, conflicts, verification, ordering and paging.

use docket_core::model::{GraphCursor, GraphId, GraphVersionQuery, OwnerScope};
use docket_core::store::{GraphStore, StoreErrorKind};

use crate::common::*;

#[tokio::test]
async fn saving_identical_content_again_keeps_the_publication_time() {
    let fx = open().await;
    let owner = tenant("acme");
    let doc = graph_doc("g", 0);
    let graph_ref = graph_ref_of(&doc);
    fx.store
        .save_graph(&owner, &graph_ref, &doc, t(1))
        .await
        .expect("save");
    fx.store
        .save_graph(&owner, &graph_ref, &doc, t(9))
        .await
        .expect("idempotent save");
    let page = fx
        .store
        .list_graph_versions(
            &owner,
            &graph_ref.graph_id,
            &GraphVersionQuery {
                limit: 10,
                before: None,
            },
        )
        .await
        .expect("list");
    assert_eq!(page.versions.len(), 1);
    assert_eq!(page.versions[0].published_at, t(1));
    assert_eq!(
        fx.store
            .fetch_graph(&owner, &graph_ref)
            .await
            .expect("fetch"),
        doc
    );
    // Owner scopes are separate address spaces.
    let hidden = fx
        .store
        .fetch_graph(&OwnerScope::Tenantless, &graph_ref)
        .await
        .expect_err("other owner");
    assert_eq!(hidden.kind(), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn versions_are_newest_first_by_time_then_hash_with_exact_keyset_pages() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let mut refs = Vec::new();
    for (variant, at) in [(0, 1), (1, 2), (2, 2), (3, 2), (4, 3)] {
        refs.push((
            t(at),
            publish_variant(&fx.store, &owner, "g", variant, t(at)).await,
        ));
    }
    let mut expected = refs.clone();
    expected.sort_by(|a, b| (b.0, &b.1.graph_hash).cmp(&(a.0, &a.1.graph_hash)));
    let gid = GraphId::new("g").expect("graph id");
    let latest = fx
        .store
        .fetch_latest_graph_ref(&owner, &gid)
        .await
        .expect("latest");
    assert_eq!(latest, expected[0].1);
    let mut seen = Vec::new();
    let mut before: Option<GraphCursor> = None;
    loop {
        let page = fx
            .store
            .list_graph_versions(
                &owner,
                &gid,
                &GraphVersionQuery {
                    limit: 2,
                    before: before.clone(),
                },
            )
            .await
            .expect("page");
        seen.extend(
            page.versions
                .iter()
                .map(|v| (v.published_at, v.graph_ref.clone())),
        );
        if !page.has_more {
            assert!(page.versions.len() <= 2);
            break;
        }
        before = page.next_before;
    }
    assert_eq!(seen, expected);
    let empty = fx
        .store
        .list_graph_versions(
            &owner,
            &GraphId::new("unknown").expect("id"),
            &GraphVersionQuery {
                limit: 5,
                before: None,
            },
        )
        .await
        .expect("unknown id");
    assert!(empty.versions.is_empty() && !empty.has_more && empty.next_before.is_none());
    let err = fx
        .store
        .fetch_latest_graph_ref(&owner, &GraphId::new("unknown").expect("id"))
        .await
        .expect_err("no versions");
    assert_eq!(err.kind(), StoreErrorKind::NotFound);
    let err = fx
        .store
        .list_graph_versions(
            &owner,
            &gid,
            &GraphVersionQuery {
                limit: 0,
                before: None,
            },
        )
        .await
        .expect_err("limit 0");
    assert_eq!(err.kind(), StoreErrorKind::InvalidArgument);
}

#[tokio::test]
async fn corrupt_graph_bytes_are_reported_never_absent() {
    let fx = open().await;
    let owner = tenant("acme");
    let graph_ref = publish(&fx.store, &owner, "g").await;
    let harness = docket_redis::testing::RedisHarness::from_env();
    docket_conformance::Harness::corrupt_graph(&harness, &fx.guard, &owner, &graph_ref)
        .await
        .expect("corrupt");
    let err = fx
        .store
        .fetch_graph(&owner, &graph_ref)
        .await
        .expect_err("corrupt");
    assert_eq!(err.kind(), StoreErrorKind::CorruptGraph);
}
