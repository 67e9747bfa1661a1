//! Nodes: ids, implementations, config against the implementation's schema, and policies.

use serde_json::Value;

use super::{check_public_id, implementation_name_ok, shorten};
use crate::graph::codes;
use crate::graph::compile::NodeSchemas;
use crate::graph::diagnostic::{pointer, Diagnostic};
use crate::graph::document::{GraphDocument, NodeDecl};
use crate::graph::policy::NodePolicies;
use crate::graph::schema::SchemaType;

/// Runs the nodes pass.
pub fn check(doc: &GraphDocument, schemas: &NodeSchemas, out: &mut Vec<Diagnostic>) {
    for (id, node) in &doc.nodes {
        let path = pointer(&["nodes", id]);
        check_public_id(id, &path, out);
        implementation(id, node, &path, schemas, out);
        let (_, problems) = NodePolicies::resolve_with_problems(&node.policies);
        for problem in problems {
            let mut at = vec!["nodes", id.as_str(), "policies"];
            at.extend(problem.key.iter().map(String::as_str));
            out.push(
                Diagnostic::error(codes::INVALID_POLICY, pointer(&at), problem.reason).with_id(id),
            );
        }
    }
}

fn implementation(
    id: &str,
    node: &NodeDecl,
    path: &str,
    schemas: &NodeSchemas,
    out: &mut Vec<Diagnostic>,
) {
    let at = format!("{path}/implementation");
    let Some(name) = &node.implementation else {
        out.push(
            Diagnostic::error(
                codes::MISSING_NODE_IMPLEMENTATION,
                path,
                "node names no implementation",
            )
            .with_id(id),
        );
        return;
    };
    if !implementation_name_ok(name) {
        out.push(
            Diagnostic::error(
                codes::UNSUPPORTED_NODE_IMPLEMENTATION,
                at,
                format!(
                    "{} is not an implementation name (ASCII letters, digits and _ . : / -, \
                     at most 255 bytes)",
                    shorten(name)
                ),
            )
            .with_id(id),
        );
        return;
    }
    let schema = match schemas.by_implementation.get(name) {
        None => {
            out.push(
                Diagnostic::error(
                    codes::NODE_MODULE_NOT_LOADED,
                    at,
                    format!("no implementation is registered as {name:?}"),
                )
                .with_id(id),
            );
            return;
        }
        Some(Err(reasons)) => {
            out.push(
                Diagnostic::error(
                    codes::INVALID_NODE_CONFIG_SCHEMA,
                    at,
                    format!(
                        "the config schema of {name:?} is malformed: {}",
                        reasons.join("; ")
                    ),
                )
                .with_id(id),
            );
            return;
        }
        Some(Ok(schema)) => schema,
    };
    if !matches!(schema.ty, SchemaType::Object { .. } | SchemaType::Map) {
        out.push(
            Diagnostic::error(
                codes::INVALID_NODE_CONFIG_SCHEMA,
                at,
                format!(
                    "the config schema of {name:?} describes a {}, but a config is a map",
                    schema.ty.name()
                ),
            )
            .with_id(id),
        );
        return;
    }
    if let Err(reasons) = schema.validate(&Value::Object(node.config.clone())) {
        out.push(
            Diagnostic::error(
                codes::INVALID_NODE_CONFIG,
                format!("{path}/config"),
                format!(
                    "config fails the schema of {name:?}: {}",
                    reasons.join("; ")
                ),
            )
            .with_id(id),
        );
    }
}
