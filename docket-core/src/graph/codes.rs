//! The diagnostic catalogue (`docs/graphs.md`, “Diagnostic catalogue”): every code the compiler can
//! emit.
//!
//! Codes are stable machine-readable strings; hosts match on them, so they never change once
//! published. [`ERRORS`] and [`WARNINGS`] list the whole catalogue, which lets tests prove every
//! code is reachable.

macro_rules! codes {
    ($list:ident, $what:literal: $($(#[$doc:meta])* $name:ident = $code:literal;)*) => {
        $( $(#[$doc])* pub const $name: &str = $code; )*
        #[doc = concat!("Every ", $what, " code, in catalogue order.")]
        pub const $list: &[&str] = &[$($name),*];
    };
}

codes! { ERRORS, "error":
    /// `schema_version` is not 1.
    UNSUPPORTED_SCHEMA_VERSION = "unsupported_schema_version";
    /// An id does not match `^[A-Za-z0-9][A-Za-z0-9_-]*$` or is longer than 255 bytes.
    INVALID_PUBLIC_ID = "invalid_public_id";
    /// An id starts with `$`, the namespace of reserved endpoints.
    RESERVED_ID = "reserved_id";
    /// The document itself is malformed (not a map, unknown top-level key, `name` not a
    /// string, ...). Only reachable when reading JSON (see [`super::ingest`]).
    INVALID_DOCUMENT = "invalid_document";
    /// A JSON object of the document names the same key twice (e.g. two nodes `a`): JSON
    /// parsers would silently keep one. Only reachable when reading JSON.
    DUPLICATE_KEY = "duplicate_key";
    /// An id is both an input and a state field.
    DUPLICATE_STATE_ID = "duplicate_state_id";
    /// A graph or node policy is malformed (one diagnostic per policy problem).
    INVALID_POLICY = "invalid_policy";
    /// Config, policies, metadata or a default holds a `$`-prefixed key or nests too deep.
    NON_DURABLE_GRAPH_VALUE = "non_durable_graph_value";
    /// An input or field record is structurally malformed (reading JSON).
    INVALID_FIELD = "invalid_field";
    /// An input or field declares no schema.
    MISSING_FIELD_SCHEMA = "missing_field_schema";
    /// A value schema does not parse.
    INVALID_SCHEMA = "invalid_schema";
    /// A reducer does not parse (unknown type or badly typed option).
    INVALID_REDUCER = "invalid_reducer";
    /// The reducer cannot fold values of the field's schema type.
    REDUCER_SCHEMA_MISMATCH = "reducer_schema_mismatch";
    /// A declared default fails its schema.
    INVALID_FIELD_DEFAULT = "invalid_field_default";
    /// An output, node or edge record is structurally malformed (reading JSON).
    INVALID_RECORD = "invalid_record";
    /// An output projects an id that is neither an input nor a field.
    UNKNOWN_OUTPUT_SOURCE = "unknown_output_source";
    /// An output schema cannot hold every value of its source's schema.
    INCOMPATIBLE_OUTPUT_SCHEMA = "incompatible_output_schema";
    /// A node names no implementation.
    MISSING_NODE_IMPLEMENTATION = "missing_node_implementation";
    /// A node's implementation name is malformed.
    UNSUPPORTED_NODE_IMPLEMENTATION = "unsupported_node_implementation";
    /// No implementation is registered under the node's implementation name.
    NODE_MODULE_NOT_LOADED = "node_module_not_loaded";
    /// The implementation's config schema does not parse or does not describe a map.
    INVALID_NODE_CONFIG_SCHEMA = "invalid_node_config_schema";
    /// The node's effective config fails its implementation's config schema.
    INVALID_NODE_CONFIG = "invalid_node_config";
    /// An edge source is not a node (nor `$start`).
    UNKNOWN_EDGE_SOURCE = "unknown_edge_source";
    /// An edge target is not a node (nor `$finish`).
    UNKNOWN_EDGE_TARGET = "unknown_edge_target";
    /// `$start` used as a target or inside a source list.
    INVALID_START_ENDPOINT = "invalid_start_endpoint";
    /// `$finish` used as a source.
    INVALID_FINISH_ENDPOINT = "invalid_finish_endpoint";
    /// A list-form `from` is empty.
    EMPTY_EDGE_SOURCES = "empty_edge_sources";
    /// A list-form `from` names a source twice.
    DUPLICATE_EDGE_SOURCE = "duplicate_edge_source";
    /// A guard expression is malformed.
    INVALID_GUARD = "invalid_guard";
    /// A guard reference path is malformed.
    INVALID_GUARD_PATH = "invalid_guard_path";
    /// A guard mentions an id that is neither an input nor a field.
    UNKNOWN_GUARD_FIELD = "unknown_guard_field";
    /// A branch group lists an edge that does not exist.
    UNKNOWN_BRANCH_EDGE = "unknown_branch_edge";
    /// A branch group lists an edge whose sources do not include the node.
    BRANCH_EDGE_SOURCE_MISMATCH = "branch_edge_source_mismatch";
    /// A node's branch groups list the same edge twice.
    DUPLICATE_BRANCH_EDGE = "duplicate_branch_edge";
    /// Nodes or edges exist but no edge leaves `$start`.
    NO_ENTRYPOINT = "no_entrypoint";
    /// A node can never be activated from `$start`.
    UNREACHABLE_NODE = "unreachable_node";
    /// Two runtime elements share one runtime id.
    RUNTIME_ID_COLLISION = "runtime_id_collision";
    /// A runtime element refers to a channel that does not exist.
    MISSING_RUNTIME_CHANNEL = "missing_runtime_channel";
    /// The lowered graph breaks an internal invariant.
    LOWERING_INVARIANT_FAILED = "lowering_invariant_failed";
}

codes! { WARNINGS, "warning":
    /// An append/union field whose list items are themselves lists: a list write is
    /// ambiguous (one item or many?).
    AMBIGUOUS_LIST_WRITE = "ambiguous_list_write";
    /// An edge in a branch group has no guard, so it always fires.
    UNGUARDED_BRANCH_EDGE = "unguarded_branch_edge";
    /// A cycle with no effective `max_supersteps` bound.
    UNBOUNDED_CYCLE = "unbounded_cycle";
    /// A bounded cycle none of whose edges is guarded.
    UNGUARDED_CYCLE = "unguarded_cycle";
    /// Nodes exist but no edge reaches `$finish`.
    NO_TERMINAL_EDGE = "no_terminal_edge";
    /// A start-reachable node that cannot reach `$finish`.
    DEAD_END_NODE = "dead_end_node";
    /// A state field no output, guard or node config mentions.
    ORPHANED_FIELD = "orphaned_field";
}

/// Whether `code` is in the catalogue.
#[must_use]
pub fn is_known(code: &str) -> bool {
    ERRORS.contains(&code) || WARNINGS.contains(&code)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn catalogue_codes_are_unique_snake_case() {
        let all: Vec<&str> = ERRORS.iter().chain(WARNINGS).copied().collect();
        let unique: BTreeSet<&str> = all.iter().copied().collect();
        assert_eq!(unique.len(), all.len());
        assert!(all
            .iter()
            .all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_')));
        assert!(is_known("unbounded_cycle") && !is_known("made_up"));
    }
}
