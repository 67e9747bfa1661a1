//! Graph versions (`docs/storage-contract.md`, “Graph versions”; scenario 3 of
//! `docs/scenarios.md`): content addressing, idempotent saves, verified fetches and newest-first
//! keyset paging.

use docket_core::model::{GraphCursor, GraphId, GraphVersionQuery, MAX_PAGE_LIMIT};

use crate::cases::prelude::*;

fn gid(id: &str) -> GraphId {
    GraphId::new(id).expect("valid graph id")
}

/// Publishes versions 1..=n of graph `id` for `owner`, version `v` at `t(v)`.
async fn versions(env: &Env<'_>, owner: &OwnerScope, id: &str, n: u64) -> Vec<Published> {
    let mut out = Vec::new();
    for v in 1..=n {
        let graph = tiny_graph_version(owner, id, v);
        env.publish(&graph, t(v as i64)).await;
        out.push(graph);
    }
    out
}

/// Hashes of a page's versions, in page order.
fn hashes(page: &docket_core::model::GraphVersionPage) -> Vec<String> {
    page.versions
        .iter()
        .map(|v| v.graph_ref.graph_hash.to_string())
        .collect()
}

/// A saved graph fetches back exactly.
pub async fn a_saved_graph_fetches_back_exactly(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let doc = ok(
        env.store()
            .fetch_graph(&OwnerScope::Tenantless, &graph.graph_ref)
            .await,
        "fetch_graph",
    );
    assert_eq!(doc, graph.doc);
}

/// Saving identical content again is idempotent and keeps the first publication time.
pub async fn saving_identical_content_again_keeps_the_publication_time(env: &Env<'_>) {
    let graph = tiny_graph(&OwnerScope::Tenantless);
    env.publish(&graph, t(1)).await;
    env.unchanged(
        env.store()
            .save_graph(&graph.owner, &graph.graph_ref, &graph.doc, t(99)),
    )
    .await;
    let page = ok(
        env.store()
            .list_graph_versions(&graph.owner, &graph.graph_ref.graph_id, &version_query(10))
            .await,
        "list_graph_versions",
    );
    assert_eq!(page.versions.len(), 1);
    assert_eq!(page.versions[0].published_at, t(1));
}

/// Content that does not hash to its address is refused before anything is written.
pub async fn a_wrong_hash_is_refused_before_writing(env: &Env<'_>) {
    let graph = tiny_graph(&OwnerScope::Tenantless);
    let other = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    env.rejected(
        K::InvalidGraphHash,
        env.store()
            .save_graph(&graph.owner, &other.graph_ref, &graph.doc, t(1)),
    )
    .await;
    env.rejected(
        K::NotFound,
        env.store().fetch_graph(&graph.owner, &other.graph_ref),
    )
    .await;
}

/// A document whose id differs from its address is an invalid graph document.
pub async fn a_document_under_another_id_is_invalid(env: &Env<'_>) {
    let graph = tiny_graph(&OwnerScope::Tenantless);
    let mut address = graph.graph_ref.clone();
    address.graph_id = gid("other");
    env.rejected(
        K::InvalidGraphDocument,
        env.store()
            .save_graph(&graph.owner, &address, &graph.doc, t(1)),
    )
    .await;
}

/// Fetching a version nobody saved is not found (a forged hash reveals nothing).
pub async fn fetching_an_unsaved_version_is_not_found(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    let forged = tiny_graph_version(&OwnerScope::Tenantless, "g", 77);
    env.rejected(
        K::NotFound,
        env.store()
            .fetch_graph(&OwnerScope::Tenantless, &forged.graph_ref),
    )
    .await;
}

/// Versions list newest first by publication time.
pub async fn versions_list_newest_first(env: &Env<'_>) {
    let published = versions(env, &OwnerScope::Tenantless, "g", 3).await;
    let page = ok(
        env.store()
            .list_graph_versions(&OwnerScope::Tenantless, &gid("g"), &version_query(10))
            .await,
        "list_graph_versions",
    );
    let expected: Vec<String> = published
        .iter()
        .rev()
        .map(|g| g.graph_ref.graph_hash.to_string())
        .collect();
    assert_eq!(hashes(&page), expected);
    assert!(!page.has_more);
    let times: Vec<Timestamp> = page.versions.iter().map(|v| v.published_at).collect();
    assert_eq!(times, [t(3), t(2), t(1)]);
}

