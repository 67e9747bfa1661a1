//! What a case receives: one fresh, isolated backend plus the harness hooks bound to its guard.
//!
//! [`Env`] erases the harness type (cases are plain functions over `&Env`, so one case list
//! serves every backend) and offers the two checks every rejected write goes through:
//! [`Env::rejected`] and [`Env::unchanged`], which compare the harness's raw snapshot of every
//! stored byte before and after the call.

use std::any::Any;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::ops::{OpsError, OpsErrorKind, OpsLifecycleRegistry};
use docket_core::store::{Backend, StoreError, StoreErrorKind};

use crate::harness::{Capabilities, Harness};

/// A guard of any harness, type-erased.
type AnyGuard = Box<dyn Any + Send + Sync>;

/// [`Harness`] with its guard type erased, so cases need not be generic.
#[async_trait]
trait DynHarness: Send + Sync {
    async fn open_any(&self) -> Result<(Arc<dyn Backend>, AnyGuard), StoreError>;
    fn caps(&self) -> Capabilities;
    async fn snapshot_any(&self, guard: &AnyGuard) -> Result<String, StoreError>;
    async fn corrupt_run_any(&self, guard: &AnyGuard, run_id: &RunId) -> Result<(), StoreError>;
    async fn corrupt_event_any(
        &self,
        guard: &AnyGuard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError>;
    async fn corrupt_graph_any(
        &self,
        guard: &AnyGuard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError>;
    async fn ops_snapshot_any(&self, guard: &AnyGuard) -> Result<String, StoreError>;
    async fn reopen_any(&self, guard: &AnyGuard) -> Result<Arc<dyn Backend>, StoreError>;
}

fn typed<H: Harness>(guard: &AnyGuard) -> Result<&H::Guard, StoreError> {
    guard.downcast_ref::<H::Guard>().ok_or_else(|| {
        StoreError::permanent(docket_core::store::Message(
            "conformance: a guard was handed to a harness that did not create it".into(),
        ))
    })
}

#[async_trait]
impl<H: Harness> DynHarness for H {
    async fn open_any(&self) -> Result<(Arc<dyn Backend>, AnyGuard), StoreError> {
        let (backend, guard) = self.open().await?;
        Ok((backend, Box::new(guard)))
    }

    fn caps(&self) -> Capabilities {
        self.capabilities()
    }

    async fn snapshot_any(&self, guard: &AnyGuard) -> Result<String, StoreError> {
        self.raw_snapshot(typed::<H>(guard)?).await
    }

    async fn corrupt_run_any(&self, guard: &AnyGuard, run_id: &RunId) -> Result<(), StoreError> {
        self.corrupt_run(typed::<H>(guard)?, run_id).await
    }

    async fn corrupt_event_any(
        &self,
        guard: &AnyGuard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        self.corrupt_event(typed::<H>(guard)?, run_id, seq).await
    }

    async fn corrupt_graph_any(
        &self,
        guard: &AnyGuard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        self.corrupt_graph(typed::<H>(guard)?, owner, graph_ref)
            .await
    }

    async fn ops_snapshot_any(&self, guard: &AnyGuard) -> Result<String, StoreError> {
        self.raw_ops_snapshot(typed::<H>(guard)?).await
    }

    async fn reopen_any(&self, guard: &AnyGuard) -> Result<Arc<dyn Backend>, StoreError> {
        self.reopen(typed::<H>(guard)?).await
    }
}

/// One case's world: a fresh, empty, isolated backend and the harness hooks for it.
///
/// Dropping the `Env` drops the backend first and then the harness guard, which removes the
/// schema, key prefix or directory.
pub struct Env<'h> {
    // Field order is drop order: the store goes before the guard that owns its storage.
    backend: Arc<dyn Backend>,
    guard: AnyGuard,
    harness: &'h dyn DynHarness,
}

impl Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("backend", &self.backend)
            .field("capabilities", &self.harness.caps())
            .finish_non_exhaustive()
    }
}

impl<'h> Env<'h> {
    /// Opens a fresh backend from `harness`.
    ///
    /// # Errors
    /// Whatever [`Harness::open`] returns (an unreachable server fails the case).
    pub async fn open<H: Harness>(harness: &'h H) -> Result<Env<'h>, StoreError> {
        let harness: &'h dyn DynHarness = harness;
        let (backend, guard) = harness.open_any().await?;
        Ok(Env {
            backend,
            guard,
            harness,
        })
    }

    /// Another fresh, isolated backend from the same harness (the property test opens one per
    /// generated sequence).
    ///
    /// # Panics
    /// When the harness cannot open a store: the case cannot run without one.
    pub async fn fresh(&self) -> Env<'h> {
        let (backend, guard) = self
            .harness
            .open_any()
            .await
            .unwrap_or_else(|e| panic!("the harness could not open another store: {e}"));
        Env {
            backend,
            guard,
            harness: self.harness,
        }
    }

