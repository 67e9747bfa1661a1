//! Row codec: run rows and event rows to and from the domain types.
//!
//! A run row keeps the whole document as JSON text in `document` and repeats the fields the
//! database needs to filter on (identity, status, counters, times) as columns. Decoding
//! re-validates the document (`validate_durable`), checks that the columns agree with it and
//! that the operational columns satisfy the row invariants; any failure is `Corrupt`, never
//! "absent".

use docket_core::model::value::canonical_json_map;
use docket_core::model::{
    validate_durable, CheckpointType, ClaimToken, Event, EventType, GraphHash, GraphId,
    OperationalState, OwnerScope, Poison, PoisonReason, Run, RunId, RunStatus, RunSummary,
    TenantId, Timestamp,
};
use docket_core::store::rules::effects::check_row_invariants;
use docket_core::store::rules::events::StoredEvent;
use docket_core::store::rules::transition::StoredHead;
use docket_core::store::StoreError;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::Row;

/// A run row as stored: owner, document and operational state.
#[derive(Clone, Debug)]
pub(crate) struct StoredRun {
    pub owner: OwnerScope,
    pub run: Run,
    pub ops: OperationalState,
}

fn corrupt_run(run_id: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(format!("run row {run_id}"), detail)
}

fn get<'r, T>(row: &'r PgRow, column: &str, what: &dyn Fn() -> String) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get(column)
        .map_err(|e| StoreError::corrupt(what(), format!("column {column}: {e}")))
}

/// A non-negative stored integer as `u64`.
fn unsigned(value: i64, column: &str, what: &dyn Fn() -> String) -> Result<u64, StoreError> {
    u64::try_from(value)
        .map_err(|_| StoreError::corrupt(what(), format!("column {column} is negative: {value}")))
}

fn counter(value: i32, column: &str, what: &dyn Fn() -> String) -> Result<u32, StoreError> {
    u32::try_from(value)
        .map_err(|_| StoreError::corrupt(what(), format!("column {column} is negative: {value}")))
}

fn owner_of(tenant: Option<String>, what: &dyn Fn() -> String) -> Result<OwnerScope, StoreError> {
    match tenant {
        None => Ok(OwnerScope::Tenantless),
        Some(t) => TenantId::new(t)
            .map(OwnerScope::Tenant)
            .map_err(|e| StoreError::corrupt(what(), e)),
    }
}

/// Decodes a row selected with the run columns of [`crate::sql`].
pub(crate) fn decode_run_row(row: &PgRow) -> Result<StoredRun, StoreError> {
    let run_id: String = get(row, "run_id", &|| "run row".to_owned())?;
    let what = || format!("run row {run_id}");
    let document: Vec<u8> = get(row, "document", &what)?;
    let run: Run = serde_json::from_slice(&document).map_err(|e| corrupt_run(&run_id, e))?;
    validate_durable(&run).map_err(|e| corrupt_run(&run_id, e))?;

    let graph_id: String = get(row, "graph_id", &what)?;
    let graph_hash: String = get(row, "graph_hash", &what)?;
    let status: String = get(row, "status", &what)?;
    let step: i64 = get(row, "step", &what)?;
    let checkpoint_seq: i64 = get(row, "checkpoint_seq", &what)?;
    let event_seq: i64 = get(row, "event_seq", &what)?;
    let started_at: i64 = get(row, "started_at", &what)?;
    let updated_at: i64 = get(row, "updated_at", &what)?;
    let finished_at: Option<i64> = get(row, "finished_at", &what)?;
    let columns_agree = run.id.as_str() == run_id
        && run.graph_id.as_str() == graph_id
        && run.graph_hash.as_str() == graph_hash
        && run.status.as_str() == status
        && i64::try_from(run.step).ok() == Some(step)
        && i64::try_from(run.checkpoint_seq).ok() == Some(checkpoint_seq)
        && i64::try_from(run.event_seq).ok() == Some(event_seq)
        && run.started_at.map(Timestamp::as_micros) == Some(started_at)
        && run.updated_at.map(Timestamp::as_micros) == Some(updated_at)
        && run.finished_at.map(Timestamp::as_micros) == finished_at;
    if !columns_agree {
        return Err(corrupt_run(
            &run_id,
            "the columns disagree with the stored document",
        ));
    }

    let owner = owner_of(get(row, "tenant_id", &what)?, &what)?;
    let ops = decode_ops_columns(row, &run_id, run.status)?;
    Ok(StoredRun { owner, run, ops })
}

