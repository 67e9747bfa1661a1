//! Rows ⇄ domain values.
//!
//! Every row is read as plain SQLite values first (reading a `Value` never fails), then decoded
//! here, so a wrong type, an unknown enum name, undecodable JSON or a broken invariant becomes a
//! typed `Corrupt` naming the row, never a panic and never "absent".
//!
//! The run document is stored whole as canonical JSON; the columns beside it (`status`, `step`,
//! `checkpoint_seq`, timestamps, ...) are copies for indexing and listing, and decoding checks
//! that they agree with the document.

use rusqlite::types::Value;
use rusqlite::Row;

use docket_core::model::value::{canonical_json, canonical_json_map};
use docket_core::model::{
    validate_durable, CheckpointType, ClaimToken, Event, EventType, GraphHash, GraphId,
    OperationalState, OwnerScope, Poison, PoisonReason, Run, RunId, RunStatus, RunSummary,
    Timestamp, ValueMap,
};
use docket_core::store::rules::effects::check_row_invariants;
use docket_core::store::rules::transition::StoredHead;
use docket_core::store::StoreError;

/// Columns of a full run row, in decoding order.
pub(crate) const RUN_COLUMNS: &str = "run_id, scope_key, graph_id, graph_hash, status, step, \
     checkpoint_seq, event_seq, document, latest_checkpoint_type, claim_token, claimed_at, \
     wake_at, claim_attempts, claim_abandons, poisoned_at, poison_reason, started_at, \
     updated_at, finished_at, admitted_at";
const RUN_OPS_BASE: usize = 9;
/// Position of `admitted_at` in a [`RUN_COLUMNS`] row.
const RUN_ADMITTED_AT: usize = 20;
/// How many columns [`RUN_COLUMNS`] names.
pub(crate) const RUN_COLUMN_COUNT: usize = 21;

/// Columns of an operational row (no document), in decoding order.
pub(crate) const OPS_COLUMNS: &str = "run_id, scope_key, graph_id, graph_hash, status, \
     checkpoint_seq, latest_checkpoint_type, claim_token, claimed_at, wake_at, claim_attempts, \
     claim_abandons, poisoned_at, poison_reason, admitted_at";
const OPS_BASE: usize = 6;
/// Position of `admitted_at` in an [`OPS_COLUMNS`] row.
const OPS_ADMITTED_AT: usize = 14;
/// How many columns [`OPS_COLUMNS`] names.
pub(crate) const OPS_COLUMN_COUNT: usize = 15;

/// Columns of a run summary, in decoding order.
pub(crate) const SUMMARY_COLUMNS: &str = "run_id, scope_key, graph_id, graph_hash, status, step, \
     checkpoint_seq, started_at, updated_at, finished_at";

/// Columns of an event row, in decoding order.
pub(crate) const EVENT_COLUMNS: &str = "run_id, seq, event_type, step, node_id, channel_id, \
     task_id, occurred_at, payload, metadata";

/// Reads the first `n` columns of `row` as plain values.
pub(crate) fn row_values(row: &Row<'_>, n: usize) -> rusqlite::Result<Vec<Value>> {
    (0..n).map(|i| row.get::<_, Value>(i)).collect()
}

/// A decoded full run row.
#[derive(Clone, Debug)]
pub(crate) struct StoredRun {
    /// Owner from `scope_key`.
    pub owner: OwnerScope,
    /// The document.
    pub run: Run,
    /// The operational state.
    pub ops: OperationalState,
}

/// A decoded operational row (the document is not read).
#[derive(Clone, Debug)]
pub(crate) struct OpsRow {
    /// Run id.
    pub run_id: RunId,
    /// Owner from `scope_key`.
    pub owner: OwnerScope,
    /// Graph id.
    pub graph_id: GraphId,
    /// Graph hash.
    pub graph_hash: GraphHash,
    /// Status.
    pub status: RunStatus,
    /// Committed seq.
    pub checkpoint_seq: u64,
    /// The operational state.
    pub ops: OperationalState,
}

/// Positional access to one row's values, with corruption errors naming the row.
struct Fields<'a> {
    values: &'a [Value],
    what: String,
}

