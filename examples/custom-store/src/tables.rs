//! The rows the store keeps — its schema — and how it renders all of them for the harness.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use docket_core::model::{
    GraphHash, GraphId, OperationalState, OwnerScope, RunId, RunStatus, Scope, Timestamp,
};
use docket_core::ops::{OperationId, SessionId};
use docket_core::store::{ClaimCursor, StoreError, TenantShare};

use crate::ops::rows::{OperationRow, OwnerRow};

/// Everything stored.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    /// Run rows by id (ids are global across owners).
    pub runs: BTreeMap<RunId, RunRow>,
    /// Event rows by run, then seq.
    pub events: BTreeMap<RunId, BTreeMap<u64, EventRow>>,
    /// Graph versions by owner and address.
    pub graphs: BTreeMap<(OwnerScope, GraphId, GraphHash), GraphRow>,
    /// Registry owners that have been written to (absent means: open, next sequence 1).
    pub ops_owners: BTreeMap<SessionId, OwnerRow>,
    /// Registry operations by owner and id.
    pub operations: BTreeMap<(SessionId, OperationId), OperationRow>,
    /// Tenant shares by tenant id (`OwnerScope::scope_key`).
    pub shares: BTreeMap<String, TenantShare>,
    /// Where the tenant-fair round robin stands.
    pub cursor: Option<ClaimCursor>,
}

/// One run: who owns it, the columns reads and claims use without decoding, the document as
/// JSON text, and the operational state.
#[derive(Clone, Debug)]
pub(crate) struct RunRow {
    pub owner: OwnerScope,
    pub columns: Columns,
    pub document: String,
    pub ops: OperationalState,
}

/// Summary columns, copied from the document at every write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Columns {
    pub graph_id: GraphId,
    pub graph_hash: GraphHash,
    pub status: RunStatus,
    pub step: u64,
    pub checkpoint_seq: u64,
    pub event_seq: u64,
    pub started_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

/// One event as JSON text, with the commit time retention compares against.
#[derive(Clone, Debug)]
pub(crate) struct EventRow {
    pub json: String,
    pub inserted_at: Timestamp,
}

/// One graph version: canonical bytes and first publication time.
#[derive(Clone, Debug)]
pub(crate) struct GraphRow {
    pub bytes: Vec<u8>,
    pub published_at: Timestamp,
}

impl Tables {
    /// The row of `id` if `scope` may see it; absent and concealed look the same.
    pub fn visible(&self, scope: &Scope, id: &RunId) -> Result<&RunRow, StoreError> {
        self.runs
            .get(id)
            .filter(|row| scope.admits(&row.owner))
            .ok_or(StoreError::NotFound)
    }

    /// Every row, one per line in key order: equal renderings mean nothing changed.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for ((owner, id, hash), row) in &self.graphs {
            let _ = writeln!(
                out,
                "graph {owner:?} {id} {hash} at {} {}",
                row.published_at.as_micros(),
                row.bytes.escape_ascii()
            );
        }
        for (id, row) in &self.runs {
            let ops = serde_json::to_string(&row.ops).unwrap_or_else(|e| format!("<{e}>"));
            let _ = writeln!(
                out,
                "run {id} {:?} {:?} ops={ops} doc={}",
                row.owner,
                row.columns,
                row.document.escape_debug()
            );
        }
        for (id, events) in &self.events {
            for (seq, row) in events {
                let _ = writeln!(
                    out,
                    "event {id}#{seq} at {} {}",
                    row.inserted_at.as_micros(),
                    row.json.escape_debug()
                );
            }
        }
        for (tenant, share) in &self.shares {
            let _ = writeln!(out, "share {tenant} {share:?}");
        }
        if let Some(cursor) = &self.cursor {
            let _ = writeln!(out, "cursor {cursor:?}");
        }
        out
    }

    /// Every registry row, one per line in key order.
    pub fn render_ops(&self) -> String {
        let mut out = String::new();
        for (owner, row) in &self.ops_owners {
            let _ = writeln!(out, "owner {owner} {row:?}");
        }
        for ((owner, id), row) in &self.operations {
            let _ = writeln!(out, "operation {owner}/{id} {row:?}");
        }
        out
    }
}
