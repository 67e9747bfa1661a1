//! The operation registry: the durable record of the long-lived operations a session owns
//! (a wait on a detached job, a background tool call, ...), each moving through one state
//! machine with exactly one winner per transition.
//!
//! * Identities: [`OperationId`] (with the deterministic
//!   [`OperationId::for_detached_job_wait`]) and [`SessionId`], the owner.
//! * Values: [`OperationSpec`] (what is registered), [`OperationKind`], [`OperationSource`],
//!   [`OperationStatus`], [`OperationTerminalOutcome`] with [`OperationResult`], the read
//!   model [`OperationLifecycleSnapshot`], [`CompletionSeq`], pages.
//! * [`OpsLifecycleRegistry`], the trait every backend implements on the same store value
//!   that implements [`crate::store::RunStore`] (reach it with
//!   [`crate::store::RunStore::ops_registry`]), and [`OpsError`].
//! * [`rules`]: the state machine as a table and every other decision, shared by all
//!   backends.
//!
//! # The state machine
//!
//! | from \ action | start | fail | abort | cancel | request retire | mark retired | complete | terminate | progress |
//! |---|---|---|---|---|---|---|---|---|---|
//! | Provisioning | Running | Failed | Aborted | Cancelled | ✗ | ✗ | ✗ | Terminated | ✗ |
//! | Running | ✗ | Failed | ✗ | Cancelled | Retiring | Retired | Completed | Terminated | Running, +1 |
//! | Retiring | ✗ | Failed | ✗ | Cancelled | ✗ | Retired | Completed | Terminated | Retiring, +1 |
//! | terminal | ✗ | ✗ | ✗ | ✗ | ✗ | ✗ | ✗ | (skipped) | ✗ |
//!
//! ✗ is `InvalidTransition` carrying the current status; any action on an absent record is
//! `NotFound`; registering a present id (terminal or not) is `AlreadyRegistered`.

pub mod error;
pub mod ids;
pub mod kind;
pub mod outcome;
pub mod query;
pub mod registry;
pub mod rules;
pub mod snapshot;
pub mod spec;
pub mod status;
pub mod watch;

pub use error::{OpsError, OpsErrorKind};
pub use ids::{OperationId, SessionId};
pub use kind::{OperationKind, OperationSource, MAX_CUSTOM_KIND_BYTES};
pub use outcome::{OperationResult, OperationTerminalOutcome, OperationTransition};
pub use query::{OperationCursor, OperationPage, OperationQuery};
pub use registry::OpsLifecycleRegistry;
pub use rules::classify_transition_idempotence;
pub use snapshot::{CompletedOperation, CompletionSeq, OperationLifecycleSnapshot};
pub use spec::OperationSpec;
pub use status::{OperationAction, OperationPublicResultClass, OperationStatus};
