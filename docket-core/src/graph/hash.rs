//! Canonical encoding and content hash of an effective graph document (`docs/design-decisions.md`,
//! “Content hash over canonical JSON”).
//!
//! The stored bytes of a graph version are the canonical JSON of its effective document. The
//! hash is the lowercase hex SHA-256 of a version tag followed by those bytes, so a future
//! encoding can never collide with this one.

use super::document::GraphDocument;
use crate::model::value::{canonical_json, sha256_hex};
use crate::model::GraphHash;

/// Prefix hashed before the canonical bytes.
pub const HASH_VERSION_TAG: &[u8] = b"docket.graph.v1\n";

/// Canonical JSON bytes of `doc` (what stores keep).
#[must_use]
pub fn canonical_bytes(doc: &GraphDocument) -> Vec<u8> {
    canonical_json(&doc.to_value())
}

/// The content hash of already-canonical `bytes`.
#[must_use]
pub fn hash_bytes(bytes: &[u8]) -> GraphHash {
    let mut tagged = Vec::with_capacity(HASH_VERSION_TAG.len() + bytes.len());
    tagged.extend_from_slice(HASH_VERSION_TAG);
    tagged.extend_from_slice(bytes);
    // A 64-character hex digest always satisfies the identifier rules.
    GraphHash::from_trusted(sha256_hex(&tagged))
}

/// The content hash of `doc`.
#[must_use]
pub fn graph_hash(doc: &GraphDocument) -> GraphHash {
    hash_bytes(&canonical_bytes(doc))
}
