//! The conformance `Harness` implementation: isolation, snapshots and corruption helpers, used
//! exactly as the shared suite will use them (through the trait and `Arc<dyn Backend>`).

mod common;

use std::sync::Arc;

use common::*;
use docket_conformance::Harness;
use docket_core::model::{OwnerScope, Scope};
use docket_core::store::{Backend, StoreErrorKind};
use docket_sqlite::testing::{SqliteGuard, SqliteHarness};

/// A harness store holding graph `g` and the due run `r1`.
async fn seeded(harness: &SqliteHarness) -> (Arc<dyn Backend>, SqliteGuard) {
    let (backend, guard) = harness.open().await.unwrap();
    let doc = graph_doc("g", "v1");
    let graph = graph_ref_of(&doc);
    backend
        .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(0))
        .await
        .unwrap();
    let run = initial_run("r1", &graph, t(0));
    backend
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(&run, t(0), t(0)),
            init_events(&run),
        )
        .await
        .unwrap();
    (backend, guard)
}

#[tokio::test]
async fn each_case_gets_an_empty_isolated_store_that_its_guard_removes() {
    let harness = SqliteHarness::default();
    assert!(harness.capabilities().wakeups);
    let (_first, first_guard) = seeded(&harness).await;
    let (second, second_guard) = harness.open().await.unwrap();
    assert_ne!(first_guard.path(), second_guard.path());
    let error = second
        .fetch_run(&Scope::System, &rid("r1"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    let dir = first_guard.path().parent().unwrap().to_path_buf();
    drop(first_guard);
    assert!(!dir.exists());
}

#[tokio::test]
async fn snapshots_are_deterministic_and_see_every_write() {
    let harness = SqliteHarness::default();
    let (backend, guard) = seeded(&harness).await;
    let first = harness.raw_snapshot(&guard).await.unwrap();
    assert_eq!(first, harness.raw_snapshot(&guard).await.unwrap());
    let version = format!("user_version={}", docket_sqlite::SCHEMA_VERSION);
    for table in [
        "[docket_events]",
        "[docket_graph_versions]",
        "[docket_ops_operations]",
        "[docket_ops_owners]",
        "[docket_runs]",
        version.as_str(),
    ] {
        assert!(first.contains(table), "{table} missing from the snapshot");
    }
    backend
        .release_claim(&rid("r1"), &docket_core::model::ClaimToken::mint(), t(1))
        .await
        .unwrap();
    assert_eq!(
        first,
        harness.raw_snapshot(&guard).await.unwrap(),
        "a no-op stays a no-op"
    );
    claim_one_via(&backend).await;
    assert_ne!(first, harness.raw_snapshot(&guard).await.unwrap());
}

async fn claim_one_via(backend: &Arc<dyn Backend>) {
    let batch = backend.claim_due(&policy(t(1), 1)).await.unwrap();
    assert_eq!(batch.leases.len(), 1);
}

#[tokio::test]
async fn the_corruption_helpers_make_the_store_report_corruption() {
    let harness = SqliteHarness::default();
    let (backend, guard) = seeded(&harness).await;
    let graph = graph_ref_of(&graph_doc("g", "v1"));
    harness.corrupt_event(&guard, &rid("r1"), 1).await.unwrap();
    let error = backend
        .fetch_event(&Scope::System, &rid("r1"), 1)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    harness.corrupt_run(&guard, &rid("r1")).await.unwrap();
    let error = backend
        .fetch_run(&Scope::System, &rid("r1"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    harness
        .corrupt_graph(&guard, &OwnerScope::Tenantless, &graph)
        .await
        .unwrap();
    let error = backend
        .fetch_graph(&OwnerScope::Tenantless, &graph)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::CorruptGraph);
    // Helpers refuse to "corrupt" what does not exist instead of silently doing nothing.
    assert!(harness.corrupt_run(&guard, &rid("ghost")).await.is_err());
    assert!(harness.corrupt_event(&guard, &rid("r1"), 99).await.is_err());
}
