//! Node implementations by stable name.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::Node;
use crate::graph::NodeContracts;
use crate::runtime::{ErrorKind, Phase, RuntimeError};

/// Node implementations keyed by the stable names graphs use in `implementation`.
///
/// Cloning is cheap (implementations are shared).
#[derive(Clone, Default)]
pub struct NodeRegistry {
    nodes: BTreeMap<String, Arc<dyn Node>>,
}

impl fmt::Debug for NodeRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeRegistry")
            .field("names", &self.nodes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl NodeRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `node` under `name`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] when `name` is empty or already registered: names are
    /// durable graph content, so one must never silently change meaning.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        node: impl Node,
    ) -> Result<&mut Self, RuntimeError> {
        self.register_arc(name, Arc::new(node))
    }

    /// Registers a shared `node` under `name`.
    ///
    /// # Errors
    /// As [`NodeRegistry::register`].
    pub fn register_arc(
        &mut self,
        name: impl Into<String>,
        node: Arc<dyn Node>,
    ) -> Result<&mut Self, RuntimeError> {
        let name = name.into();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(RuntimeError::new(
                ErrorKind::InvalidOptions,
                Phase::Config,
                "a node name must be non-empty and free of control characters",
            ));
        }
        if self.nodes.contains_key(&name) {
            return Err(RuntimeError::new(
                ErrorKind::InvalidOptions,
                Phase::Config,
                format!("a node is already registered as {name:?}"),
            ));
        }
        self.nodes.insert(name, node);
        Ok(self)
    }

    /// Builder form of [`NodeRegistry::register`].
    ///
    /// # Errors
    /// As [`NodeRegistry::register`].
    pub fn with(mut self, name: impl Into<String>, node: impl Node) -> Result<Self, RuntimeError> {
        self.register(name, node)?;
        Ok(self)
    }

    /// The implementation registered as `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Arc<dyn Node>> {
        self.nodes.get(name).cloned()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }
}

impl NodeContracts for NodeRegistry {
    fn config_schema(&self, implementation: &str) -> Option<Value> {
        self.nodes.get(implementation).map(|n| n.config_schema())
    }
}
