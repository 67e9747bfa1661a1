//! Handing a claim back (spec §3.3, §4.2, §9.1 #5, §9.5 #113–#119, #127): refresh, release,
//! abandon (poisoning and not) and poison recovery.

mod abandon;
mod recovery;
mod refresh_release;

pub use abandon::*;
pub use recovery::*;
pub use refresh_release::*;
