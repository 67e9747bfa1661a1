//! What a store author implements to run the suite: a factory of fresh, isolated backends.

use std::sync::Arc;

use async_trait::async_trait;
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::store::{Backend, Message, StoreError};

/// Optional abilities of a backend that some cases need.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// `RunStore::wakeups` returns a stream.
    pub wakeups: bool,
    /// `RunStore::ops_registry` returns the store's operation registry, and the harness
    /// implements [`Harness::raw_ops_snapshot`] and [`Harness::reopen`]. Without it the
    /// registry families are skipped (and reported as skipped); one case still checks that
    /// the backend offers no registry.
    pub ops_registry: bool,
}

/// An ability a whole family of cases needs; a harness without it skips the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// [`Capabilities::ops_registry`].
    OpsRegistry,
}

impl Requirement {
    /// Whether `capabilities` include this ability.
    #[must_use]
    pub fn met_by(self, capabilities: Capabilities) -> bool {
        match self {
            Requirement::OpsRegistry => capabilities.ops_registry,
        }
    }

    /// What is missing, for the skip message.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Requirement::OpsRegistry => "the harness declares no operation registry",
        }
    }
}

/// Hands each case a fresh, isolated backend (PostgreSQL: its own schema; Redis: its own key
/// prefix; SQLite: its own temp dir; memory: a new value) plus a guard that cleans it up.
///
/// Time is never read by the suite from a wall clock: every case passes its own `now`.
#[async_trait]
pub trait Harness: Send + Sync + 'static {
    /// Dropped after the case; removes the schema, key prefix or directory.
    type Guard: Send + Sync + 'static;

    /// A fresh, empty, isolated backend.
    ///
    /// # Errors
    /// Any failure to reach or prepare the store (a missing server fails the case).
    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError>;

    /// What the backend offers beyond the mandatory contract.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Every stored byte of the isolated store, rendered deterministically (rows/keys sorted),
    /// so a case can prove that a rejected write left the store byte-identical.
    ///
    /// # Errors
    /// Any failure to read the store.
    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError>;

    /// Overwrites the stored document of `run_id` with bytes that cannot be decoded.
    ///
    /// # Errors
    /// Any failure to write the store.
    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError>;

    /// Overwrites the stored event `seq` of `run_id` with bytes that cannot be decoded.
    ///
    /// # Errors
    /// Any failure to write the store.
    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError>;

    /// Overwrites the stored bytes of one graph version.
    ///
    /// # Errors
    /// Any failure to write the store.
    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError>;

    /// Every stored byte of the operation registry (owners and operations), rendered
    /// deterministically, so a case can prove that a rejected registry write changed nothing.
    /// Needed when [`Capabilities::ops_registry`] is declared.
    ///
    /// # Errors
    /// Any failure to read the store; by default, that the harness has no such hook.
    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        let _ = guard;
        Err(no_hook("raw_ops_snapshot"))
    }

    /// A new store value over the same storage (the same file, schema or namespace), as a
    /// restarted process would open it; everything durable must be there. Needed when
    /// [`Capabilities::ops_registry`] is declared.
    ///
    /// # Errors
    /// Any failure to open the store; by default, that the harness has no such hook.
    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        let _ = guard;
        Err(no_hook("reopen"))
    }
}

fn no_hook(name: &str) -> StoreError {
    StoreError::permanent(Message(format!("the harness does not implement `{name}`")))
}
