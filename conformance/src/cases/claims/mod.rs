//! Claims (`docs/claim-order.md`; scenarios 5, 100–123 and 128–133 of `docs/scenarios.md`): ready
//! and expired candidates, TTL strictness, selection order, class reservation, preference, limits,
//! and attempts that end in poison.

mod basics;
mod lease_run;
mod poison;
mod selection;

pub use basics::*;
pub use lease_run::*;
pub use poison::*;
pub use selection::*;
