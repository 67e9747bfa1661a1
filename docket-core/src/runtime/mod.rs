//! The pure moment loop (`docs/runs-and-moments.md`, “The moment loop”).
//!
//! Storage-free and shared by every driver (the worker's vehicles and the inline driver): the
//! runtime never commits, it *proposes* moments.
//!
//! * [`propose_init`] initializes a run ([`build_initial_run`] builds it);
//! * [`plan`] decides the next commit boundary from committed state, [`settle`] turns a plan
//!   and its attempt results into a [`Moment`]; [`propose_advance`] = plan → execute → settle;
//! * [`resolve_interrupt`] and [`cancel_run`] are the pure signal mutations;
//! * [`Moment::yield_for`] narrows a continuing moment at a drain-budget boundary.
//!
//! Time and ids enter only through [`RuntimeConfig`]; task ids, idempotency keys and input
//! hashes derive from committed state alone, so re-planning is byte-identical.

mod activation;
mod advance;
mod barrier;
mod checkpoint;
mod classify;
pub mod config;
mod error;
mod execution_policy;
mod init;
mod input;
pub mod moment;
mod mutation;
mod plan;
mod retry_park;
pub mod sequencing;
mod settle;
mod state_view;
mod terminal;
#[cfg(test)]
mod testing;
mod triggers;
mod writes;
mod yield_moment;

pub use activation::{Activation, PlannedSnapshot, Superstep};
pub use advance::{propose_advance, Proposal};
pub use checkpoint::Checkpoint;
pub use classify::{classify, AttemptOutcome, AttemptResult, Class};
pub use config::{IdGenerator, IdKind, RandomIds, RuntimeConfig, SequentialIds};
pub use error::{ErrorKind, Phase, RuntimeError};
pub use execution_policy::check_execution_policy;
pub use init::{build_initial_run, propose_init, Initialization};
pub use input::{input_map, validate_input};
pub use moment::{Disposition, Moment, Mutation, ParkKind, ParkReason, PendingAttempt};
pub use mutation::{cancel_run, resolve_interrupt};
pub use plan::{candidates, plan, Plan};
pub use settle::settle;
pub use state_view::state_view;
pub use yield_moment::YieldError;
