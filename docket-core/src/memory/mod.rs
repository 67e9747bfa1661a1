//! The reference in-memory store: the model every backend is compared against.
//!
//! [`MemoryStore`] implements [`crate::store::RunStore`] and [`crate::store::GraphStore`] (so it
//! is a [`crate::store::Backend`]) with exactly the semantics of `docs/storage-contract.md` and
//! `docs/state-machines.md`, deciding nothing itself: every rule comes from
//! [`crate::store::rules`]. Clarity beats speed here. The same value is the reference
//! [`crate::ops::OpsLifecycleRegistry`] (module `ops`), whose rules come from
//! [`crate::ops::rules`].
//!
//! # How it stores
//!
//! All state sits behind one mutex that is never held across an `.await` (every operation runs
//! to completion inside one critical section, which is what makes each transition atomic).
//! Like a SQL backend it keeps encoded records: run documents as `serde_json` bytes next to
//! their summary columns, operational state and owner; events as bytes with the time they
//! were inserted; graph versions as canonical bytes with their publication time. Every read
//! decodes and re-verifies, so a damaged record is [`StoreError::Corrupt`] /
//! [`StoreError::CorruptGraph`], never "absent".
//!
//! Time is always the caller's `now`; claim tokens are UUID v4
//! ([`crate::model::ClaimToken::mint`]).
//!
//! # Cancel safety
//!
//! Every async method finishes its work in its first poll (there is no `.await` inside), so a
//! dropped future has either done nothing (never polled) or everything. All methods are
//! therefore cancel safe in the strongest sense.

mod claims;
mod graphs;
mod hooks;
mod ops;
mod prune;
mod reads;
mod state;
mod store;
mod transitions;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::model::{GraphRef, OwnerScope, RunId};
use crate::ops::rules::Retention;
use crate::store::{Message, StoreError, Wakeups};

use state::State;

/// Wake hints buffered per subscriber before older ones are dropped (a dropped hint only costs
/// latency: polling stays the correctness mechanism).
const WAKE_CHANNEL_CAPACITY: usize = 64;

/// The reference in-memory backend. See the [module docs](self).
pub struct MemoryStore {
    /// Shared with the values [`MemoryStore::reopen`] makes, as a file is shared by the
    /// processes that open it.
    state: Arc<Mutex<State>>,
    wake: broadcast::Sender<()>,
    /// Hints that an operation may have turned terminal.
    ops_wake: broadcast::Sender<()>,
    ops_retention: Retention,
    pruning: AtomicBool,
    faults: Faults,
}

