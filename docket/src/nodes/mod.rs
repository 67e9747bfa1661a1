//! The standard node library (`std.*`): small, deterministic nodes that make JSON graphs
//! useful from the CLI without writing Rust. Each has a config schema with defaults, which
//! publication materializes into the stored graph.
//!
//! | name | config (defaults) | does |
//! | --- | --- | --- |
//! | `std.set` | `values: {}` | writes `values` |
//! | `std.increment` | `field` (required), `by: 1` | writes `field = state[field] + by` (unset counts as 0) |
//! | `std.echo` | `copy: {}` (source → destination) | copies present fields |
//! | `std.fail_times` | `times: 2`, `values: {}` | a retryable error while `attempt ≤ times`, then writes `values` |
//! | `std.approval` | `field` (required), `interrupt_id` (default: the node id), `schema` | interrupts until `field` holds a value, then passes |
//! | `std.sleep_ms` | `ms: 100`, `values: {}` | sleeps `ms` (node work, bounded by the attempt timeout), then writes `values` |
//!
//! `std.fail_times` depends only on the attempt number, so it behaves the same in every
//! process and after every crash; give its node a `retry` policy with `max_attempts > times`.

mod approval;
mod basic;
mod fail_times;
mod sleep;

use docket_core::node::NodeRegistry;
use docket_core::runtime::RuntimeError;
use serde_json::Value;

use docket_core::model::ValueMap;

pub use approval::Approval;
pub use basic::{Echo, Increment, Set};
pub use fail_times::FailTimes;
pub use sleep::SleepMs;

/// Adds every `std.*` node to `registry`.
///
/// # Errors
/// When one of the names is already registered.
pub fn register_std(registry: &mut NodeRegistry) -> Result<(), RuntimeError> {
    registry.register("std.set", Set)?;
    registry.register("std.increment", Increment)?;
    registry.register("std.echo", Echo)?;
    registry.register("std.fail_times", FailTimes)?;
    registry.register("std.approval", Approval)?;
    registry.register("std.sleep_ms", SleepMs)?;
    Ok(())
}

/// A registry holding exactly the standard library.
#[must_use]
pub fn registry() -> NodeRegistry {
    let mut registry = NodeRegistry::new();
    // The names are fixed and distinct, and the registry is empty: this cannot fail.
    register_std(&mut registry).expect("std node names are unique");
    registry
}

/// `config.values` as a map (empty when absent).
fn values(config: &ValueMap) -> ValueMap {
    config
        .get("values")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}
