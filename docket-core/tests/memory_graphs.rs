//! Graph versions on the memory store (`docs/storage-contract.md`, “Graph versions”; scenarios 2–3
//! of `docs/scenarios.md`).

mod common;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{GraphCursor, GraphHash, GraphId, GraphVersionQuery, OwnerScope};
use docket_core::store::{GraphStore, StoreErrorKind};

fn versions_query(limit: u32, before: Option<GraphCursor>) -> GraphVersionQuery {
    GraphVersionQuery { limit, before }
}

fn gid(id: &str) -> GraphId {
    GraphId::new(id).expect("graph id")
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