impl<'a> Fields<'a> {
    fn new(values: &'a [Value], what: impl Into<String>) -> Self {
        Self {
            values,
            what: what.into(),
        }
    }

    fn corrupt(&self, detail: impl std::fmt::Display) -> StoreError {
        StoreError::corrupt(self.what.clone(), detail)
    }

    fn get(&self, i: usize, name: &str) -> Result<&'a Value, StoreError> {
        self.values
            .get(i)
            .ok_or_else(|| self.corrupt(format!("column {name} is missing")))
    }

    fn opt_text(&self, i: usize, name: &str) -> Result<Option<&'a str>, StoreError> {
        match self.get(i, name)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.as_str())),
            other => Err(self.corrupt(format!("column {name} is {other:?}, expected text"))),
        }
    }

    fn text(&self, i: usize, name: &str) -> Result<&'a str, StoreError> {
        self.opt_text(i, name)?
            .ok_or_else(|| self.corrupt(format!("column {name} is null")))
    }

    fn opt_int(&self, i: usize, name: &str) -> Result<Option<i64>, StoreError> {
        match self.get(i, name)? {
            Value::Null => Ok(None),
            Value::Integer(n) => Ok(Some(*n)),
            other => Err(self.corrupt(format!("column {name} is {other:?}, expected integer"))),
        }
    }

    fn int(&self, i: usize, name: &str) -> Result<i64, StoreError> {
        self.opt_int(i, name)?
            .ok_or_else(|| self.corrupt(format!("column {name} is null")))
    }

    fn u64(&self, i: usize, name: &str) -> Result<u64, StoreError> {
        let n = self.int(i, name)?;
        u64::try_from(n).map_err(|_| self.corrupt(format!("column {name} is negative ({n})")))
    }

    fn u32(&self, i: usize, name: &str) -> Result<u32, StoreError> {
        let n = self.int(i, name)?;
        u32::try_from(n).map_err(|_| self.corrupt(format!("column {name} is out of range ({n})")))
    }

    fn ts(&self, i: usize, name: &str) -> Result<Timestamp, StoreError> {
        self.int(i, name).map(Timestamp::from_micros)
    }

    fn opt_ts(&self, i: usize, name: &str) -> Result<Option<Timestamp>, StoreError> {
        Ok(self.opt_int(i, name)?.map(Timestamp::from_micros))
    }

    fn run_id(&self, i: usize) -> Result<RunId, StoreError> {
        RunId::new(self.text(i, "run_id")?).map_err(|e| self.corrupt(e))
    }

    fn owner(&self, i: usize) -> Result<OwnerScope, StoreError> {
        OwnerScope::from_scope_key(self.text(i, "scope_key")?).map_err(|e| self.corrupt(e))
    }

    fn status(&self, i: usize) -> Result<RunStatus, StoreError> {
        let name = self.text(i, "status")?;
        RunStatus::parse(name)
            .filter(|s| s.is_durable())
            .ok_or_else(|| self.corrupt(format!("unknown status {name:?}")))
    }

    fn graph_id(&self, i: usize) -> Result<GraphId, StoreError> {
        GraphId::new(self.text(i, "graph_id")?).map_err(|e| self.corrupt(e))
    }

    fn graph_hash(&self, i: usize) -> Result<GraphHash, StoreError> {
        GraphHash::new(self.text(i, "graph_hash")?).map_err(|e| self.corrupt(e))
    }

    /// The operational columns starting at `base`: latest_checkpoint_type, claim_token,
    /// claimed_at, wake_at, claim_attempts, claim_abandons, poisoned_at, poison_reason.
    fn ops(
        &self,
        base: usize,
        admitted: usize,
        status: RunStatus,
    ) -> Result<OperationalState, StoreError> {
        let checkpoint = self.text(base, "latest_checkpoint_type")?;
        let latest_checkpoint_type = CheckpointType::parse(checkpoint)
            .ok_or_else(|| self.corrupt(format!("unknown checkpoint type {checkpoint:?}")))?;
        let claim_token = self
            .opt_text(base + 1, "claim_token")?
            .map(ClaimToken::new)
            .transpose()
            .map_err(|e| self.corrupt(e))?;
        let poisoned_at = self.opt_ts(base + 6, "poisoned_at")?;
        let reason = self.opt_text(base + 7, "poison_reason")?;
        let poison = match (poisoned_at, reason) {
            (None, None) => None,
            (Some(poisoned_at), Some(reason)) => Some(Poison {
                poisoned_at,
                reason: PoisonReason::parse(reason)
                    .ok_or_else(|| self.corrupt(format!("unknown poison reason {reason:?}")))?,
            }),
            _ => return Err(self.corrupt("poisoned_at and poison_reason are not paired")),
        };
        let ops = OperationalState {
            claim_token,
            wake_at: self.opt_ts(base + 3, "wake_at")?,
            claimed_at: self.opt_ts(base + 2, "claimed_at")?,
            claim_attempts: self.u32(base + 4, "claim_attempts")?,
            claim_abandons: self.u32(base + 5, "claim_abandons")?,
            poison,
            latest_checkpoint_type,
            admitted_at: self.opt_ts(admitted, "admitted_at")?,
        };
        check_row_invariants(status, &ops).map_err(|e| self.corrupt(e))?;
        Ok(ops)
    }
}