    /// The backend under test.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// What the backend declares beyond the mandatory contract.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        self.harness.caps()
    }

    /// Every stored byte of this case's store.
    ///
    /// # Panics
    /// When the harness cannot read the store.
    pub async fn snapshot(&self) -> String {
        self.harness
            .snapshot_any(&self.guard)
            .await
            .unwrap_or_else(|e| panic!("the harness could not snapshot the store: {e}"))
    }

    /// Damages the stored document of `run_id`.
    ///
    /// # Panics
    /// When the harness cannot (e.g. no such run).
    pub async fn corrupt_run(&self, run_id: &RunId) {
        self.harness
            .corrupt_run_any(&self.guard, run_id)
            .await
            .unwrap_or_else(|e| panic!("the harness could not corrupt run {run_id}: {e}"));
    }

    /// Damages the stored event `seq` of `run_id`.
    ///
    /// # Panics
    /// When the harness cannot (e.g. no such event).
    pub async fn corrupt_event(&self, run_id: &RunId, seq: u64) {
        self.harness
            .corrupt_event_any(&self.guard, run_id, seq)
            .await
            .unwrap_or_else(|e| panic!("the harness could not corrupt event {run_id}#{seq}: {e}"));
    }

    /// Damages the stored bytes of one graph version.
    ///
    /// # Panics
    /// When the harness cannot (e.g. no such version).
    pub async fn corrupt_graph(&self, owner: &OwnerScope, graph_ref: &GraphRef) {
        self.harness
            .corrupt_graph_any(&self.guard, owner, graph_ref)
            .await
            .unwrap_or_else(|e| panic!("the harness could not corrupt graph {graph_ref:?}: {e}"));
    }

    /// Awaits a write that must fail with `kind`, then proves the store is byte-identical to
    /// before the call. Returns the error for further checks.
    ///
    /// # Panics
    /// When the call succeeds, fails differently, or changed a stored byte.
    pub async fn rejected<T, F>(&self, kind: StoreErrorKind, op: F) -> StoreError
    where
        T: Debug,
        F: Future<Output = Result<T, StoreError>>,
    {
        let before = self.snapshot().await;
        let error = match op.await {
            Ok(value) => panic!("expected {kind:?}, got Ok({value:?})"),
            Err(error) => error,
        };
        assert_eq!(error.kind(), kind, "unexpected error: {error}");
        let after = self.snapshot().await;
        assert_same_bytes(&before, &after, &format!("a write rejected with {kind:?}"));
        error
    }

    /// Awaits a call that must succeed without changing a single stored byte (a no-op release,
    /// a stale abandon, a read) and returns its value.
    ///
    /// # Panics
    /// When the call fails or changed a stored byte.
    pub async fn unchanged<T, F>(&self, op: F) -> T
    where
        F: Future<Output = Result<T, StoreError>>,
    {
        let before = self.snapshot().await;
        let value = op
            .await
            .unwrap_or_else(|e| panic!("expected success without a change, got {e}"));
        let after = self.snapshot().await;
        assert_same_bytes(&before, &after, "an operation that must change nothing");
        value
    }
}

/// The operation registry: its store value, every stored byte, and the two checks of a
/// rejected or no-op write.
impl Env<'_> {
    /// The backend's operation registry.
    ///
    /// # Panics
    /// When the backend offers none (registry cases only run when the harness declares one).
    #[must_use]
    pub fn ops(&self) -> &dyn OpsLifecycleRegistry {
        self.backend
            .ops_registry()
            .unwrap_or_else(|| panic!("the harness declares a registry the backend does not offer"))
    }

    /// Every stored byte of this case's registry.
    ///
    /// # Panics
    /// When the harness cannot read the store.
    pub async fn ops_snapshot(&self) -> String {
        self.harness
            .ops_snapshot_any(&self.guard)
            .await
            .unwrap_or_else(|e| panic!("the harness could not snapshot the registry: {e}"))
    }

    /// Everything stored, runs and registry, so a registry write is shown to touch neither.
    async fn everything(&self) -> (String, String) {
        (self.snapshot().await, self.ops_snapshot().await)
    }

    /// A new store value over this case's storage, as a restarted process would open it.
    ///
    /// # Panics
    /// When the harness cannot reopen the store.
    pub async fn reopen(&self) -> Arc<dyn Backend> {
        self.harness
            .reopen_any(&self.guard)
            .await
            .unwrap_or_else(|e| panic!("the harness could not reopen the store: {e}"))
    }

    /// Awaits a registry call that must fail with `kind`, then proves that nothing stored
    /// changed (registry and runs). Returns the error for further checks.
    ///
    /// # Panics
    /// When the call succeeds, fails differently, or changed a stored byte.
    pub async fn ops_rejected<T, F>(&self, kind: OpsErrorKind, op: F) -> OpsError
    where
        T: Debug,
        F: Future<Output = Result<T, OpsError>>,
    {
        let before = self.everything().await;
        let error = match op.await {
            Ok(value) => panic!("expected {kind:?}, got Ok({value:?})"),
            Err(error) => error,
        };
        assert_eq!(error.kind(), kind, "unexpected error: {error}");
        let after = self.everything().await;
        let what = format!("a registry write rejected with {kind:?}");
        assert_same_bytes(&before.1, &after.1, &what);
        assert_same_bytes(&before.0, &after.0, &what);
        error
    }

    /// Awaits a registry call that must succeed without changing a stored byte and returns
    /// its value.
    ///
    /// # Panics
    /// When the call fails or changed a stored byte.
    pub async fn ops_unchanged<T, F>(&self, op: F) -> T
    where
        F: Future<Output = Result<T, OpsError>>,
    {
        let before = self.everything().await;
        let value = op
            .await
            .unwrap_or_else(|e| panic!("expected success without a change, got {e}"));
        let after = self.everything().await;
        let what = "a registry call that must change nothing";
        assert_same_bytes(&before.1, &after.1, what);
        assert_same_bytes(&before.0, &after.0, what);
        value
    }
}

/// Asserts two snapshots are identical, printing the first differing line instead of two
/// walls of text.
///
/// # Panics
/// When they differ.
pub fn assert_same_bytes(before: &str, after: &str, what: &str) {
    if before == after {
        return;
    }
    let first = before
        .lines()
        .zip(after.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| before.lines().count().min(after.lines().count()));
    let line = |s: &str| s.lines().nth(first).unwrap_or("<none>").to_owned();
    panic!(
        "{what} changed the store (first difference at line {first}):\n before: {}\n  after: {}",
        line(before),
        line(after)
    );
}
