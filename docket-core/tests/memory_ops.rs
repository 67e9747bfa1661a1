//! The memory registry end to end through `dyn Backend`: a life from registration to
//! collection, and the completion watch woken by the store's hints. (Every backend, memory
//! included, runs the full registry families of the conformance suite; this is the smoke
//! test of the reference itself.)

use std::sync::Arc;
use std::time::Duration;

use docket_core::memory::MemoryStore;
use docket_core::model::Timestamp;
use docket_core::ops::{
    OperationId, OperationKind, OperationResult, OperationSource, OperationSpec, OperationStatus,
    OperationTerminalOutcome, OpsError, OpsLifecycleRegistry, SessionId,
};
use docket_core::store::Backend;
use uuid::Uuid;

fn owner() -> SessionId {
    SessionId::from_uuid(Uuid::from_u128(0x51))
}

#[tokio::test]
async fn a_detached_job_wait_lives_ends_and_is_collected() {
    let backend: Arc<dyn Backend> = Arc::new(MemoryStore::new());
    let ops = backend
        .ops_registry()
        .expect("the memory store offers a registry");
    let id = OperationId::for_detached_job_wait(&owner(), "realm-a", "job_123");
    let spec = OperationSpec::new(id, OperationKind::DetachedJobWait, "await job_123")
        .with_source(OperationSource::detached_job("realm-a", "job_123"));
    let t = Timestamp::from_millis;
    let registered = ops
        .register_operation(&owner(), &spec, Some(4), t(10))
        .await
        .expect("registered");
    assert_eq!(registered.status, OperationStatus::Provisioning);
    assert_eq!(registered.created_at, t(10));
    ops.provisioning_succeeded(&owner(), &id, t(20))
        .await
        .expect("started");
    let done = ops
        .complete_operation(&owner(), &id, OperationResult::new("ok"), t(30))
        .await
        .expect("completed");
    assert_eq!(done.completion_seq.map(|s| s.get()), Some(1));
    assert_eq!(done.elapsed_ms(), Some(20));
    let again = ops.register_operation(&owner(), &spec, None, t(40)).await;
    assert!(matches!(again, Err(OpsError::AlreadyRegistered { .. })));
    let drained = ops.collect_completed(&owner()).await.expect("collected");
    assert_eq!(drained.len(), 1);
    assert_eq!(
        ops.operation_snapshot(&owner(), &id).await.expect("read"),
        None
    );
    ops.register_operation(&owner(), &spec, None, t(50))
        .await
        .expect("a collected id may be registered again");
}

#[tokio::test]
async fn a_watch_resolves_when_another_task_ends_the_operation() {
    let store = Arc::new(MemoryStore::new());
    let id = OperationId::from_uuid(Uuid::from_u128(7));
    let spec = OperationSpec::new(id, OperationKind::BackgroundToolOp, "tool");
    let t = Timestamp::from_millis;
    let ops: &dyn OpsLifecycleRegistry = store.as_ref();
    ops.register_operation(&owner(), &spec, None, t(1))
        .await
        .expect("registered");
    let watcher = {
        let store = Arc::clone(&store);
        // A poll interval far beyond the test's patience: only the hint can wake it in time.
        tokio::spawn(async move {
            store
                .await_completion(&owner(), &id, Duration::from_secs(3_600))
                .await
        })
    };
    tokio::task::yield_now().await;
    ops.cancel_operation(&owner(), &id, Some("stop".into()), t(2))
        .await
        .expect("cancelled");
    let outcome = tokio::time::timeout(Duration::from_secs(30), watcher)
        .await
        .expect("the hint woke the watch")
        .expect("the watch task ran")
        .expect("the watch resolved");
    assert_eq!(
        outcome,
        OperationTerminalOutcome::Cancelled {
            reason: Some("stop".into())
        }
    );
}

#[tokio::test]
async fn retention_is_configurable() {
    use docket_core::ops::rules::Retention;

    let store = MemoryStore::new().with_ops_retention(Retention::new(2).expect("valid"));
    let t = Timestamp::from_millis;
    for n in 0..4u128 {
        let id = OperationId::from_uuid(Uuid::from_u128(100 + n));
        let spec = OperationSpec::new(id, OperationKind::BackgroundToolOp, "op");
        store
            .register_operation(&owner(), &spec, None, t(1))
            .await
            .expect("registered");
        store
            .abort_provisioning(&owner(), &id, None, t(2))
            .await
            .expect("aborted");
    }
    for n in 0..4u128 {
        let id = OperationId::from_uuid(Uuid::from_u128(100 + n));
        let kept = store
            .operation_snapshot(&owner(), &id)
            .await
            .expect("read")
            .is_some();
        assert_eq!(kept, n >= 2, "operation {n}");
    }
}