/// Decodes the operational columns of a run row whose stored status is `status`, checking
/// the row invariants.
fn decode_ops_columns(
    row: &PgRow,
    run_id: &str,
    status: RunStatus,
) -> Result<OperationalState, StoreError> {
    let what = || format!("run row {run_id}");
    let token: Option<String> = get(row, "claim_token", &what)?;
    let claim_token = token
        .map(ClaimToken::new)
        .transpose()
        .map_err(|e| corrupt_run(run_id, e))?;
    let poisoned_at: Option<i64> = get(row, "poisoned_at", &what)?;
    let poison_reason: Option<String> = get(row, "poison_reason", &what)?;
    let poison = match (poisoned_at, poison_reason) {
        (None, None) => None,
        (Some(at), Some(reason)) => Some(Poison {
            poisoned_at: Timestamp::from_micros(at),
            reason: PoisonReason::parse(&reason)
                .ok_or_else(|| corrupt_run(run_id, format!("unknown poison reason {reason:?}")))?,
        }),
        _ => return Err(corrupt_run(run_id, "poison facts are not paired")),
    };
    let latest: String = get(row, "latest_checkpoint_type", &what)?;
    let ops = OperationalState {
        claim_token,
        wake_at: get::<Option<i64>>(row, "wake_at", &what)?.map(Timestamp::from_micros),
        claimed_at: get::<Option<i64>>(row, "claimed_at", &what)?.map(Timestamp::from_micros),
        claim_attempts: counter(get(row, "claim_attempts", &what)?, "claim_attempts", &what)?,
        claim_abandons: counter(get(row, "claim_abandons", &what)?, "claim_abandons", &what)?,
        poison,
        latest_checkpoint_type: CheckpointType::parse(&latest)
            .ok_or_else(|| corrupt_run(run_id, format!("unknown checkpoint type {latest:?}")))?,
        admitted_at: get::<Option<i64>>(row, "admitted_at", &what)?.map(Timestamp::from_micros),
    };
    check_row_invariants(status, &ops).map_err(|e| corrupt_run(run_id, e))?;
    Ok(ops)
}

/// Decodes what a transition compares against — identity, status, fence seq and the
/// operational state — from the columns of a run row, never from its document: a fenced
/// commit replaces a corrupt document (reads report it), exactly like the single-statement
/// claimed commit, which never looks at the document either.
pub(crate) fn decode_head_row(row: &PgRow) -> Result<(StoredHead, OperationalState), StoreError> {
    let run_id: String = get(row, "run_id", &|| "run row".to_owned())?;
    let what = || format!("run row {run_id}");
    let status: String = get(row, "status", &what)?;
    let status = RunStatus::parse(&status)
        .filter(|s| s.is_durable())
        .ok_or_else(|| corrupt_run(&run_id, format!("unknown status {status:?}")))?;
    let graph_id: String = get(row, "graph_id", &what)?;
    let graph_hash: String = get(row, "graph_hash", &what)?;
    let head = StoredHead {
        run_id: RunId::new(run_id.clone()).map_err(|e| corrupt_run(&run_id, e))?,
        graph_id: GraphId::new(graph_id).map_err(|e| corrupt_run(&run_id, e))?,
        graph_hash: GraphHash::new(graph_hash).map_err(|e| corrupt_run(&run_id, e))?,
        started_at: Some(Timestamp::from_micros(get(row, "started_at", &what)?)),
        status,
        checkpoint_seq: unsigned(get(row, "checkpoint_seq", &what)?, "checkpoint_seq", &what)?,
    };
    let ops = decode_ops_columns(row, &run_id, status)?;
    Ok((head, ops))
}

/// Decodes a row selected with the summary columns (the document is never read).
pub(crate) fn decode_summary(row: &PgRow) -> Result<RunSummary, StoreError> {
    let run_id: String = get(row, "run_id", &|| "run row".to_owned())?;
    let what = || format!("run row {run_id}");
    let status: String = get(row, "status", &what)?;
    let graph_id: String = get(row, "graph_id", &what)?;
    let graph_hash: String = get(row, "graph_hash", &what)?;
    Ok(RunSummary {
        id: RunId::new(run_id.clone()).map_err(|e| corrupt_run(&run_id, e))?,
        owner: owner_of(get(row, "tenant_id", &what)?, &what)?,
        graph_id: GraphId::new(graph_id).map_err(|e| corrupt_run(&run_id, e))?,
        graph_hash: GraphHash::new(graph_hash).map_err(|e| corrupt_run(&run_id, e))?,
        status: RunStatus::parse(&status)
            .filter(|s| s.is_durable())
            .ok_or_else(|| corrupt_run(&run_id, format!("unknown status {status:?}")))?,
        step: unsigned(get(row, "step", &what)?, "step", &what)?,
        checkpoint_seq: unsigned(get(row, "checkpoint_seq", &what)?, "checkpoint_seq", &what)?,
        started_at: Timestamp::from_micros(get(row, "started_at", &what)?),
        updated_at: Timestamp::from_micros(get(row, "updated_at", &what)?),
        finished_at: get::<Option<i64>>(row, "finished_at", &what)?.map(Timestamp::from_micros),
    })
}

