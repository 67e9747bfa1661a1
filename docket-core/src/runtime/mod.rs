//! The pure moment loop (spec §5).

pub mod moment;

pub use moment::{Disposition, Moment, Mutation, ParkKind, ParkReason, PendingAttempt};