/// Limit-1 pages walk the versions with an exclusive cursor and an exact `has_more`.
pub async fn version_pages_use_an_exclusive_cursor(env: &Env<'_>) {
    let published = versions(env, &OwnerScope::Tenantless, "g", 3).await;
    let mut before: Option<GraphCursor> = None;
    let mut seen = Vec::new();
    for round in 0..3 {
        let query = GraphVersionQuery {
            limit: 1,
            before: before.clone(),
        };
        let page = ok(
            env.store()
                .list_graph_versions(&OwnerScope::Tenantless, &gid("g"), &query)
                .await,
            "list_graph_versions",
        );
        assert_eq!(page.versions.len(), 1);
        assert_eq!(page.has_more, round < 2, "has_more on page {round}");
        seen.extend(hashes(&page));
        before = page.next_before;
    }
    let expected: Vec<String> = published
        .iter()
        .rev()
        .map(|g| g.graph_ref.graph_hash.to_string())
        .collect();
    assert_eq!(seen, expected);
    let last = GraphVersionQuery {
        limit: 1,
        before: before.clone(),
    };
    let empty = ok(
        env.store()
            .list_graph_versions(&OwnerScope::Tenantless, &gid("g"), &last)
            .await,
        "list_graph_versions",
    );
    assert!(empty.versions.is_empty() && !empty.has_more);
    assert_eq!(empty.next_before, before, "an empty page keeps the cursor");
}

/// Versions published at the same instant order by hash, descending.
pub async fn versions_published_together_order_by_hash_descending(env: &Env<'_>) {
    let mut published = Vec::new();
    for v in 1..=3 {
        let graph = tiny_graph_version(&OwnerScope::Tenantless, "g", v);
        env.publish(&graph, t(5)).await;
        published.push(graph.graph_ref.graph_hash.to_string());
    }
    published.sort();
    published.reverse();
    let page = ok(
        env.store()
            .list_graph_versions(&OwnerScope::Tenantless, &gid("g"), &version_query(10))
            .await,
        "list_graph_versions",
    );
    assert_eq!(hashes(&page), published);
    let latest = ok(
        env.store()
            .fetch_latest_graph_ref(&OwnerScope::Tenantless, &gid("g"))
            .await,
        "fetch_latest_graph_ref",
    );
    assert_eq!(latest.graph_hash.to_string(), published[0]);
}

/// The latest ref is the head of the version list, and re-saving an old version does not
/// make it the latest.
pub async fn the_latest_ref_is_the_newest_and_resaving_does_not_reorder(env: &Env<'_>) {
    let published = versions(env, &OwnerScope::Tenantless, "g", 3).await;
    env.publish(&published[0], t(50)).await;
    let latest = ok(
        env.store()
            .fetch_latest_graph_ref(&OwnerScope::Tenantless, &gid("g"))
            .await,
        "fetch_latest_graph_ref",
    );
    assert_eq!(latest, published[2].graph_ref);
    let page = ok(
        env.store()
            .list_graph_versions(&OwnerScope::Tenantless, &gid("g"), &version_query(10))
            .await,
        "list_graph_versions",
    );
    assert_eq!(page.versions.last().map(|v| v.published_at), Some(t(1)));
}

/// The latest ref of a graph id nobody published is not found.
pub async fn the_latest_ref_of_an_unknown_graph_is_not_found(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    env.rejected(
        K::NotFound,
        env.store()
            .fetch_latest_graph_ref(&OwnerScope::Tenantless, &gid("nobody")),
    )
    .await;
}

/// Listing an unknown graph id is an empty page, not an error.
pub async fn listing_an_unknown_graph_is_an_empty_page(env: &Env<'_>) {
    let page = env
        .unchanged(env.store().list_graph_versions(
            &OwnerScope::Tenantless,
            &gid("nobody"),
            &version_query(10),
        ))
        .await;
    assert!(page.versions.is_empty() && !page.has_more && page.next_before.is_none());
}