fn decode_map(
    bytes: &[u8],
    field: &str,
    what: &dyn Fn() -> String,
) -> Result<serde_json::Map<String, Value>, StoreError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => {
            docket_core::model::check_portable_map(&map)
                .map_err(|e| StoreError::corrupt(what(), format!("{field}: {e}")))?;
            Ok(map)
        }
        Ok(_) => Err(StoreError::corrupt(what(), format!("{field} is not a map"))),
        Err(e) => Err(StoreError::corrupt(what(), format!("{field}: {e}"))),
    }
}

/// Decodes a row selected with the event columns. Returns `None` when the event columns are
/// NULL (an outer join that found no event).
pub(crate) fn decode_event_row(row: &PgRow) -> Result<Option<Event>, StoreError> {
    let seq: Option<i64> = get(row, "seq", &|| "event row".to_owned())?;
    let Some(seq) = seq else { return Ok(None) };
    let run_id: String = get(row, "run_id", &|| "event row".to_owned())?;
    let what = || format!("event row {run_id} seq {seq}");
    let event_type: String = get(row, "event_type", &what)?;
    let payload: Vec<u8> = get(row, "payload", &what)?;
    let metadata: Vec<u8> = get(row, "metadata", &what)?;
    Ok(Some(Event {
        run_id: RunId::new(run_id.clone()).map_err(|e| StoreError::corrupt(what(), e))?,
        seq: unsigned(seq, "seq", &what)?,
        event_type: EventType::parse(&event_type)
            .ok_or_else(|| StoreError::corrupt(what(), format!("unknown type {event_type:?}")))?,
        step: unsigned(get(row, "step", &what)?, "step", &what)?,
        node_id: get(row, "node_id", &what)?,
        channel_id: get(row, "channel_id", &what)?,
        task_id: get(row, "task_id", &what)?,
        timestamp: Timestamp::from_micros(get(row, "occurred_at", &what)?),
        payload: decode_map(&payload, "payload", &what)?,
        metadata: decode_map(&metadata, "metadata", &what)?,
    }))
}

/// A stored event row as a transition's event merge compares it: its seq and the decoded
/// event, or [`StoredEvent::Undecodable`] when its bytes do not decode (they can never equal
/// a proposal, so replaying that seq is a conflict, not an error).
///
/// # Errors
/// `Corrupt` only when not even the seq can be read.
pub(crate) fn decode_event_for_merge(row: &PgRow) -> Result<(u64, StoredEvent), StoreError> {
    let what = || "event row".to_owned();
    let seq: i64 = get(row, "seq", &what)?;
    let seq = unsigned(seq, "seq", &what)?;
    let event = match decode_event_row(row) {
        Ok(Some(event)) => StoredEvent::Event(event),
        Ok(None) | Err(_) => StoredEvent::Undecodable,
    };
    Ok((seq, event))
}

/// The document columns of a run about to be written.
pub(crate) struct RunColumns {
    pub status: &'static str,
    pub step: i64,
    pub checkpoint_seq: i64,
    pub event_seq: i64,
    pub document: Vec<u8>,
    pub started_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

fn seq_column(value: u64, name: &str) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::invalid_transition(format!("{name} {value} exceeds i64::MAX")))
}

/// Encodes a run that already passed `validate_durable` (so its times are present).
pub(crate) fn encode_run(run: &Run) -> Result<RunColumns, StoreError> {
    let document = serde_json::to_vec(run)
        .map_err(|e| StoreError::invalid_transition(format!("run document: {e}")))?;
    let (Some(started_at), Some(updated_at)) = (run.started_at, run.updated_at) else {
        return Err(StoreError::invalid_transition(
            "started_at and updated_at are required",
        ));
    };
    Ok(RunColumns {
        status: run.status.as_str(),
        step: seq_column(run.step, "step")?,
        checkpoint_seq: seq_column(run.checkpoint_seq, "checkpoint_seq")?,
        event_seq: seq_column(run.event_seq, "event_seq")?,
        document,
        started_at: started_at.as_micros(),
        updated_at: updated_at.as_micros(),
        finished_at: run.finished_at.map(Timestamp::as_micros),
    })
}

