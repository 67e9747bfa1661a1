//! Claims (spec §4.2 `claim_due`, §9.1 #5, §9.5 #100–#123, §9.6 #128–#133): ready and expired
//! candidates, TTL strictness, selection order, class reservation, preference, limits, and
//! attempts that end in poison.

mod basics;
mod poison;
mod selection;

pub use basics::*;
pub use poison::*;
pub use selection::*;
