//! # A custom Docket store, proven by the conformance suite
//!
//! [`MapStore`] keeps everything in `BTreeMap`s behind one `std::sync::Mutex`: run rows
//! (owner, summary columns, the document as JSON text, the operational state), event rows
//! (JSON text and the time they were inserted) and graph versions (canonical bytes and their
//! publication time). It is written only against the public store traits and
//! [`docket_core::store::rules`], the decision tables every backend shares — it decides no
//! policy itself, it only finds rows and applies the rules to them.
//!
//! Every operation runs inside one critical section that is never held across an `.await`,
//! which is what makes each transition atomic: all checks happen before the first write.
//!
//! [`MapHarness`] is its conformance harness, and `tests/conformance.rs` is one line:
//!
//! ```
//! docket_conformance::suite!(map_store, docket_example_custom_store::MapHarness);
//! ```
//!
//! The same value is an operation registry ([`docket_core::ops::OpsLifecycleRegistry`]),
//! over two more tables (owners, and operations column by column) behind the same lock,
//! deciding with [`docket_core::ops::rules`] alone. [`MapStore::reopen`] opens a second value
//! on the same tables, which is what the suite's durability cases need of a store that lives
//! in memory.
//!
//! The store offers no wake hints ([`docket_core::store::RunStore::wakeups`] is `None`, and
//! the registry's completion watch polls), and its harness declares so: the suite's wakeup
//! cases then assert exactly that.

mod codec;
mod graphs;
mod harness;
mod operation_rows;
mod operations;
mod runs;
mod tables;
mod transitions;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use docket_core::ops::rules::Retention;
use docket_core::store::{Message, StoreError};

pub use harness::MapHarness;
use tables::Tables;

/// An in-process store over `Mutex<BTreeMap>`s. See the [crate docs](crate).
#[derive(Default)]
pub struct MapStore {
    /// Shared by the values [`MapStore::reopen`] makes.
    tables: Arc<Mutex<Tables>>,
    pruning: AtomicBool,
    /// Terminal registry records kept per owner.
    retention: Retention,
}

impl MapStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Another store value on the same tables, as a restarted process would find a durable
    /// store's files.
    #[must_use]
    pub fn reopen(&self) -> Self {
        MapStore {
            tables: Arc::clone(&self.tables),
            pruning: AtomicBool::new(false),
            retention: self.retention,
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Tables>, StoreError> {
        // Writes happen only after every check passed, so a panic cannot leave a half-written
        // row; refusing further work is still the safe answer.
        self.tables
            .lock()
            .map_err(|_| StoreError::permanent(Message("the map store's lock is poisoned".into())))
    }

    /// Claims the single pruner slot, or `None` if a pass runs already.
    fn begin_prune(&self) -> Option<PruneSlot<'_>> {
        self.pruning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| PruneSlot(&self.pruning))
    }
}

/// Releases the pruner slot on drop.
struct PruneSlot<'a>(&'a AtomicBool);

impl Drop for PruneSlot<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl fmt::Debug for MapStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Counts only: rows hold claim tokens, which are never printed.
        let mut s = f.debug_struct("MapStore");
        if let Ok(tables) = self.tables.try_lock() {
            s.field("runs", &tables.runs.len())
                .field("events", &tables.events.len())
                .field("graphs", &tables.graphs.len());
        }
        s.finish_non_exhaustive()
    }
}
