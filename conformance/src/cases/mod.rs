//! The cases, by family. Every case is a `pub async fn(&Env)` that gets a fresh, isolated
//! store, passes its own instants (offsets from [`crate::fixtures::T0_MS`]), asserts with
//! panics, and proves after every rejected write that the store is byte-identical to before
//! ([`Env::rejected`](crate::Env::rejected)).

mod prelude;

pub mod bad_input;
pub mod batches;
pub mod bulk_start;
pub mod claims;
pub mod drains;
pub mod events;
pub mod fairness;
pub mod graphs;
pub mod handback;
pub mod model;
pub mod ops;
pub mod pruning;
pub mod races;
pub mod reads;
pub mod scopes;
pub mod transitions;
pub mod wakeups;

pub use ops::{
    bad_input as ops_bad_input, declared as ops_declared, durability as ops_durability,
    lifecycle as ops_lifecycle, model as ops_model, owners as ops_owners, races as ops_races,
    states as ops_states,
};
