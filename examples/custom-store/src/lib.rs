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
//!
//! It opens like every store: [`MapStore::open`] takes [`MapOptions`], and
//! [`MapStore::connect`] takes a URL, here `map://` with the one option `ops_retention`
//! (`map://?ops_retention=16`; see [`parse_url`]).
//!
//! ## Where things are
//!
//! The source files have the same roles, under the same names, as those of the SQLite,
//! PostgreSQL and Redis stores (`cargo xtask layout` checks it), so reading one store teaches
//! where to look in the others:
//!
//! | file | role |
//! | --- | --- |
//! | `store.rs` | the [`MapStore`] value: `open`, `connect`, `reopen`, the lock, the pruner slot |
//! | `options.rs` | [`MapOptions`] and the `map://` URL ([`parse_url`]) |
//! | `traits.rs` | the `RunStore` and `GraphStore` impls: validate with the rules, lock once, call one function below |
//! | `transitions.rs` | `initialize` and the two commits, planned by the transition kernel |
//! | `claims.rs` | `claim_due`, release, abandon, poison recovery |
//! | `reads.rs` | runs, run pages and events |
//! | `graphs.rs` | graph versions |
//! | `prune.rs` | the retention pass |
//! | `ops/` | the operation registry (`mod.rs`) over its rows (`rows.rs`) |
//! | `tables.rs` | the rows themselves: this store's schema |
//! | `codec.rs` | documents and events as JSON text, verified on every read |
//! | `error.rs` | this store's own failures as `StoreError` / `OpsError` |
//! | `wakeups.rs` | why this store sends no wake hints |
//! | `testing.rs` | the conformance harness, [`MapHarness`] |

mod claims;
mod codec;
mod error;
mod graphs;
mod ops;
mod options;
mod prune;
mod reads;
mod store;
mod tables;
mod testing;
mod traits;
mod transitions;
mod wakeups;

pub use options::{parse_url, MapOptions, SCHEME, URL_OPTIONS};
pub use store::MapStore;
pub use testing::MapHarness;
