//! Transitions (`docs/storage-contract.md`, “Transitions”): validation order, identity, fences,
//! schedules, counter resets, event idempotency and conflicts, and the status matrix.

mod claimed;
mod initialize;
mod schedules;
mod unclaimed;

pub use claimed::*;
pub use initialize::*;
pub use schedules::*;
pub use unclaimed::*;
