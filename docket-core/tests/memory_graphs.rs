//! Graph versions on the memory store (`docs/storage-contract.md`, “Graph versions”; scenarios 2–3
//! of `docs/scenarios.md`).

mod common;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{
    GraphCursor, GraphHash, GraphId, GraphVersionQuery, OwnerScope, MAX_PAGE_LIMIT,
};
use docket_core::store::{GraphStore, StoreErrorKind};

fn versions_query(limit: u32, before: Option<GraphCursor>) -> GraphVersionQuery {
    GraphVersionQuery { limit, before }
}

fn gid(id: &str) -> GraphId {
    GraphId::new(id).expect("graph id")
}

#[tokio::test]
async fn saving_identical_content_again_is_idempotent_and_keeps_the_publication_time() {
    let store = MemoryStore::new();
    let graph = publish(&store, &OwnerScope::Tenantless, "g", 1, t(10)).await;
    let before = store.raw_snapshot();
    let doc = graph_doc("g", 1);
    store
        .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(99))
        .await
        .expect("re-save");
    assert_eq!(store.raw_snapshot(), before);
    let page = store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &gid("g"),
            &versions_query(10, None),
        )
        .await
        .expect("list");
    assert_eq!(page.versions[0].published_at, t(10));
}

#[tokio::test]
async fn a_saved_graph_fetches_back_exactly() {
    let store = MemoryStore::new();
    let graph = publish(&store, &OwnerScope::Tenantless, "g", 1, t(10)).await;
    let doc = store
        .fetch_graph(&OwnerScope::Tenantless, &graph)
        .await
        .expect("fetch");
    assert_eq!(doc, graph_doc("g", 1));
}

#[tokio::test]
async fn a_wrong_hash_or_a_mismatched_id_is_refused_before_writing() {
    let store = MemoryStore::new();
    let doc = graph_doc("g", 1);
    let mut wrong_hash = graph_ref_of(&doc);
    wrong_hash.graph_hash = graph_ref_of(&graph_doc("g", 2)).graph_hash;
    assert_rejected(
        &store,
        StoreErrorKind::InvalidGraphHash,
        store.save_graph(&OwnerScope::Tenantless, &wrong_hash, &doc, t(0)),
    )
    .await;
    let mut wrong_id = graph_ref_of(&doc);
    wrong_id.graph_id = gid("other");
    assert_rejected(
        &store,
        StoreErrorKind::InvalidGraphDocument,
        store.save_graph(&OwnerScope::Tenantless, &wrong_id, &doc, t(0)),
    )
    .await;
}

