//! Validation passes (`docs/graphs.md`, “Diagnostic catalogue”). Every pass always runs and all
//! findings are returned; a pass never repeats a finding another pass owns (e.g. topology ignores
//! edges whose endpoints are unknown, which the edge pass already reported).
//!
//! | pass | codes |
//! | --- | --- |
//! | [`document`] | `unsupported_schema_version`, `invalid_public_id` / `reserved_id` (graph id), `invalid_policy` (graph) |
//! | [`durable`] | `non_durable_graph_value` |
//! | [`fields`] | `duplicate_state_id`, `missing_field_schema`, `invalid_schema`, `invalid_reducer`, `reducer_schema_mismatch`, `invalid_field_default`, `ambiguous_list_write` |
//! | [`outputs`] | `unknown_output_source`, `invalid_schema`, `incompatible_output_schema` |
//! | [`nodes`] | `missing_node_implementation`, `unsupported_node_implementation`, `node_module_not_loaded`, `invalid_node_config_schema`, `invalid_node_config`, `invalid_policy` (node) |
//! | [`edges`] | endpoint, source-list and guard codes |
//! | [`branches`] | branch codes, `reserved_id` (group names) and `unguarded_branch_edge` |
//! | [`topology`] | `no_entrypoint`, `unreachable_node`, `no_terminal_edge`, `dead_end_node` |
//! | [`cycles`] | `unbounded_cycle`, `unguarded_cycle` |
//! | [`orphans`] | `orphaned_field` |
//!
//! Every collection id is checked by the pass of its collection (`reserved_id`,
//! `invalid_public_id`). Every diagnostic carries a public id: the element's, or the graph's
//! for document-level findings.

pub mod branches;
pub mod cycles;
pub mod document;
pub mod durable;
pub mod edges;
pub mod fields;
pub mod nodes;
pub mod orphans;
pub mod outputs;
pub mod schema_compat;
pub mod topology;
mod wiring;

use std::sync::LazyLock;

use regex::Regex;

use super::codes;
use super::compile::{CompileOptions, NodeSchemas};
use super::diagnostic::{fill_public_ids, Diagnostic};
use super::document::GraphDocument;
use crate::model::ids::MAX_ID_BYTES;

/// Runs every pass over `doc` (already materialized when publishing). `schemas` holds the
/// config schemas of the implementations `doc` names.
#[must_use]
pub fn validate(
    doc: &GraphDocument,
    schemas: &NodeSchemas,
    options: CompileOptions,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    document::check(doc, options, &mut out);
    durable::check(doc, &mut out);
    fields::check(doc, &mut out);
    outputs::check(doc, &mut out);
    nodes::check(doc, schemas, &mut out);
    edges::check(doc, &mut out);
    branches::check(doc, &mut out);
    topology::check(doc, &mut out);
    cycles::check(doc, options, &mut out);
    orphans::check(doc, &mut out);
    fill_public_ids(&mut out, &doc.id);
    out
}

static PUBLIC_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^[A-Za-z0-9][A-Za-z0-9_-]*$").expect("the public id pattern is a valid literal")
});

static IMPLEMENTATION_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^[A-Za-z0-9_][A-Za-z0-9_.:/-]*$")
        .expect("the implementation name pattern is a valid literal")
});

/// Whether `id` is a valid public id: `^[A-Za-z0-9][A-Za-z0-9_-]*$`, at most 255 bytes.
#[must_use]
pub fn public_id_ok(id: &str) -> bool {
    id.len() <= MAX_ID_BYTES && PUBLIC_ID.is_match(id)
}

/// Whether `name` is a well-formed node implementation name: at most 255 bytes of ASCII
/// letters, digits and `_ . : / -`, not starting with punctuation other than `_`
/// (e.g. `std.set`, `billing::charge`).
#[must_use]
pub fn implementation_name_ok(name: &str) -> bool {
    name.len() <= MAX_ID_BYTES && IMPLEMENTATION_NAME.is_match(name)
}

/// Reports `reserved_id` for a `$`-prefixed id and `invalid_public_id` for any other
/// malformed id. Returns whether the id is valid.
pub(crate) fn check_public_id(id: &str, path: &str, out: &mut Vec<Diagnostic>) -> bool {
    if id.starts_with('$') {
        out.push(
            Diagnostic::error(
                codes::RESERVED_ID,
                path,
                format!("{} is reserved", shorten(id)),
            )
            .with_id(id),
        );
        false
    } else if !public_id_ok(id) {
        let reason = if id.len() > MAX_ID_BYTES {
            format!("is {} bytes long; the maximum is {MAX_ID_BYTES}", id.len())
        } else {
            "must match ^[A-Za-z0-9][A-Za-z0-9_-]*$".to_owned()
        };
        out.push(
            Diagnostic::error(
                codes::INVALID_PUBLIC_ID,
                path,
                format!("{} is not a valid public id: {reason}", shorten(id)),
            )
            .with_id(id),
        );
        false
    } else {
        true
    }
}

/// Quotes `text` for a message, cutting it at 64 characters so an oversized id cannot blow
/// up every message that mentions it.
pub(crate) fn shorten(text: &str) -> String {
    const LIMIT: usize = 64;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}
