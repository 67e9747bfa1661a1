//! Wake hints: this store offers none.
//!
//! A hint only saves latency — the engine polls for due runs, and the registry's completion
//! watch polls for ended operations, whether or not a store sends hints — so a store may
//! leave them out and stay correct. This one does, to keep the example about rows and rules:
//! an in-process store could send them (a broadcast channel per kind, sent after each write
//! whose plan says `wake_due`, as the SQLite store does), but every write here would then
//! need to say whether it made a run due, which nothing in this store needs otherwise.
//!
//! The harness declares the same answer ([`OFFERED`]), so the suite's wakeup cases assert
//! that [`subscribe`] gives no stream rather than skipping.

use docket_core::store::Wakeups;

/// Whether this store sends wake hints (what the harness declares in its capabilities).
pub(crate) const OFFERED: bool = false;

/// The answer of [`docket_core::store::RunStore::wakeups`]: no stream, ever.
pub(crate) fn subscribe() -> Option<Wakeups> {
    None
}
