//! What the compiler needs to know about node implementations.

use serde_json::Value;

/// Resolves registered node implementation names to their config schemas.
///
/// The node registry implements this; the compiler asks once per distinct implementation per
/// compile.
pub trait NodeContracts: Send + Sync {
    /// The raw config schema of `implementation` (see [`super::Schema`]), or `None` when no
    /// implementation is registered under that name.
    fn config_schema(&self, implementation: &str) -> Option<Value>;
}

/// Contracts with no registered implementation: every node is `node_module_not_loaded`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoContracts;

impl NodeContracts for NoContracts {
    fn config_schema(&self, _implementation: &str) -> Option<Value> {
        None
    }
}