/// Proposed events as the parallel arrays the SQL unnests.
#[derive(Default)]
pub(crate) struct EventArrays {
    pub seq: Vec<i64>,
    pub event_type: Vec<String>,
    pub step: Vec<i64>,
    pub node_id: Vec<Option<String>>,
    pub channel_id: Vec<Option<String>>,
    pub task_id: Vec<Option<String>>,
    pub payload: Vec<Vec<u8>>,
    pub metadata: Vec<Vec<u8>>,
    pub occurred_at: Vec<i64>,
}

impl EventArrays {
    /// Moves `other`'s events to the end of these arrays (a batch gathers its members' events
    /// this way).
    pub(crate) fn append(&mut self, other: EventArrays) {
        self.seq.extend(other.seq);
        self.event_type.extend(other.event_type);
        self.step.extend(other.step);
        self.node_id.extend(other.node_id);
        self.channel_id.extend(other.channel_id);
        self.task_id.extend(other.task_id);
        self.payload.extend(other.payload);
        self.metadata.extend(other.metadata);
        self.occurred_at.extend(other.occurred_at);
    }
}

/// Encodes normalized events; payload and metadata as canonical JSON, so equal maps have
/// equal bytes and the fused commit can compare them in SQL.
pub(crate) fn encode_events(events: &[Event]) -> Result<EventArrays, StoreError> {
    let mut arrays = EventArrays::default();
    for event in events {
        arrays.seq.push(seq_column(event.seq, "event seq")?);
        arrays.event_type.push(event.event_type.as_str().to_owned());
        arrays.step.push(seq_column(event.step, "event step")?);
        arrays.node_id.push(event.node_id.clone());
        arrays.channel_id.push(event.channel_id.clone());
        arrays.task_id.push(event.task_id.clone());
        arrays.payload.push(canonical_json_map(&event.payload));
        arrays.metadata.push(canonical_json_map(&event.metadata));
        arrays.occurred_at.push(event.timestamp.as_micros());
    }
    for text in arrays
        .node_id
        .iter()
        .chain(&arrays.channel_id)
        .chain(&arrays.task_id)
        .flatten()
    {
        if text.contains('\0') {
            return Err(StoreError::invalid_transition(
                "event node, channel and task ids must not contain NUL",
            ));
        }
    }
    Ok(arrays)
}

/// The operational columns as bind values.
pub(crate) struct OpsColumns {
    pub claim_token: Option<String>,
    pub claimed_at: Option<i64>,
    pub wake_at: Option<i64>,
    pub claim_attempts: i32,
    pub claim_abandons: i32,
    pub poisoned_at: Option<i64>,
    pub poison_reason: Option<&'static str>,
    pub latest_checkpoint_type: &'static str,
    pub admitted_at: Option<i64>,
}

pub(crate) fn encode_ops(ops: &OperationalState) -> OpsColumns {
    OpsColumns {
        claim_token: ops.claim_token.as_ref().map(|t| t.as_str().to_owned()),
        claimed_at: ops.claimed_at.map(Timestamp::as_micros),
        wake_at: ops.wake_at.map(Timestamp::as_micros),
        // Counters never approach i32::MAX (each step needs a claim or an abandon).
        claim_attempts: i32::try_from(ops.claim_attempts).unwrap_or(i32::MAX),
        claim_abandons: i32::try_from(ops.claim_abandons).unwrap_or(i32::MAX),
        poisoned_at: ops.poison.map(|p| p.poisoned_at.as_micros()),
        poison_reason: ops.poison.map(|p| p.reason.as_str()),
        latest_checkpoint_type: ops.latest_checkpoint_type.as_str(),
        admitted_at: ops.admitted_at.map(Timestamp::as_micros),
    }
}

/// The token in the only shape PostgreSQL stores (`uuid::text`: lowercase, hyphenated), or
/// `None` when the token cannot be current (the store never minted anything else).
pub(crate) fn token_uuid(token: &ClaimToken) -> Option<String> {
    let parsed = uuid::Uuid::parse_str(token.as_str()).ok()?;
    let canonical = parsed.hyphenated().to_string();
    (canonical == token.as_str()).then_some(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_uuid_tokens_can_be_current() {
        let minted = ClaimToken::mint();
        assert_eq!(token_uuid(&minted).as_deref(), Some(minted.as_str()));
        let upper = ClaimToken::new(minted.as_str().to_uppercase()).expect("token");
        assert_eq!(token_uuid(&upper), None);
        assert_eq!(
            token_uuid(&ClaimToken::new("not-a-uuid").expect("token")),
            None
        );
    }
}