#[tokio::test]
async fn different_bytes_under_a_stored_address_are_a_content_conflict() {
    let store = MemoryStore::new();
    let graph = publish(&store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    // Damage the stored bytes so that the canonical re-encoding differs from them.
    store
        .corrupt_graph(&OwnerScope::Tenantless, &graph)
        .expect("corrupt");
    assert_rejected(
        &store,
        StoreErrorKind::GraphContentConflict,
        store.save_graph(&OwnerScope::Tenantless, &graph, &graph_doc("g", 1), t(1)),
    )
    .await;
}

#[tokio::test]
async fn a_corrupt_graph_is_corrupt_on_fetch_never_absent() {
    let store = MemoryStore::new();
    let graph = publish(&store, &tenant("a"), "g", 1, t(0)).await;
    store.corrupt_graph(&tenant("a"), &graph).expect("corrupt");
    let error = store
        .fetch_graph(&tenant("a"), &graph)
        .await
        .expect_err("corrupt");
    assert_eq!(error.kind(), StoreErrorKind::CorruptGraph);
    let other = store
        .fetch_graph(&tenant("b"), &graph)
        .await
        .expect_err("absent");
    assert_eq!(other.kind(), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn graphs_are_owner_scoped_and_each_owner_saves_its_own_copy() {
    let store = MemoryStore::new();
    let graph = publish(&store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    publish(&store, &tenant("a"), "g", 1, t(5)).await;
    for owner in [OwnerScope::Tenantless, tenant("a")] {
        store
            .fetch_graph(&owner, &graph)
            .await
            .expect("visible to its owners");
    }
    let hidden = store
        .fetch_graph(&tenant("b"), &graph)
        .await
        .expect_err("hidden");
    assert_eq!(hidden.kind(), StoreErrorKind::NotFound);
    let latest = store
        .fetch_latest_graph_ref(&tenant("b"), &gid("g"))
        .await
        .expect_err("none");
    assert_eq!(latest.kind(), StoreErrorKind::NotFound);
    let page = store
        .list_graph_versions(&tenant("b"), &gid("g"), &versions_query(10, None))
        .await
        .expect("empty page");
    assert!(page.versions.is_empty() && !page.has_more && page.next_before.is_none());
    publish(&store, &tenant("b"), "g", 1, t(9)).await;
    assert_eq!(
        store
            .fetch_latest_graph_ref(&tenant("b"), &gid("g"))
            .await
            .expect("latest"),
        graph
    );
}

#[tokio::test]
async fn versions_list_newest_first_and_page_with_an_exclusive_cursor() {
    let store = MemoryStore::new();
    let v1 = publish(&store, &OwnerScope::Tenantless, "g", 1, t(1)).await;
    let v2 = publish(&store, &OwnerScope::Tenantless, "g", 2, t(2)).await;
    let v3 = publish(&store, &OwnerScope::Tenantless, "g", 3, t(3)).await;
    publish(&store, &OwnerScope::Tenantless, "other", 1, t(4)).await;
    // Re-saving an old version does not reorder anything.
    publish(&store, &OwnerScope::Tenantless, "g", 1, t(50)).await;
    let latest = store
        .fetch_latest_graph_ref(&OwnerScope::Tenantless, &gid("g"))
        .await
        .expect("latest");
    assert_eq!(latest, v3);
    let mut cursor = None;
    let mut seen = Vec::new();
    for expected_more in [true, true, false] {
        let page = store
            .list_graph_versions(
                &OwnerScope::Tenantless,
                &gid("g"),
                &versions_query(1, cursor.clone()),
            )
            .await
            .expect("page");
        assert_eq!(page.versions.len(), 1);
        assert_eq!(page.has_more, expected_more);
        seen.push(page.versions[0].graph_ref.clone());
        cursor = page.next_before;
    }
    assert_eq!(seen, vec![v3, v2, v1]);
    let end = store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &gid("g"),
            &versions_query(1, cursor.clone()),
        )
        .await
        .expect("page");
    assert!(end.versions.is_empty() && !end.has_more);
    assert_eq!(end.next_before, cursor);
}

#[tokio::test]
async fn versions_published_at_the_same_instant_order_by_hash_descending() {
    let store = MemoryStore::new();
    let mut refs = Vec::new();
    for v in 1..=4 {
        refs.push(publish(&store, &OwnerScope::Tenantless, "g", v, t(7)).await);
    }
    refs.sort_by(|a, b| b.graph_hash.cmp(&a.graph_hash));
    let page = store
        .list_graph_versions(
            &OwnerScope::Tenantless,
            &gid("g"),
            &versions_query(10, None),
        )
        .await
        .expect("page");
    let listed: Vec<_> = page.versions.into_iter().map(|v| v.graph_ref).collect();
    assert_eq!(listed, refs);
    assert_eq!(
        store
            .fetch_latest_graph_ref(&OwnerScope::Tenantless, &gid("g"))
            .await
            .expect("latest"),
        refs[0]
    );
}

#[tokio::test]
async fn version_limits_are_validated() {
    let store = MemoryStore::new();
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        assert_rejected(
            &store,
            StoreErrorKind::InvalidArgument,
            store.list_graph_versions(
                &OwnerScope::Tenantless,
                &gid("g"),
                &versions_query(limit, None),
            ),
        )
        .await;
    }
}

#[tokio::test]
async fn a_forged_hash_is_simply_not_found() {
    let store = MemoryStore::new();
    let mut graph = publish(&store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    graph.graph_hash = GraphHash::new("a".repeat(64)).expect("hash");
    let error = store
        .fetch_graph(&OwnerScope::Tenantless, &graph)
        .await
        .expect_err("absent");
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
}
