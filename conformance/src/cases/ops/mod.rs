//! The operation registry families. They run for every harness that declares
//! [`crate::Capabilities::ops_registry`] and are skipped (and reported as skipped) for the
//! others, except [`declared`], which checks the declaration itself on every store.
//!
//! * [`declared`] — the registry is offered exactly when declared.
//! * [`states`] — every cell of the state machine, one named case per cell.
//! * [`lifecycle`] — what a record holds over its life: times, outcomes, progress,
//!   completion sequences, collection, admission, retention, listing, the completion watch.
//! * [`owners`] — owner scoping and retirement.
//! * [`bad_input`] — typed refusals that write nothing, and awkward values that round-trip.
//! * [`races`] — real concurrency: one winner per transition, exact admission, gap-free
//!   completion sequences.
//! * [`durability`] — everything is there after reopening the store.
//! * [`model`] — random histories against the memory registry.

pub mod bad_input;
pub mod declared;
pub mod durability;
pub mod lifecycle;
pub mod model;
pub mod owners;
pub mod races;
pub mod states;

mod prelude {
    pub(crate) use docket_core::ops::{
        CompletedOperation, CompletionSeq, OperationAction, OperationCursor, OperationId,
        OperationKind, OperationLifecycleSnapshot, OperationQuery, OperationResult,
        OperationSource, OperationSpec, OperationStatus, OperationTerminalOutcome,
        OperationTransition, OpsError, OpsErrorKind as E, OpsLifecycleRegistry, SessionId,
    };

    pub(crate) use crate::env::Env;
    pub(crate) use crate::fixtures::{op_id, op_spec, ops_ok, session, t};
}
