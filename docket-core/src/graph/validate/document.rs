//! Document-level checks: schema version, graph id and graph policies.

use super::check_public_id;
use crate::graph::codes;
use crate::graph::compile::CompileOptions;
use crate::graph::diagnostic::Diagnostic;
use crate::graph::document::{GraphDocument, SCHEMA_VERSION};
use crate::graph::policy::graph_max_supersteps;

/// Runs the document pass.
pub fn check(doc: &GraphDocument, options: CompileOptions, out: &mut Vec<Diagnostic>) {
    if doc.schema_version != SCHEMA_VERSION {
        out.push(Diagnostic::error(
            codes::UNSUPPORTED_SCHEMA_VERSION,
            "/schema_version",
            format!(
                "schema_version {} is not supported (expected {SCHEMA_VERSION})",
                doc.schema_version
            ),
        ));
    }
    check_public_id(&doc.id, "/id", out);
    if let Err(reason) = graph_max_supersteps(&doc.policies) {
        out.push(
            Diagnostic::error(codes::INVALID_POLICY, "/policies/max_supersteps", reason)
                .with_id(&doc.id),
        );
    }
    if options.max_supersteps == Some(0) {
        // A zero bound would fail every run before its first step; it is a host mistake,
        // reported against the policy it stands in for.
        out.push(Diagnostic::error(
            codes::INVALID_POLICY,
            "/policies/max_supersteps",
            "the compile option max_supersteps must be a positive integer",
        ));
    }
}
