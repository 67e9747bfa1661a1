//! Graph storage rules (`docs/storage-contract.md`, “Graph versions”): what `save_graph` checks
//! before writing and what `fetch_graph` verifies after reading.

use crate::graph::{canonical_bytes, hash_bytes, GraphDocument};
use crate::model::GraphRef;
use crate::store::error::StoreError;

/// Checks `doc` against its address and returns the canonical bytes to store.
///
/// # Errors
/// `InvalidGraphDocument` when the document's id differs from the address; `InvalidGraphHash`
/// when its canonical bytes do not hash to the address.
pub fn encode_for_save(graph_ref: &GraphRef, doc: &GraphDocument) -> Result<Vec<u8>, StoreError> {
    if doc.id != graph_ref.graph_id.as_str() {
        return Err(StoreError::InvalidGraphDocument {
            reason: format!(
                "document id {:?} differs from the address id {:?}",
                doc.id,
                graph_ref.graph_id.as_str()
            ),
        });
    }
    let bytes = canonical_bytes(doc);
    if hash_bytes(&bytes) != graph_ref.graph_hash {
        return Err(StoreError::InvalidGraphHash);
    }
    Ok(bytes)
}

/// Verifies stored bytes: hash, decode, canonical re-encode and id must all agree.
///
/// # Errors
/// `CorruptGraph` describing the first failed check (never "absent").
pub fn decode_stored(graph_ref: &GraphRef, bytes: &[u8]) -> Result<GraphDocument, StoreError> {
    let corrupt = |detail: String| StoreError::CorruptGraph { detail };
    if hash_bytes(bytes) != graph_ref.graph_hash {
        return Err(corrupt("stored bytes do not hash to their address".into()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| corrupt(format!("not UTF-8: {e}")))?;
    let doc = GraphDocument::from_json(text).map_err(|e| corrupt(e.to_string()))?;
    if canonical_bytes(&doc) != bytes {
        return Err(corrupt(
            "stored bytes are not the canonical encoding".into(),
        ));
    }
    if doc.id != graph_ref.graph_id.as_str() {
        return Err(corrupt(
            "stored document id differs from its address".into(),
        ));
    }
    Ok(doc)
}
