//! The four narrow ports composition is written against, and their value types.

pub mod authority;
pub mod delivery;
pub mod error;
pub mod evidence;
pub mod ids;
pub mod job;
pub mod ledger;
pub mod schedule;