/// Version limits outside `1..=MAX_PAGE_LIMIT` are invalid arguments; the maximum is fine.
pub async fn version_limits_are_validated(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        env.rejected(
            K::InvalidArgument,
            env.store().list_graph_versions(
                &OwnerScope::Tenantless,
                &gid("g"),
                &version_query(limit),
            ),
        )
        .await;
    }
    let page = ok(
        env.store()
            .list_graph_versions(
                &OwnerScope::Tenantless,
                &gid("g"),
                &version_query(MAX_PAGE_LIMIT),
            )
            .await,
        "list_graph_versions",
    );
    assert_eq!(page.versions.len(), 1);
}

/// Versions of different graph ids never mix.
pub async fn graph_ids_keep_separate_version_lists(env: &Env<'_>) {
    versions(env, &OwnerScope::Tenantless, "g", 2).await;
    versions(env, &OwnerScope::Tenantless, "h", 1).await;
    for (id, n) in [("g", 2), ("h", 1)] {
        let page = ok(
            env.store()
                .list_graph_versions(&OwnerScope::Tenantless, &gid(id), &version_query(10))
                .await,
            "list_graph_versions",
        );
        assert_eq!(page.versions.len(), n);
        assert!(page
            .versions
            .iter()
            .all(|v| v.graph_ref.graph_id == gid(id)));
    }
}

/// Every suite graph (nodes, policies, retry settings, interrupts) round-trips exactly.
pub async fn every_suite_graph_round_trips_exactly(env: &Env<'_>) {
    for kind in [
        SuiteGraph::Tiny,
        SuiteGraph::Linear,
        SuiteGraph::Retry,
        SuiteGraph::Ask,
        SuiteGraph::Fail,
    ] {
        let graph = env.publish_graph(&OwnerScope::Tenantless, kind).await;
        let doc = ok(
            env.store()
                .fetch_graph(&OwnerScope::Tenantless, &graph.graph_ref)
                .await,
            "fetch_graph",
        );
        assert_eq!(doc, graph.doc, "graph {}", kind.id());
    }
}

/// A store holding other bytes under an address refuses to take a document there: saving
/// the address's true content over a damaged version is a content conflict and changes
/// nothing (a corrupt version is never silently replaced or accepted as identical).
pub async fn saving_over_different_stored_content_is_a_content_conflict(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.corrupt_graph(&graph.owner, &graph.graph_ref).await;
    env.rejected(
        K::GraphContentConflict,
        env.store()
            .save_graph(&graph.owner, &graph.graph_ref, &graph.doc, t(5)),
    )
    .await;
    env.rejected(
        K::CorruptGraph,
        env.store().fetch_graph(&graph.owner, &graph.graph_ref),
    )
    .await;
}

/// Version listing and the latest ref match the graph id exactly: newer versions of `gg`
/// and `g2` never show up under `g`.
pub async fn version_reads_match_the_graph_id_exactly(env: &Env<'_>) {
    let g = versions(env, &OwnerScope::Tenantless, "g", 1).await;
    for (i, id) in ["gg", "g2"].into_iter().enumerate() {
        let other = tiny_graph_version(&OwnerScope::Tenantless, id, 1);
        env.publish(&other, t(100 + i as i64)).await;
    }
    let latest = ok(
        env.store()
            .fetch_latest_graph_ref(&OwnerScope::Tenantless, &gid("g"))
            .await,
        "fetch_latest_graph_ref",
    );
    assert_eq!(latest, g[0].graph_ref);
    let page = ok(
        env.store()
            .list_graph_versions(&OwnerScope::Tenantless, &gid("g"), &version_query(10))
            .await,
        "list_graph_versions",
    );
    assert_eq!(
        page.versions
            .iter()
            .map(|v| v.graph_ref.clone())
            .collect::<Vec<_>>(),
        [g[0].graph_ref.clone()]
    );
}
