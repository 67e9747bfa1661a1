//! Namespace administration: `purge_namespace` deletes one namespace and nothing else.

use docket_core::model::{OwnerScope, Scope};
use docket_core::store::RunStore;

use crate::common::*;

#[tokio::test]
async fn purging_a_namespace_deletes_its_keys_and_leaves_other_namespaces_alone() {
    let gone = open().await;
    let kept = open().await;
    for fx in [&gone, &kept] {
        start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    }
    let keys = gone.guard.namespace_keys().await.expect("keys");
    assert!(!keys.is_empty());
    let kept_before = kept.snapshot().await;

    let deleted = gone.store.purge_namespace().await.expect("purge");
    assert_eq!(deleted, u64::try_from(keys.len()).expect("small"));
    assert!(gone.guard.namespace_keys().await.expect("keys").is_empty());
    assert_eq!(kept.snapshot().await, kept_before);
    assert!(kept
        .store
        .fetch_run(&Scope::System, &rid("r1"))
        .await
        .is_ok());
    // An empty namespace purges to nothing.
    assert_eq!(gone.store.purge_namespace().await.expect("purge"), 0);
}
