//! The stored rows of the memory store and their codecs.
//!
//! The memory store keeps what a SQL backend keeps: encoded documents next to the columns a
//! store must read without decoding them (status, times, counters for listing, claiming and
//! pruning). Every read of a document decodes it and checks it against those columns, the
//! durable-document rules and the row invariants, so a broken record is reported as corrupt
//! instead of being trusted or reported as absent.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{
    validate_durable, Event, GraphHash, GraphId, OperationalState, OwnerScope, Run, RunId,
    RunStatus, Scope, Timestamp,
};
use crate::store::rules::effects::check_row_invariants;
use crate::store::rules::events::StoredEvent;
use crate::store::StoreError;

/// Everything the store holds. Only ever touched under the store's lock.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Run rows by id (run ids are global across tenants).
    pub runs: BTreeMap<RunId, RunRow>,
    /// Event rows by run, then seq. A run's events go when its row goes.
    pub events: BTreeMap<RunId, BTreeMap<u64, EventRow>>,
    /// Graph versions by owner and address.
    pub graphs: BTreeMap<GraphKey, GraphRow>,
    /// The operation registry's owners and operations.
    pub ops: super::ops::OpsTables,
    /// Tenant shares (by tenant id) and the tenant-fair cursor.
    pub fair: FairTables,
}

/// What tenant-fair claiming keeps between claims.
#[derive(Debug, Default)]
pub(super) struct FairTables {
    /// Stored shares by `OwnerScope::scope_key` (a tenant id).
    pub shares: BTreeMap<String, crate::store::TenantShare>,
    /// Where the round robin stands.
    pub cursor: Option<crate::store::ClaimCursor>,
}

/// One run row: owner, summary columns, the encoded document and the operational state.
#[derive(Clone, Debug)]
pub(super) struct RunRow {
    /// Fixed at insert.
    pub owner: OwnerScope,
    /// What listing, claiming and pruning read instead of the document.
    pub columns: RunColumns,
    /// `serde_json` bytes of the [`Run`].
    pub document: Vec<u8>,
    /// Wake, claim, counters, poison.
    pub ops: OperationalState,
}

/// The summary columns of a run row, copied from the document at every write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct RunColumns {
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

/// One stored event.
#[derive(Clone, Debug)]
pub(super) struct EventRow {
    /// `serde_json` bytes of the [`Event`].
    pub bytes: Vec<u8>,
    /// When the transition that wrote it committed (the caller's `now`), for retention.
    pub inserted_at: Timestamp,
}

/// The address of a stored graph version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct GraphKey {
    pub owner: OwnerScope,
    pub graph_id: GraphId,
    pub graph_hash: GraphHash,
}

/// One stored graph version.
#[derive(Clone, Debug)]
pub(super) struct GraphRow {
    /// Canonical JSON of the effective document.
    pub bytes: Vec<u8>,
    /// The caller's `now` at first save; never changes.
    pub published_at: Timestamp,
}

impl RunColumns {
    /// The columns of a validated document.
    ///
    /// # Errors
    /// `InvalidTransition` when a required time is missing (validated documents have them).
    pub fn of(run: &Run) -> Result<Self, StoreError> {
        let missing = |name: &str| StoreError::invalid_transition(format!("{name} is missing"));
        Ok(RunColumns {
            graph_id: run.graph_id.clone(),
            graph_hash: run.graph_hash.clone(),
            status: run.status,
            step: run.step,
            checkpoint_seq: run.checkpoint_seq,
            event_seq: run.event_seq,
            started_at: run.started_at.ok_or_else(|| missing("started_at"))?,
            updated_at: run.updated_at.ok_or_else(|| missing("updated_at"))?,
            finished_at: run.finished_at,
        })
    }
}

/// Encodes a validated run into its columns and document bytes.
///
/// # Errors
/// `InvalidTransition` when the document cannot be encoded.
pub(super) fn encode_run(run: &Run) -> Result<(RunColumns, Vec<u8>), StoreError> {
    let columns = RunColumns::of(run)?;
    let bytes = serde_json::to_vec(run)
        .map_err(|e| StoreError::invalid_transition(format!("run cannot be encoded: {e}")))?;
    Ok((columns, bytes))
}

