//! Handing a claim back (`docs/state-machines.md`, “Operational transitions”;
//! `docs/storage-contract.md`, “Handing claims back”; scenarios 5, 113–119 and 127 of
//! `docs/scenarios.md`): release, abandon (poisoning and not) and poison recovery.

mod abandon;
mod recovery;
mod release;

pub use abandon::*;
pub use recovery::*;
pub use release::*;
