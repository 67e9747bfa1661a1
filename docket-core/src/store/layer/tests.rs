//! Layers intercept what they override and forward the rest.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::memory::MemoryStore;
use crate::model::{RunQuery, Scope};

/// Refuses every run listing, forwards everything else.
#[derive(Debug)]
struct RefuseListing {
    inner: MemoryStore,
    refused: AtomicUsize,
}

#[async_trait]
impl StoreLayer for RefuseListing {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn list_runs(&self, _: &Scope, _: &RunQuery) -> Result<RunPage, StoreError> {
        self.refused.fetch_add(1, Ordering::Relaxed);
        Err(StoreError::invalid_argument("listing refused by the layer"))
    }
}

#[tokio::test]
async fn an_override_intercepts_and_everything_else_reaches_the_inner_store() {
    let layered = Layered(RefuseListing {
        inner: MemoryStore::new(),
        refused: AtomicUsize::new(0),
    });
    let store: &dyn Backend = &layered;
    let refused = store.list_runs(&Scope::System, &RunQuery::default()).await;
    assert!(
        matches!(refused, Err(StoreError::InvalidArgument { .. })),
        "the override answered: {refused:?}"
    );
    assert_eq!(layered.refused.load(Ordering::Relaxed), 1);
    let unknown = RunId::new("never-started").expect("a valid id");
    let forwarded = store.inspect_run(&Scope::System, &unknown).await;
    assert!(
        matches!(forwarded, Err(StoreError::NotFound)),
        "an unknown run reached the memory store, which says NotFound: {forwarded:?}"
    );
}

/// Refuses every operation transition, forwards every other registry call.
#[derive(Debug)]
struct FreezeOperations {
    inner: MemoryStore,
}

#[async_trait]
impl StoreLayer for FreezeOperations {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn transition_operation(
        &self,
        _: &SessionId,
        id: &OperationId,
        _: &OperationTransition,
        _: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        Err(OpsError::NotFound { id: *id })
    }
}

#[tokio::test]
async fn a_layer_forwards_the_registry_and_may_override_its_calls() {
    use crate::ops::{OperationKind, OperationStatus};

    let layered = Layered(FreezeOperations {
        inner: MemoryStore::new(),
    });
    let store: &dyn Backend = &layered;
    let registry = store
        .ops_registry()
        .expect("the memory store offers a registry");
    let owner = SessionId::from_uuid(uuid::Uuid::from_u128(1));
    let id = OperationId::from_uuid(uuid::Uuid::from_u128(2));
    let spec = OperationSpec::new(id, OperationKind::BackgroundToolOp, "op");
    let now = Timestamp::from_millis(1);
    registry
        .register_operation(&owner, &spec, None, now)
        .await
        .expect("registration reaches the memory store");
    let frozen = registry.provisioning_succeeded(&owner, &id, now).await;
    assert!(
        matches!(frozen, Err(OpsError::NotFound { .. })),
        "the named transition went through the override: {frozen:?}"
    );
    let stored = registry
        .operation_snapshot(&owner, &id)
        .await
        .expect("reads are forwarded")
        .expect("registered");
    assert_eq!(stored.status, OperationStatus::Provisioning);
}

/// A store without a registry: wrapping it offers none either.
#[derive(Debug)]
struct HideRegistry {
    inner: MemoryStore,
}

#[async_trait]
impl StoreLayer for HideRegistry {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    fn offers_ops_registry(&self) -> bool {
        false
    }
}

#[test]
fn a_layer_can_declare_that_it_offers_no_registry() {
    let layered = Layered(HideRegistry {
        inner: MemoryStore::new(),
    });
    let store: &dyn Backend = &layered;
    assert!(store.ops_registry().is_none());
}
