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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::graph::Schema;
    use crate::node::{FnNode, NodeOutcome};

    fn noop() -> FnNode<
        impl Fn(
                &crate::model::ValueMap,
                &crate::model::ValueMap,
                &crate::node::NodeContext,
            ) -> NodeOutcome
            + Send
            + Sync
            + 'static,
    > {
        FnNode::new(|_, _, _| NodeOutcome::Update(crate::model::ValueMap::new()))
    }

    #[test]
    fn names_are_unique_and_non_empty() {
        let mut registry = NodeRegistry::new();
        registry.register("std.set", noop()).expect("first");
        let err = registry.register("std.set", noop()).expect_err("duplicate");
        assert_eq!(err.kind, ErrorKind::InvalidOptions);
        assert!(registry.register("", noop()).is_err());
        assert!(registry.register("a\nb", noop()).is_err());
        assert_eq!(registry.names().collect::<Vec<_>>(), vec!["std.set"]);
        assert!(registry.get("std.set").is_some());
        assert!(registry.get("other").is_none());
    }

    #[test]
    fn the_registry_answers_the_compiler_with_config_schemas() {
        let schema = json!({"type": "object", "fields": {"n": {"type": "integer", "default": 1}}});
        let registry = NodeRegistry::new()
            .with("n", noop().with_config_schema(schema.clone()))
            .expect("register")
            .with("open", noop())
            .expect("register");
        assert_eq!(NodeContracts::config_schema(&registry, "n"), Some(schema));
        assert_eq!(NodeContracts::config_schema(&registry, "missing"), None);
        let open = NodeContracts::config_schema(&registry, "open").expect("schema");
        let parsed = Schema::parse(&open).expect("the default schema is valid");
        assert!(parsed.validate(&json!({"anything": [1, 2]})).is_ok());
        assert!(format!("{registry:?}").contains("open"));
    }
}
