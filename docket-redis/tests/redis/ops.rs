//! The operation registry on Redis beyond the shared conformance families: every registry
//! write script checks everything before its first write, retention follows the
//! `ops_retention` option with the evicted record's keys gone, registry keys stay under
//! `ops:` beside the run keys, and endings are hinted on the registry channel.

use std::future::Future;
use std::time::Duration;

use docket_core::ops::rules::Retention;
use docket_core::ops::{
    OperationId, OperationKind, OperationQuery, OperationResult, OperationSpec, OpsError,
    OpsLifecycleRegistry, SessionId,
};
use docket_redis::RedisStore;
use futures::StreamExt;
use uuid::Uuid;

use crate::common::*;

fn owner(n: u128) -> SessionId {
    SessionId::from_uuid(Uuid::from_u128(0x5e55_0000_0000_0000 + n))
}

fn op(n: u128) -> OperationId {
    OperationId::from_uuid(Uuid::from_u128(0x0b00_0000_0000_0000 + n))
}

fn spec(n: u128) -> OperationSpec {
    OperationSpec::new(op(n), OperationKind::DetachedJobWait, format!("op {n}"))
}

/// The twin's call stops at the fail point and writes nothing; the real call then succeeds.
async fn stops_at_boundary<T, U: std::fmt::Debug>(
    fx: &Fx,
    twin_call: impl Future<Output = Result<T, OpsError>>,
    real_call: impl Future<Output = Result<U, OpsError>>,
) -> U {
    let before = fx.snapshot().await;
    let err = match twin_call.await {
        Ok(_) => panic!("the fail point was not reached"),
        Err(e) => e,
    };
    assert!(err.to_string().contains("docket fail point"), "{err}");
    assert_eq!(fx.snapshot().await, before, "a write preceded the boundary");
    real_call.await.expect("the same call passes every check")
}

#[tokio::test]
async fn every_registry_write_script_checks_everything_before_its_first_write() {
    let fx = open().await;
    let twin = fx.store.with_fail_points();
    let (a, b) = (owner(1), owner(2));
    stops_at_boundary(
        &fx,
        twin.register_operation(&a, &spec(1), Some(2), t(0)),
        fx.store.register_operation(&a, &spec(1), Some(2), t(0)),
    )
    .await;
    stops_at_boundary(
        &fx,
        twin.provisioning_succeeded(&a, &op(1), t(1)),
        fx.store.provisioning_succeeded(&a, &op(1), t(1)),
    )
    .await;
    stops_at_boundary(
        &fx,
        twin.report_progress(&a, &op(1), t(2)),
        fx.store.report_progress(&a, &op(1), t(2)),
    )
    .await;
    let done = stops_at_boundary(
        &fx,
        twin.complete_operation(&a, &op(1), OperationResult::new("r"), t(3)),
        fx.store
            .complete_operation(&a, &op(1), OperationResult::new("r"), t(3)),
    )
    .await;
    assert_eq!(done.completion_seq.map(|s| s.get()), Some(1));
    fx.store
        .register_operation(&a, &spec(2), None, t(4))
        .await
        .expect("register");
    let ended = stops_at_boundary(
        &fx,
        twin.terminate_owner(&a, "stop", t(5)),
        fx.store.terminate_owner(&a, "stop", t(5)),
    )
    .await;
    assert_eq!(ended.len(), 1);
    let drained = stops_at_boundary(
        &fx,
        twin.collect_completed(&a),
        fx.store.collect_completed(&a),
    )
    .await;
    assert_eq!(drained.len(), 2);
    fx.store
        .register_operation(&b, &spec(3), None, t(6))
        .await
        .expect("register");
    let retired = stops_at_boundary(
        &fx,
        twin.retire_owner(&b, "gone", t(7)),
        fx.store.retire_owner(&b, "gone", t(7)),
    )
    .await;
    assert_eq!(retired.len(), 1);
}

