//! The operation registry's decision tables, shared by every backend: the state machine
//! ([`table`]), which refusals a caller may treat as success ([`idempotence`]), input
//! validation ([`validate`]), registration and admission ([`admission`]), retention
//! ([`retention`]), listing order and pages ([`pages`]), record invariants ([`record`]) and,
//! for the backends that decide in Rust, applying a transition to a record ([`mod@apply`]).
//!
//! Backends encode these conditions; they never re-decide them. A backend that decides in
//! Rust calls these functions inside its critical section or transaction; a backend that
//! decides in one statement or script renders its conditions from [`table::TABLE`] (or is
//! tested against it), and the conformance suite compares every backend with the memory
//! registry, which calls these functions and nothing else.
//!
//! # Check order of every write
//!
//! 1. Arguments ([`validate`]): `InvalidArgument`, before anything is read.
//! 2. The owner's retired flag: `OwnerRetired`.
//! 3. The record: `NotFound` when absent; for a registration `AlreadyRegistered` when
//!    present, then the admission limit (`MaxConcurrentExceeded`).
//! 4. The from-set of the action ([`table`]): `InvalidTransition` with the current status.
//!
//! A refused write writes nothing.

pub mod admission;
pub mod apply;
pub mod idempotence;
pub mod pages;
pub mod record;
pub mod retention;
pub mod table;
pub mod validate;

pub use admission::{check_admission, check_registration, RegistrationFacts};
pub use apply::{apply, registered, termination, Applied};
pub use idempotence::classify_transition_idempotence;
pub use pages::{is_after, listing_order, operation_page, page_of};
pub use record::check_record;
pub use retention::{Retention, DEFAULT_RETAINED_TERMINAL};
pub use table::{check_from, rule, TransitionRule, TABLE};
pub use validate::{
    validate_limit, validate_owner, validate_owner_reason, validate_query, validate_registration,
    validate_target, validate_transition, MAX_CONTENT_BYTES, MAX_LABEL_BYTES, MAX_REASON_BYTES,
};
