//! The operation registry on SQLite beyond the shared suite: the migration from a version-1
//! file, configurable retention, and single-winner transitions between two store values (two
//! writer connections) on one file.

mod common;

use std::sync::Arc;

use common::*;
use docket_core::model::Scope;
use docket_core::ops::rules::Retention;
use docket_core::ops::{
    OperationId, OperationKind, OperationResult, OperationSpec, OperationStatus, OpsError,
    OpsLifecycleRegistry, SessionId,
};
use docket_core::store::RunStore;
use docket_sqlite::testing::{execute_sql, SqliteGuard};
use docket_sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION};

// Built through the parsers so the test needs no uuid dependency of its own.
fn owner(n: u128) -> SessionId {
    format!("5e550000-0000-4000-8000-{n:012x}")
        .parse()
        .expect("a valid session id")
}

fn op(n: u128) -> OperationId {
    format!("0b000000-0000-4000-8000-{:012x}", n + 1)
        .parse()
        .expect("a valid operation id")
}

fn spec(n: u128) -> OperationSpec {
    OperationSpec::new(op(n), OperationKind::BackgroundToolOp, format!("op-{n}"))
}

#[tokio::test]
async fn a_version_one_database_gains_the_registry_and_keeps_its_runs() {
    let fx = fx().await;
    let run = initial_run("r1", &fx.graph, t(1));
    fx.store
        .initialize(
            &docket_core::model::OwnerScope::Tenantless,
            init_proposal(&run, t(1), t(1)),
            init_events(&run),
        )
        .await
        .expect("a run before the downgrade");
    let path = fx.guard.path().to_path_buf();
    drop(fx.store);
    // What a version-1 file looks like: neither the registry's tables (version 2) nor the
    // tenant-fair column, index and tables (version 3) exist yet.
    execute_sql(
        &path,
        "DROP TABLE docket_ops_operations; DROP TABLE docket_ops_owners; \
         DROP INDEX docket_runs_ready_by_owner; DROP INDEX docket_runs_claimed_by_owner; \
         DROP TABLE docket_tenant_shares; \
         DROP TABLE docket_claim_cursor; ALTER TABLE docket_runs DROP COLUMN admitted_at; \
         PRAGMA user_version = 1;",
    )
    .expect("turn the file back into version 1");
    let store = SqliteStore::open(SqliteOptions::new(&path))
        .await
        .expect("open and migrate");
    assert_eq!(
        store
            .effective_settings()
            .await
            .expect("settings")
            .schema_version,
        SCHEMA_VERSION
    );
    let kept = store
        .fetch_run(&Scope::System, &run.id)
        .await
        .expect("the run survived the migration");
    assert_eq!(kept, run);
    assert_eq!(store.tenant_shares().await.expect("shares"), Vec::new());
    let fair = docket_core::store::ClaimRequest {
        policy: docket_core::store::ClaimPolicy::TenantFair,
        now: t(5),
        limit: std::num::NonZeroU32::MIN,
        orphan_ttl_ms: 60_000,
        max_claim_attempts: std::num::NonZeroU32::MIN,
        preference: None,
    };
    let batch = store
        .claim_due(&fair)
        .await
        .expect("a fair claim after migrating");
    assert_eq!(batch.leases.len(), 1);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.admitted_at, Some(t(5)));
    let record = store
        .register_operation(&owner(1), &spec(1), None, t(2))
        .await
        .expect("the registry works after the migration");
    assert_eq!(record.status, OperationStatus::Provisioning);
}

#[tokio::test]
async fn retention_is_configurable_per_store() {
    let guard = SqliteGuard::new().expect("temp dir");
    let options =
        SqliteOptions::default().with_ops_retention(Retention::new(3).expect("a valid retention"));
    let store = SqliteStore::open(options.with_path(guard.path()))
        .await
        .expect("open");
    for n in 0..5 {
        store
            .register_operation(&owner(1), &spec(n), None, t(1))
            .await
            .expect("register");
        let ended = store
            .abort_provisioning(&owner(1), &op(n), None, t(2))
            .await
            .expect("abort");
        assert_eq!(ended.completion_seq.map(|s| s.get()), Some(n as u64 + 1));
    }
    for n in 0..5 {
        let kept = store
            .operation_snapshot(&owner(1), &op(n))
            .await
            .expect("read")
            .is_some();
        assert_eq!(kept, n >= 2, "operation {n}");
    }
    let url = format!("sqlite://{}?ops_retention=1", guard.path().display());
    let narrow = SqliteStore::connect(&url).await.expect("connect");
    assert_eq!(narrow.options().ops_retention.max_terminal(), 1);
}

/// Two store values are two writer connections: the file's write lock, not a thread, keeps
/// the transitions apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn endings_from_two_store_values_on_one_file_have_one_winner() {
    let guard = SqliteGuard::new().expect("temp dir");
    let first = Arc::new(
        SqliteStore::open(SqliteOptions::new(guard.path()))
            .await
            .expect("open"),
    );
    let second = Arc::new(
        SqliteStore::open(SqliteOptions::new(guard.path()))
            .await
            .expect("open again"),
    );
    for round in 0..10 {
        let (who, id) = (owner(round), op(round));
        first
            .register_operation(&who, &spec(round), None, t(1))
            .await
            .expect("register");
        first
            .provisioning_succeeded(&who, &id, t(2))
            .await
            .expect("start");
        let tasks: Vec<_> = (0..16)
            .map(|writer| {
                let store = if writer % 2 == 0 {
                    Arc::clone(&first)
                } else {
                    Arc::clone(&second)
                };
                tokio::spawn(async move {
                    store
                        .complete_operation(
                            &who,
                            &id,
                            OperationResult::new(format!("{writer}")),
                            t(3),
                        )
                        .await
                })
            })
            .collect();
        let mut wins = 0;
        for task in tasks {
            match task.await.expect("task") {
                Ok(_) => wins += 1,
                Err(OpsError::InvalidTransition {
                    status: OperationStatus::Completed,
                    ..
                }) => {}
                Err(other) => panic!("round {round}: {other}"),
            }
        }
        assert_eq!(wins, 1, "round {round}");
        let stored = second
            .operation_snapshot(&who, &id)
            .await
            .expect("read")
            .expect("present");
        assert_eq!(stored.completion_seq.map(|s| s.get()), Some(1));
    }
}