/// Deliberate bugs for the conformance suite's mutant checks: the suite proves it can fail by
/// running against a store with one of these switched on. Never enable them outside tests.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Claimed commits skip the `checkpoint_seq` fence (the token is still checked).
    pub skip_claimed_seq_fence: bool,
    /// Abandons keep `claim_attempts` instead of handing the attempt back.
    pub abandon_keeps_attempts: bool,
    /// Operation transitions apply whatever the operation's status (no from-set guard).
    pub ops_skip_from_set_guard: bool,
    /// Operation transitions read the owner's next completion sequence in one critical
    /// section and write it in another, so concurrent terminal transitions can share one.
    pub ops_racy_completion_seq: bool,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::with_faults(Faults::default())
    }

    /// An empty store with deliberate bugs switched on (for the suite's mutant checks only).
    #[doc(hidden)]
    #[must_use]
    pub fn with_faults(faults: Faults) -> Self {
        let (wake, _) = broadcast::channel(WAKE_CHANNEL_CAPACITY);
        let (ops_wake, _) = broadcast::channel(WAKE_CHANNEL_CAPACITY);
        MemoryStore {
            state: Arc::new(Mutex::new(State::default())),
            wake,
            ops_wake,
            ops_retention: Retention::default(),
            pruning: AtomicBool::new(false),
            faults,
        }
    }

    /// This store keeping `retention` terminal operation records per owner (the default is
    /// [`crate::ops::rules::DEFAULT_RETAINED_TERMINAL`]).
    #[must_use]
    pub fn with_ops_retention(mut self, retention: Retention) -> Self {
        self.ops_retention = retention;
        self
    }

    /// Another store value over the same state and wake channels, as a process restarted
    /// on the same file would see it (for the suite's reopen cases).
    #[doc(hidden)]
    #[must_use]
    pub fn reopen(&self) -> MemoryStore {
        MemoryStore {
            state: Arc::clone(&self.state),
            wake: self.wake.clone(),
            ops_wake: self.ops_wake.clone(),
            ops_retention: self.ops_retention,
            pruning: AtomicBool::new(false),
            faults: self.faults,
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        // A panic while the lock was held can only have happened before the write phase of an
        // operation (writes are plain map updates), but refusing further work is the safe
        // answer for a store that is supposed to be the reference.
        self.state.lock().map_err(|_| {
            StoreError::permanent(Message(
                "the memory store's lock was poisoned by a panic".into(),
            ))
        })
    }

    fn read_for_hooks(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends a wake hint; nobody listening is fine.
    fn hint(&self) {
        let _ = self.wake.send(());
    }

    /// Sends an operation hint; nobody listening is fine.
    fn ops_hint(&self) {
        let _ = self.ops_wake.send(());
    }

    /// Marks a prune pass as running, or says another one is.
    fn begin_prune(&self) -> Option<PruneLock<'_>> {
        self.pruning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| PruneLock { store: self })
    }

    /// Every stored byte (graphs, runs with their columns and operational state, events),
    /// one record per line in key order, so two snapshots are equal exactly when nothing
    /// changed. Contains claim tokens: for tests only, never log it.
    #[doc(hidden)]
    #[must_use]
    pub fn raw_snapshot(&self) -> String {
        hooks::raw_snapshot(&self.read_for_hooks())
    }

    /// Every stored byte of the operation registry (owners, then their operations), one row
    /// per line in key order, so two snapshots are equal exactly when nothing changed.
    #[doc(hidden)]
    #[must_use]
    pub fn raw_ops_snapshot(&self) -> String {
        let mut out = String::new();
        self.read_for_hooks().ops.render(&mut out);
        out
    }

    /// Overwrites the stored document of `run_id` with bytes that cannot be decoded.
    ///
    /// # Errors
    /// `NotFound` when no such run is stored.
    #[doc(hidden)]
    pub fn corrupt_run(&self, run_id: &RunId) -> Result<(), StoreError> {
        hooks::corrupt_run(&mut *self.lock()?, run_id)
    }

    /// Replaces the stored document bytes of `run_id` verbatim (columns and operational state
    /// are kept), e.g. with a document that decodes but breaks an invariant.
    ///
    /// # Errors
    /// `NotFound` when no such run is stored.
    #[doc(hidden)]
    pub fn replace_run_document(&self, run_id: &RunId, bytes: Vec<u8>) -> Result<(), StoreError> {
        hooks::replace_run_document(&mut *self.lock()?, run_id, bytes)
    }

    /// Overwrites the stored event `seq` of `run_id` with bytes that cannot be decoded.
    ///
    /// # Errors
    /// `NotFound` when no such event is stored.
    #[doc(hidden)]
    pub fn corrupt_event(&self, run_id: &RunId, seq: u64) -> Result<(), StoreError> {
        hooks::corrupt_event(&mut *self.lock()?, run_id, seq)
    }

    /// Overwrites the stored bytes of one graph version with bytes that fail verification.
    ///
    /// # Errors
    /// `NotFound` when no such version is stored.
    #[doc(hidden)]
    pub fn corrupt_graph(
        &self,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        hooks::corrupt_graph(&mut *self.lock()?, owner, graph_ref)
    }

    /// Holds the pruner lock as a concurrent pass would, until the guard drops; passes started
    /// meanwhile report `skipped_locked`. Returns `None` if a pass holds it already.
    #[doc(hidden)]
    #[must_use]
    pub fn hold_prune_lock(&self) -> Option<PruneLock<'_>> {
        self.begin_prune()
    }
}

/// A hint stream over `channel`: one item per hint; a lagging subscriber missed hints, which
/// is itself a reason to look, so it gets one item for them all.
fn hint_stream(channel: &broadcast::Sender<()>) -> Wakeups {
    let receiver = channel.subscribe();
    futures::stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(()) | Err(RecvError::Lagged(_)) => Some(((), receiver)),
            Err(RecvError::Closed) => None,
        }
    })
    .boxed()
}

/// The pruner's "advisory lock": held for one pass (or by a test), released on drop.
#[doc(hidden)]
#[derive(Debug)]
pub struct PruneLock<'a> {
    store: &'a MemoryStore,
}

impl Drop for PruneLock<'_> {
    fn drop(&mut self) {
        self.store.pruning.store(false, Ordering::Release);
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Counts only: rows hold claim tokens, which are never printed.
        let mut s = f.debug_struct("MemoryStore");
        match self.state.try_lock() {
            Ok(state) => s
                .field("runs", &state.runs.len())
                .field("event_runs", &state.events.len())
                .field("graphs", &state.graphs.len()),
            Err(_) => s.field("state", &"<locked>"),
        };
        s.finish_non_exhaustive()
    }
}
