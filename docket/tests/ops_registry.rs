//! `docket::connect_backend` hands out stores that carry their operation registry: what a
//! session registers through one connection is there for the next one on the same URL.

use docket::connect_backend;
use docket_core::model::Timestamp;
use docket_core::ops::{OperationId, OperationKind, OperationSpec, OperationStatus, SessionId};

fn owner() -> SessionId {
    "5e550000-0000-4000-8000-000000000001"
        .parse()
        .expect("a valid session id")
}

#[tokio::test]
async fn a_memory_url_offers_the_registry() {
    let backend = connect_backend("memory://").await.expect("connect");
    assert!(backend.ops_registry().is_some());
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_sqlite_url_offers_a_durable_registry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("ops.db").display());
    let id = OperationId::for_detached_job_wait(&owner(), "realm-a", "job_123");
    let spec = OperationSpec::new(id, OperationKind::DetachedJobWait, "await job_123");
    {
        let backend = connect_backend(&url).await.expect("connect");
        let ops = backend
            .ops_registry()
            .expect("the sqlite store offers a registry");
        ops.register_operation(&owner(), &spec, None, Timestamp::from_millis(1))
            .await
            .expect("register");
        ops.provisioning_succeeded(&owner(), &id, Timestamp::from_millis(2))
            .await
            .expect("start");
    }
    let again = connect_backend(&url).await.expect("reconnect");
    let record = again
        .ops_registry()
        .expect("registry")
        .operation_snapshot(&owner(), &id)
        .await
        .expect("read")
        .expect("the registration and its start are durable");
    assert_eq!(record.status, OperationStatus::Running);
    assert_eq!(record.started_at, Some(Timestamp::from_millis(2)));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_url_offers_a_durable_registry() {
    let server = std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let sep = if server.contains('?') { '&' } else { '?' };
    let schema = format!("docket_t_facade_ops_{}", std::process::id());
    let url = format!("{server}{sep}schema={schema}");
    let id = OperationId::for_detached_job_wait(&owner(), "realm-a", "job_123");
    let spec = OperationSpec::new(id, OperationKind::DetachedJobWait, "await job_123");
    {
        let backend = connect_backend(&url).await.expect("connect");
        let ops = backend
            .ops_registry()
            .expect("the postgres store offers a registry");
        ops.register_operation(&owner(), &spec, None, Timestamp::from_millis(1))
            .await
            .expect("register");
        ops.provisioning_succeeded(&owner(), &id, Timestamp::from_millis(2))
            .await
            .expect("start");
    }
    let again = connect_backend(&url).await.expect("reconnect");
    let record = again
        .ops_registry()
        .expect("registry")
        .operation_snapshot(&owner(), &id)
        .await
        .expect("read");
    drop(again);
    docket_postgres::PostgresStore::drop_schema(&url)
        .await
        .expect("drop the test schema");
    let record = record.expect("the registration and its start are durable");
    assert_eq!(record.status, OperationStatus::Running);
    assert_eq!(record.started_at, Some(Timestamp::from_millis(2)));
}
