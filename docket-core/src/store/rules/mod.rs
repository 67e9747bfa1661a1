//! Pure decision tables every backend shares (`docs/design-decisions.md`,
//! “Stores encode conditions, never policy”): backends encode conditions, they never re-decide
//! policy.

pub mod chain;
pub mod claim_order;
pub mod claim_pass;
pub mod effects;
pub mod events;
pub mod graph;
pub mod queries;
pub mod tenant_fair;
pub mod transition;
