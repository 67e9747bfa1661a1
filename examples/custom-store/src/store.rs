//! [`MapStore`]: the value that implements the store traits, its constructors, the one lock
//! every operation takes, and the single pruner slot.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use docket_core::ops::rules::Retention;
use docket_core::store::StoreError;

use crate::error::poisoned_lock;
use crate::options::{parse_url, MapOptions};
use crate::tables::Tables;

/// An in-process store over `Mutex<BTreeMap>`s. See the [crate docs](crate).
#[derive(Default)]
pub struct MapStore {
    /// Shared by the values [`MapStore::reopen`] makes.
    tables: Arc<Mutex<Tables>>,
    pruning: AtomicBool,
    /// Terminal registry records kept per owner.
    pub(crate) retention: Retention,
}

impl MapStore {
    /// An empty store with the default options.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with `options`.
    ///
    /// Nothing outside the process is opened, so this neither waits nor fails today; it
    /// returns a `Result` to keep the constructor shape every store has.
    ///
    /// # Errors
    /// None at present (every [`MapOptions`] value is valid).
    pub fn open(options: MapOptions) -> Result<Self, StoreError> {
        Ok(MapStore {
            retention: options.ops_retention,
            ..Self::default()
        })
    }

    /// An empty store with the options of a `map://` URL (see [`crate::parse_url`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL, then as [`MapStore::open`].
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::open(parse_url(url)?)
    }

    /// The options the store was opened with.
    #[must_use]
    pub fn options(&self) -> MapOptions {
        MapOptions {
            ops_retention: self.retention,
        }
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

    /// The tables, for one critical section that is never held across an `.await`.
    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, Tables>, StoreError> {
        self.tables.lock().map_err(|_| poisoned_lock())
    }

    /// Claims the single pruner slot, or `None` if a pass runs already.
    pub(crate) fn begin_prune(&self) -> Option<PruneSlot<'_>> {
        self.pruning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| PruneSlot(&self.pruning))
    }
}

/// Releases the pruner slot on drop.
pub(crate) struct PruneSlot<'a>(&'a AtomicBool);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_opens_with_the_url_options_and_refuses_a_bad_url() {
        let store = MapStore::connect("map://?ops_retention=7").expect("valid url");
        assert_eq!(store.options().ops_retention.max_terminal(), 7);
        assert_eq!(store.reopen().options(), store.options());
        assert_eq!(
            MapStore::connect("map://").expect("valid url").options(),
            MapOptions::default()
        );
        assert!(matches!(
            MapStore::connect("map://?ops_retention=0"),
            Err(StoreError::InvalidArgument { .. })
        ));
    }
}