#[tokio::test]
async fn the_ops_retention_option_evicts_the_oldest_terminal_records_and_their_keys() {
    let fx = open().await;
    let mut config = docket_redis::parse_url(&format!(
        "{}?namespace={}&ops_retention=2",
        docket_redis::testing::test_url(),
        fx.store.namespace()
    ))
    .expect("valid URL");
    assert_eq!(config.ops_retention, Retention::new(2).expect("two"));
    config.url = docket_redis::testing::test_url();
    let store = RedisStore::open(config).await.expect("connect");
    let a = owner(1);
    for n in 1..=3 {
        store
            .register_operation(&a, &spec(n), None, t(0))
            .await
            .expect("register");
        store
            .cancel_operation(&a, &op(n), None, t(n as i64))
            .await
            .expect("cancel");
    }
    assert_eq!(
        store.operation_snapshot(&a, &op(1)).await.expect("read"),
        None,
        "the oldest terminal record is evicted"
    );
    let page = store
        .list_operations(&a, &OperationQuery::first(10))
        .await
        .expect("list");
    let listed: Vec<OperationId> = page.operations.iter().map(|r| r.id).collect();
    assert_eq!(listed, vec![op(2), op(3)]);
    let keys = fx.guard.namespace_keys().await.expect("keys");
    let evicted = store.keys().ops_record(&a, &op(1));
    assert!(!keys.contains(&evicted), "{keys:?}");
    // The harness's registry dump (which the conformance suite compares around refused
    // writes) covers exactly these keys.
    let dump = fx.guard.ops_snapshot().await.expect("dump");
    let kept = store.keys().ops_record(&a, &op(2));
    assert!(dump.contains(&kept), "{dump}");
    assert!(!dump.contains(&evicted), "{dump}");
    let registry_prefix = format!("{}ops:", store.keys().prefix());
    assert!(
        keys.iter().all(|k| k.starts_with(&registry_prefix)),
        "every registry key lives under ops: ({keys:?})"
    );
    // The id of an evicted record may be registered again; its sequence is not reused.
    store
        .register_operation(&a, &spec(1), None, t(10))
        .await
        .expect("register again");
    let again = store
        .fail_operation(&a, &op(1), "e".into(), t(11))
        .await
        .expect("fail");
    assert_eq!(again.completion_seq.map(|s| s.get()), Some(4));
}

#[tokio::test]
async fn an_ending_is_hinted_on_the_registry_channel() {
    let fx = open().await;
    let a = owner(1);
    let mut hints = fx
        .store
        .operation_wakeups()
        .expect("the store offers hints");
    // The subscription announces itself once it is in place.
    tokio::time::timeout(Duration::from_secs(10), hints.next())
        .await
        .expect("subscribed in time")
        .expect("a hint");
    fx.store
        .register_operation(&a, &spec(1), None, t(0))
        .await
        .expect("register");
    fx.store
        .abort_provisioning(&a, &op(1), None, t(1))
        .await
        .expect("abort");
    tokio::time::timeout(Duration::from_secs(10), hints.next())
        .await
        .expect("the ending is hinted in time")
        .expect("a hint");
}

#[tokio::test]
async fn a_damaged_record_is_corrupt_never_absent_and_blocks_no_other_owner() {
    let fx = open().await;
    let (a, b) = (owner(1), owner(2));
    for who in [&a, &b] {
        fx.store
            .register_operation(who, &spec(1), None, t(0))
            .await
            .expect("register");
    }
    let key = fx.store.keys().ops_record(&a, &op(1));
    fx.guard
        .overwrite_field(&key, "status", b"exploded")
        .await
        .expect("damage");
    let read = fx.store.operation_snapshot(&a, &op(1)).await;
    assert!(matches!(read, Err(OpsError::Corrupt { .. })), "{read:?}");
    let listed = fx
        .store
        .list_operations(&a, &OperationQuery::first(10))
        .await;
    assert!(
        matches!(listed, Err(OpsError::Corrupt { .. })),
        "{listed:?}"
    );
    let moved = fx.store.provisioning_succeeded(&a, &op(1), t(1)).await;
    assert!(matches!(moved, Err(OpsError::Corrupt { .. })), "{moved:?}");
    let before = fx.snapshot().await;
    let ended = fx.store.terminate_owner(&a, "stop", t(2)).await;
    assert!(matches!(ended, Err(OpsError::Corrupt { .. })), "{ended:?}");
    assert_eq!(fx.snapshot().await, before, "a refused termination wrote");
    let fine = fx
        .store
        .provisioning_succeeded(&b, &op(1), t(3))
        .await
        .expect("another owner is unaffected");
    assert!(fine.started_at.is_some());
}