/// Decodes a row selected with [`RUN_COLUMNS`].
///
/// # Errors
/// `Corrupt` naming the row and the first failed check.
pub(crate) fn decode_run(values: &[Value]) -> Result<StoredRun, StoreError> {
    let f = Fields::new(values, "run row");
    let run_id = f.text(0, "run_id")?;
    let f = Fields::new(values, format!("run row {run_id}"));
    let owner = f.owner(1)?;
    let run: Run = serde_json::from_str(f.text(8, "document")?)
        .map_err(|e| f.corrupt(format!("document does not decode: {e}")))?;
    let status = f.status(4)?;
    let disagreements = [
        ("run_id", run.id.as_str() != run_id),
        ("graph_id", run.graph_id.as_str() != f.text(2, "graph_id")?),
        (
            "graph_hash",
            run.graph_hash.as_str() != f.text(3, "graph_hash")?,
        ),
        ("status", run.status != status),
        ("step", run.step != f.u64(5, "step")?),
        (
            "checkpoint_seq",
            run.checkpoint_seq != f.u64(6, "checkpoint_seq")?,
        ),
        ("event_seq", run.event_seq != f.u64(7, "event_seq")?),
        (
            "started_at",
            run.started_at != Some(f.ts(17, "started_at")?),
        ),
        (
            "updated_at",
            run.updated_at != Some(f.ts(18, "updated_at")?),
        ),
        (
            "finished_at",
            run.finished_at != f.opt_ts(19, "finished_at")?,
        ),
    ];
    if let Some((column, _)) = disagreements.iter().find(|(_, differs)| *differs) {
        return Err(f.corrupt(format!("column {column} disagrees with the document")));
    }
    validate_durable(&run).map_err(|e| f.corrupt(e))?;
    let ops = f.ops(RUN_OPS_BASE, RUN_ADMITTED_AT, status)?;
    Ok(StoredRun { owner, run, ops })
}

/// Decodes a row selected with [`OPS_COLUMNS`] followed by `started_at`: everything a
/// transition compares against, without touching the stored document.
///
/// # Errors
/// `Corrupt` naming the row.
pub(crate) fn decode_head(values: &[Value]) -> Result<(StoredHead, OpsRow), StoreError> {
    let ops = decode_ops(values)?;
    let f = Fields::new(values, format!("run row {}", ops.run_id));
    let head = StoredHead {
        run_id: ops.run_id.clone(),
        graph_id: ops.graph_id.clone(),
        graph_hash: ops.graph_hash.clone(),
        started_at: Some(f.ts(HEAD_STARTED_AT, "started_at")?),
        status: ops.status,
        checkpoint_seq: ops.checkpoint_seq,
    };
    Ok((head, ops))
}

/// Position of `started_at` in a head row (right after [`OPS_COLUMNS`]).
pub(crate) const HEAD_STARTED_AT: usize = OPS_COLUMN_COUNT;