/// Decodes and verifies the document of the row stored under `id`.
///
/// # Errors
/// `Corrupt` when the bytes do not decode, the document is not durable, the row invariants
/// are broken, or the document disagrees with its key or columns.
pub(super) fn decode_run(id: &RunId, row: &RunRow) -> Result<Run, StoreError> {
    let what = || format!("run row {id}");
    let run: Run =
        serde_json::from_slice(&row.document).map_err(|e| StoreError::corrupt(what(), e))?;
    validate_durable(&run).map_err(|e| StoreError::corrupt(what(), e))?;
    check_row_invariants(run.status, &row.ops).map_err(|e| StoreError::corrupt(what(), e))?;
    if &run.id != id {
        return Err(StoreError::corrupt(
            what(),
            "document id differs from its key",
        ));
    }
    if RunColumns::of(&run)? != row.columns {
        return Err(StoreError::corrupt(
            what(),
            "document disagrees with the row's columns",
        ));
    }
    Ok(run)
}

/// Encodes an event for storage.
///
/// # Errors
/// `InvalidTransition` when the event cannot be encoded.
pub(super) fn encode_event(event: &Event) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(event).map_err(|e| {
        StoreError::invalid_transition(format!("event {} cannot be encoded: {e}", event.seq))
    })
}

/// Decodes and verifies the event stored under `(run_id, seq)`.
///
/// # Errors
/// `Corrupt` when the bytes do not decode or the event disagrees with its key.
pub(super) fn decode_event(run_id: &RunId, seq: u64, row: &EventRow) -> Result<Event, StoreError> {
    let what = || format!("event row {run_id}#{seq}");
    let event: Event =
        serde_json::from_slice(&row.bytes).map_err(|e| StoreError::corrupt(what(), e))?;
    if &event.run_id != run_id || event.seq != seq {
        return Err(StoreError::corrupt(what(), "event differs from its key"));
    }
    Ok(event)
}

impl State {
    /// The row of `id` if `scope` may see it; absent and concealed look the same.
    ///
    /// # Errors
    /// `NotFound`.
    pub fn visible_row(&self, scope: &Scope, id: &RunId) -> Result<&RunRow, StoreError> {
        self.runs
            .get(id)
            .filter(|row| scope.admits(&row.owner))
            .ok_or(StoreError::NotFound)
    }

    /// The decoded stored event at `(run_id, seq)`, if any.
    ///
    /// # Errors
    /// `Corrupt` when the stored event does not decode.
    pub fn stored_event(&self, run_id: &RunId, seq: u64) -> Result<Option<Event>, StoreError> {
        self.events
            .get(run_id)
            .and_then(|events| events.get(&seq))
            .map(|row| decode_event(run_id, seq, row))
            .transpose()
    }

    /// The stored event at `seq` as the transition rules compare it: undecodable bytes are a
    /// fact that no proposal can equal, not an error.
    pub fn stored_event_for_merge(&self, run_id: &RunId, seq: u64) -> Option<StoredEvent> {
        self.events
            .get(run_id)
            .and_then(|events| events.get(&seq))
            .map(|row| match decode_event(run_id, seq, row) {
                Ok(event) => StoredEvent::Event(event),
                Err(_) => StoredEvent::Undecodable,
            })
    }

    /// Appends already encoded events of `run_id`.
    pub fn insert_events(
        &mut self,
        run_id: &RunId,
        encoded: Vec<(u64, Vec<u8>)>,
        inserted_at: Timestamp,
    ) {
        if encoded.is_empty() {
            return;
        }
        let events = self.events.entry(run_id.clone()).or_default();
        for (seq, bytes) in encoded {
            events.insert(seq, EventRow { bytes, inserted_at });
        }
    }

    /// Deletes a run row and its events; returns how many events went with it.
    pub fn delete_run(&mut self, run_id: &RunId) -> u64 {
        self.runs.remove(run_id);
        self.events
            .remove(run_id)
            .map_or(0, |events| events.len() as u64)
    }
}
