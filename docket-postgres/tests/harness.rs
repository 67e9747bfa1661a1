//! The conformance harness itself: isolated schemas, snapshots, corruption helpers and
//! cleanup, used only through the `Harness` trait.

mod common;

use common::*;
use docket_conformance::Harness;
use docket_core::model::{OwnerScope, Scope};
use docket_core::store::StoreErrorKind;
use docket_postgres::testing::{test_url, PostgresHarness};
use sqlx::{Connection, PgConnection};

async fn schema_exists(name: &str) -> bool {
    let mut conn = PgConnection::connect(&test_url()).await.expect("server");
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
        .bind(name)
        .fetch_one(&mut conn)
        .await
        .expect("probe")
}

#[tokio::test]
async fn each_case_gets_an_isolated_schema_that_its_guard_drops() {
    let harness = PostgresHarness::new();
    assert!(harness.capabilities().wakeups);
    let (first, first_guard) = harness.open().await.expect("open");
    let (second, second_guard) = harness.open().await.expect("open");
    assert_ne!(first_guard.schema(), second_guard.schema());
    let owner = OwnerScope::Tenantless;
    let doc = graph_doc("g1", 0);
    let graph = graph_ref_of(&doc);
    first
        .save_graph(&owner, &graph, &doc, t(0))
        .await
        .expect("save");
    assert_eq!(
        second
            .fetch_graph(&owner, &graph)
            .await
            .expect_err("isolated")
            .kind(),
        StoreErrorKind::NotFound
    );
    let empty = harness.raw_snapshot(&second_guard).await.expect("snapshot");
    assert_ne!(
        harness.raw_snapshot(&first_guard).await.expect("snapshot"),
        empty
    );

    let names = [
        first_guard.schema().to_owned(),
        second_guard.schema().to_owned(),
    ];
    for name in &names {
        assert!(schema_exists(name).await);
    }
    // Guards queue their drops; the harness finishes them before it is gone.
    drop((first, first_guard, second, second_guard));
    drop(harness);
    for name in &names {
        assert!(!schema_exists(name).await, "the guard drops its schema");
    }
}

#[tokio::test]
async fn a_guard_that_outlives_its_harness_drops_its_schema_itself() {
    let (store, guard) = open().await;
    let name = guard.schema().to_owned();
    assert!(schema_exists(&name).await);
    drop(store);
    drop(guard);
    assert!(!schema_exists(&name).await, "the guard drops its schema");
}

#[tokio::test]
async fn an_unreachable_server_fails_naming_the_url_variable() {
    let error = PostgresHarness::new()
        .url("postgres://postgres@127.0.0.1:1/test")
        .open_store()
        .await
        .expect_err("nothing listens on port 1");
    assert_eq!(error.kind(), StoreErrorKind::Unavailable);
    assert!(
        error.to_string().contains("DOCKET_TEST_POSTGRES_URL"),
        "{error}"
    );
}

#[tokio::test]
async fn corruption_helpers_make_reads_report_corruption() {
    let harness = PostgresHarness::new();
    let (backend, guard) = harness.open().await.expect("open");
    let owner = OwnerScope::Tenantless;
    let doc = graph_doc("g1", 0);
    let graph = graph_ref_of(&doc);
    backend
        .save_graph(&owner, &graph, &doc, t(0))
        .await
        .expect("save");
    let run = initialized_run("r1", &graph, t(0));
    backend
        .initialize(
            &owner,
            docket_core::store::InitProposal {
                run: run.clone(),
                checkpoint_type: docket_core::model::CheckpointType::RunInitialized,
                wake_at: t(0),
                now: t(0),
            },
            vec![event(&run, 1, t(0), "init")],
        )
        .await
        .expect("init");
    harness
        .corrupt_event(&guard, &run.id, 1)
        .await
        .expect("corrupt event");
    assert_eq!(
        backend
            .fetch_event(&Scope::System, &run.id, 1)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    harness
        .corrupt_run(&guard, &run.id)
        .await
        .expect("corrupt run");
    assert_eq!(
        backend
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::Corrupt
    );
    harness
        .corrupt_graph(&guard, &owner, &graph)
        .await
        .expect("corrupt graph");
    assert_eq!(
        backend
            .fetch_graph(&owner, &graph)
            .await
            .expect_err("corrupt")
            .kind(),
        StoreErrorKind::CorruptGraph
    );
    assert_eq!(
        harness
            .corrupt_run(&guard, &rid("absent"))
            .await
            .expect_err("absent")
            .kind(),
        StoreErrorKind::NotFound
    );
}
