//! Chaos testing for Docket, in process: seeded store faults under real engine workers, and
//! an oracle that reads everything back and proves nothing acknowledged was lost, nothing
//! was committed twice and no fenced-out holder's write was accepted.
//!
//! The pieces:
//!
//! * [`fault::FaultLayer`] — a [`docket_core::store::StoreLayer`] injecting delays, errors
//!   before applying, ambiguous replies (after applying, or for requests that never arrived)
//!   and commits stalled until their claim is taken over, each decided by a seed;
//! * [`journal::Journal`] — the append-only record of minted claims, claimed commits (token
//!   digest, seq, events, what the store did, what the caller heard), the ack log, and node
//!   side effects by idempotency key;
//! * [`observer::AckObserver`] — writes the engine's acknowledgements into the ack log;
//! * [`oracle::check`] — the verdict ([`report::Report`], with its headline and `is_safe`);
//! * [`workload::run`] — workers, runs, the human playing interrupts, a heal phase, the
//!   oracle.
//!
//! * [`mutant`] — deliberately broken layers the oracle must catch;
//! * [`process`] — the same oracle over worker *processes*: kills, freezes, server
//!   restarts and cut connections (`cargo xtask chaos`).
//!
//! See the crate README for the fault model and what the oracle can and cannot see.

pub mod fault;
pub mod journal;
pub mod mutant;
pub mod observer;
pub mod oracle;
pub mod process;
pub mod report;
pub mod workload;

pub use fault::{FaultCounts, FaultLayer, FaultPlan};
pub use journal::{Journal, JournalSnapshot};
pub use oracle::{check, OracleInput};
pub use report::Report;
pub use workload::{run, Outcome, Stack, Workload};