/// Decodes a row selected with [`OPS_COLUMNS`].
///
/// # Errors
/// `Corrupt` naming the row.
pub(crate) fn decode_ops(values: &[Value]) -> Result<OpsRow, StoreError> {
    let f = Fields::new(values, "run row");
    let run_id = f.run_id(0)?;
    let f = Fields::new(values, format!("run row {run_id}"));
    let status = f.status(4)?;
    Ok(OpsRow {
        owner: f.owner(1)?,
        graph_id: f.graph_id(2)?,
        graph_hash: f.graph_hash(3)?,
        status,
        checkpoint_seq: f.u64(5, "checkpoint_seq")?,
        ops: f.ops(OPS_BASE, OPS_ADMITTED_AT, status)?,
        run_id,
    })
}

/// Decodes a row selected with [`SUMMARY_COLUMNS`].
///
/// # Errors
/// `Corrupt` naming the row.
pub(crate) fn decode_summary(values: &[Value]) -> Result<RunSummary, StoreError> {
    let f = Fields::new(values, "run row");
    let id = f.run_id(0)?;
    let f = Fields::new(values, format!("run row {id}"));
    Ok(RunSummary {
        owner: f.owner(1)?,
        graph_id: f.graph_id(2)?,
        graph_hash: f.graph_hash(3)?,
        status: f.status(4)?,
        step: f.u64(5, "step")?,
        checkpoint_seq: f.u64(6, "checkpoint_seq")?,
        started_at: f.ts(7, "started_at")?,
        updated_at: f.ts(8, "updated_at")?,
        finished_at: f.opt_ts(9, "finished_at")?,
        id,
    })
}

/// Decodes a row selected with [`EVENT_COLUMNS`].
///
/// # Errors
/// `Corrupt` naming the event.
pub(crate) fn decode_event(values: &[Value]) -> Result<Event, StoreError> {
    let f = Fields::new(values, "event row");
    let run_id = f.run_id(0)?;
    let seq = f.u64(1, "seq")?;
    let f = Fields::new(values, format!("event {run_id}#{seq}"));
    let type_name = f.text(2, "event_type")?;
    let event_type = EventType::parse(type_name)
        .ok_or_else(|| f.corrupt(format!("unknown event type {type_name:?}")))?;
    let map = |i: usize, name: &str| -> Result<ValueMap, StoreError> {
        let text = f.text(i, name)?;
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            Ok(other) => Err(f.corrupt(format!("column {name} is not a map: {other}"))),
            Err(e) => Err(f.corrupt(format!("column {name} does not decode: {e}"))),
        }
    };
    Ok(Event {
        run_id,
        seq,
        event_type,
        step: f.u64(3, "step")?,
        node_id: f.opt_text(4, "node_id")?.map(str::to_owned),
        channel_id: f.opt_text(5, "channel_id")?.map(str::to_owned),
        task_id: f.opt_text(6, "task_id")?.map(str::to_owned),
        timestamp: f.ts(7, "occurred_at")?,
        payload: map(8, "payload")?,
        metadata: map(9, "metadata")?,
    })
}

/// The canonical JSON text of a run document.
///
/// # Errors
/// `InvalidTransition` if the document cannot be encoded.
pub(crate) fn encode_document(run: &Run) -> Result<String, StoreError> {
    let value = serde_json::to_value(run)
        .map_err(|e| StoreError::invalid_transition(format!("run does not encode: {e}")))?;
    String::from_utf8(canonical_json(&value))
        .map_err(|e| StoreError::invalid_transition(format!("run does not encode: {e}")))
}

/// The canonical JSON text of an event payload or metadata map.
pub(crate) fn encode_map(map: &ValueMap) -> String {
    // Canonical JSON of a map of JSON values is valid UTF-8 by construction.
    String::from_utf8_lossy(&canonical_json_map(map)).into_owned()
}

/// A counter as an SQL integer.
///
/// # Errors
/// `InvalidTransition` when the value does not fit a signed 64-bit integer.
pub(crate) fn sql_u64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::invalid_transition(format!("{what} {value} is too large")))
}

/// A seq or cursor bound for a read; values beyond the SQL range match nothing stored anyway.
pub(crate) fn clamp_u64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
