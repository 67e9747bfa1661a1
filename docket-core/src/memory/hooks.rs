//! Test hooks for the conformance harness: a byte-exact rendering of everything stored, and
//! ways to corrupt single records. Not part of the store contract.

use std::fmt::Write as _;

use crate::model::{GraphRef, OwnerScope, RunId};
use crate::store::StoreError;

use super::state::{GraphKey, State};

/// Bytes no decoder accepts: invalid UTF-8 followed by broken JSON.
const GARBAGE: &[u8] = b"\xff\xfe{\"truncated";

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unencodable: {e}>"))
}

/// Every stored byte, one line per record, in key order (graphs, runs, events).
pub(super) fn raw_snapshot(state: &State) -> String {
    let mut out = String::new();
    for (key, row) in &state.graphs {
        let _ = writeln!(
            out,
            "graph owner={} id={} hash={} published_at={} bytes={}",
            json(&key.owner),
            key.graph_id,
            key.graph_hash,
            row.published_at.as_micros(),
            row.bytes.escape_ascii()
        );
    }
    for (id, row) in &state.runs {
        let _ = writeln!(
            out,
            "run id={id} owner={} columns={} ops={} document={}",
            json(&row.owner),
            json(&row.columns),
            json(&row.ops),
            row.document.escape_ascii()
        );
    }
    for (run_id, events) in &state.events {
        for (seq, row) in events {
            let _ = writeln!(
                out,
                "event run={run_id} seq={seq} inserted_at={} bytes={}",
                row.inserted_at.as_micros(),
                row.bytes.escape_ascii()
            );
        }
    }
    for (tenant, share) in &state.fair.shares {
        let _ = writeln!(out, "share tenant={tenant} {}", json(share));
    }
    if let Some(cursor) = &state.fair.cursor {
        let _ = writeln!(out, "cursor {}", json(cursor));
    }
    out
}

/// Replaces the stored document bytes of `run_id` (columns and operational state stay).
pub(super) fn replace_run_document(
    state: &mut State,
    run_id: &RunId,
    bytes: Vec<u8>,
) -> Result<(), StoreError> {
    let row = state.runs.get_mut(run_id).ok_or(StoreError::NotFound)?;
    row.document = bytes;
    Ok(())
}

/// Overwrites the stored document of `run_id` with undecodable bytes.
pub(super) fn corrupt_run(state: &mut State, run_id: &RunId) -> Result<(), StoreError> {
    replace_run_document(state, run_id, GARBAGE.to_vec())
}

/// Overwrites the stored event `seq` of `run_id` with undecodable bytes.
pub(super) fn corrupt_event(state: &mut State, run_id: &RunId, seq: u64) -> Result<(), StoreError> {
    let row = state
        .events
        .get_mut(run_id)
        .and_then(|events| events.get_mut(&seq))
        .ok_or(StoreError::NotFound)?;
    row.bytes = GARBAGE.to_vec();
    Ok(())
}

/// Overwrites the stored bytes of one graph version with undecodable bytes.
pub(super) fn corrupt_graph(
    state: &mut State,
    owner: &OwnerScope,
    graph_ref: &GraphRef,
) -> Result<(), StoreError> {
    let key = GraphKey {
        owner: owner.clone(),
        graph_id: graph_ref.graph_id.clone(),
        graph_hash: graph_ref.graph_hash.clone(),
    };
    let row = state.graphs.get_mut(&key).ok_or(StoreError::NotFound)?;
    row.bytes = GARBAGE.to_vec();
    Ok(())
}
