//! The lifecycle composer (`docs/runs-and-moments.md`, “The lifecycle”): the only code that turns
//! moments into store transitions.
//!
//! * [`Lifecycle::start`] initializes a run with its first wake from the *unclaimed* mapping of
//!   its disposition (a first moment that parks externally or terminally is refused before the
//!   store is called).
//! * [`Lifecycle::commit_moment`] commits a claim holder's moment under the double fence, with
//!   the schedule from the *claimed* mapping.
//! * [`Lifecycle::signal`] runs a pure mutation against a freshly fetched run and commits it
//!   unclaimed at the fetched seq, re-fetching and re-evaluating on a lost race at most
//!   [`MAX_SIGNAL_ATTEMPTS`] times in all.
//!
//! After every durable commit, and only then, a [`Checkpoint`] is built and handed to each
//! [`CheckpointObserver`] on its own task.
//!
//! The disposition-to-schedule mapping itself is [`crate::runtime::Disposition::claimed_schedule`]
//! and [`crate::runtime::Disposition::unclaimed_wake`]; this module is where it is applied.

mod bulk;
mod composer;
mod error;
mod observer;
mod telemetry;

pub use crate::runtime::Checkpoint;
pub use composer::{commit_moment, signal, start, Lifecycle, Signalled, MAX_SIGNAL_ATTEMPTS};
pub use error::{LifecycleError, SignalError};
pub use observer::{CheckpointObserver, ObserverError};
