//! Encoding of documents and events, and strict decoding of everything read back.
//!
//! Events are stored as canonical JSON (`docket_core::model::value::canonical_json`), so equal
//! events are equal bytes and the scripts can compare stored events byte for byte. A run document
//! is never compared, only stored and decoded, so it is written straight from the `Run` (field
//! order as declared), without first building and re-sorting a `serde_json::Value` of it: that
//! detour was a twentieth of a Redis-bound worker's CPU (`perf`). Reads never trust
//! stored bytes: a run hash is decoded field by field, its document must pass
//! `validate_durable`, its summary fields must agree with the document and its operational
//! fields must satisfy `check_row_invariants`; anything else is [`StoreError::Corrupt`], never
//! "absent".

use std::collections::HashMap;

use docket_core::model::value::canonical_json;
use docket_core::model::{
    validate_durable, CheckpointType, ClaimToken, Event, GraphHash, GraphId, OperationalState,
    OwnerScope, Poison, PoisonReason, Run, RunId, RunStatus, RunSummary, Timestamp,
};
use docket_core::store::rules::effects::check_row_invariants;
use docket_core::store::StoreError;

/// The fields of a run hash, as read by `HGETALL`.
pub(crate) type Fields = HashMap<String, Vec<u8>>;

/// The JSON of a run document (see the module docs for why not canonical).
pub(crate) fn encode_run(run: &Run) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(run)
        .map_err(|e| StoreError::invalid_transition(format!("run document: {e}")))
}

/// Canonical JSON of an event.
pub(crate) fn encode_event(event: &Event) -> Result<Vec<u8>, StoreError> {
    serde_json::to_value(event)
        .map(|v| canonical_json(&v))
        .map_err(|e| StoreError::invalid_transition(format!("event {}: {e}", event.seq)))
}

/// A decoded run hash.
#[derive(Debug)]
pub(crate) struct StoredRun {
    pub owner: OwnerScope,
    pub run: Run,
    pub ops: OperationalState,
}

fn what(id: &RunId) -> String {
    format!("run row {}", id.as_str())
}

fn text<'a>(id: &RunId, name: &str, bytes: &'a [u8]) -> Result<&'a str, StoreError> {
    std::str::from_utf8(bytes)
        .map_err(|e| StoreError::corrupt(what(id), format!("field {name} is not UTF-8: {e}")))
}

fn required<'a>(id: &RunId, fields: &'a Fields, name: &str) -> Result<&'a str, StoreError> {
    match fields.get(name) {
        Some(bytes) => text(id, name, bytes),
        None => Err(StoreError::corrupt(
            what(id),
            format!("field {name} is missing"),
        )),
    }
}

fn optional<'a>(id: &RunId, fields: &'a Fields, name: &str) -> Result<Option<&'a str>, StoreError> {
    fields.get(name).map(|b| text(id, name, b)).transpose()
}

fn number<T: std::str::FromStr>(id: &RunId, name: &str, value: &str) -> Result<T, StoreError> {
    value.parse::<T>().map_err(|_| {
        StoreError::corrupt(
            what(id),
            format!("field {name} is not a valid number: {value:?}"),
        )
    })
}

fn time(id: &RunId, name: &str, value: &str) -> Result<Timestamp, StoreError> {
    number::<i64>(id, name, value).map(Timestamp::from_micros)
}

fn opt_time(id: &RunId, fields: &Fields, name: &str) -> Result<Option<Timestamp>, StoreError> {
    optional(id, fields, name)?
        .map(|v| time(id, name, v))
        .transpose()
}

/// The owner of a run hash (decoded first: visibility is decided before anything else).
pub(crate) fn decode_owner(id: &RunId, fields: &Fields) -> Result<OwnerScope, StoreError> {
    let key = required(id, fields, "owner")?;
    OwnerScope::from_scope_key(key)
        .map_err(|e| StoreError::corrupt(what(id), format!("field owner: {e}")))
}

/// Decodes a whole run hash (document and operational fields).
pub(crate) fn decode_run(id: &RunId, fields: &Fields) -> Result<StoredRun, StoreError> {
    let owner = decode_owner(id, fields)?;
    let doc = fields
        .get("doc")
        .ok_or_else(|| StoreError::corrupt(what(id), "field doc is missing"))?;
    let run = decode_document(id, doc)?;
    let summary = decode_summary(id, fields)?;
    check_summary_matches(id, &summary, &run)?;
    let ops = decode_ops(id, fields)?;
    check_row_invariants(run.status, &ops).map_err(|e| StoreError::corrupt(what(id), e))?;
    Ok(StoredRun { owner, run, ops })
}

/// Decodes a stored run document and checks its durable validity and id.
pub(crate) fn decode_document(id: &RunId, doc: &[u8]) -> Result<Run, StoreError> {
    let run: Run = serde_json::from_slice(doc)
        .map_err(|e| StoreError::corrupt(what(id), format!("document does not decode: {e}")))?;
    validate_durable(&run).map_err(|e| StoreError::corrupt(what(id), e.reason))?;
    if &run.id != id {
        return Err(StoreError::corrupt(
            what(id),
            format!("document belongs to run {}", run.id),
        ));
    }
    Ok(run)
}

fn check_summary_matches(id: &RunId, s: &RunSummary, run: &Run) -> Result<(), StoreError> {
    let agrees = s.graph_id == run.graph_id
        && s.graph_hash == run.graph_hash
        && s.status == run.status
        && s.step == run.step
        && s.checkpoint_seq == run.checkpoint_seq
        && Some(s.started_at) == run.started_at
        && Some(s.updated_at) == run.updated_at
        && s.finished_at == run.finished_at;
    if agrees {
        Ok(())
    } else {
        Err(StoreError::corrupt(
            what(id),
            "summary fields disagree with the stored document",
        ))
    }
}

fn decode_ops(id: &RunId, fields: &Fields) -> Result<OperationalState, StoreError> {
    let claim_token = optional(id, fields, "token")?
        .map(|t| {
            ClaimToken::new(t)
                .map_err(|e| StoreError::corrupt(what(id), format!("field token: {e}")))
        })
        .transpose()?;
    let poison = match (
        opt_time(id, fields, "poisoned_at")?,
        optional(id, fields, "poison_reason")?,
    ) {
        (None, None) => None,
        (Some(poisoned_at), Some(reason)) => Some(Poison {
            poisoned_at,
            reason: PoisonReason::parse(reason).ok_or_else(|| {
                StoreError::corrupt(what(id), format!("unknown poison reason {reason:?}"))
            })?,
        }),
        _ => {
            return Err(StoreError::corrupt(
                what(id),
                "poisoned_at and poison_reason must be present together",
            ))
        }
    };
    let ckpt = required(id, fields, "ckpt_type")?;
    Ok(OperationalState {
        claim_token,
        wake_at: opt_time(id, fields, "wake_at")?,
        claimed_at: opt_time(id, fields, "claimed_at")?,
        claim_attempts: number(id, "attempts", required(id, fields, "attempts")?)?,
        claim_abandons: number(id, "abandons", required(id, fields, "abandons")?)?,
        poison,
        latest_checkpoint_type: CheckpointType::parse(ckpt).ok_or_else(|| {
            StoreError::corrupt(what(id), format!("unknown checkpoint type {ckpt:?}"))
        })?,
        admitted_at: opt_time(id, fields, "admitted_at")?,
    })
}

/// The summary fields `list_runs` reads (never the document).
pub(crate) const SUMMARY_FIELDS: [&str; 9] = [
    "owner",
    "graph_id",
    "graph_hash",
    "status",
    "step",
    "seq",
    "started_at",
    "updated_at",
    "finished_at",
];

/// Decodes the summary of a run hash.
pub(crate) fn decode_summary(id: &RunId, fields: &Fields) -> Result<RunSummary, StoreError> {
    let status = required(id, fields, "status")?;
    Ok(RunSummary {
        id: id.clone(),
        owner: decode_owner(id, fields)?,
        graph_id: GraphId::new(required(id, fields, "graph_id")?)
            .map_err(|e| StoreError::corrupt(what(id), format!("field graph_id: {e}")))?,
        graph_hash: GraphHash::new(required(id, fields, "graph_hash")?)
            .map_err(|e| StoreError::corrupt(what(id), format!("field graph_hash: {e}")))?,
        status: RunStatus::parse(status)
            .filter(|s| s.is_durable())
            .ok_or_else(|| StoreError::corrupt(what(id), format!("unknown status {status:?}")))?,
        step: number(id, "step", required(id, fields, "step")?)?,
        checkpoint_seq: number(id, "seq", required(id, fields, "seq")?)?,
        started_at: time(id, "started_at", required(id, fields, "started_at")?)?,
        updated_at: time(id, "updated_at", required(id, fields, "updated_at")?)?,
        finished_at: opt_time(id, fields, "finished_at")?,
    })
}

/// Decodes a stored event and checks that it is the event its key says it is.
pub(crate) fn decode_event(run_id: &RunId, seq: u64, bytes: &[u8]) -> Result<Event, StoreError> {
    let what = || format!("event row {}#{seq}", run_id.as_str());
    let event: Event = serde_json::from_slice(bytes)
        .map_err(|e| StoreError::corrupt(what(), format!("does not decode: {e}")))?;
    if &event.run_id != run_id || event.seq != seq {
        return Err(StoreError::corrupt(
            what(),
            format!("stored event is {}#{}", event.run_id, event.seq),
        ));
    }
    Ok(event)
}

/// Parses a 19-digit seq member.
pub(crate) fn parse_seq_member(run_id: &RunId, member: &str) -> Result<u64, StoreError> {
    if member.len() != 19 {
        return Err(StoreError::corrupt(
            format!("event index of {}", run_id.as_str()),
            format!("malformed seq member {member:?}"),
        ));
    }
    member.parse::<u64>().map_err(|_| {
        StoreError::corrupt(
            format!("event index of {}", run_id.as_str()),
            format!("malformed seq member {member:?}"),
        )
    })
}

/// Inverse of [`crate::keys::sortable_time`].
pub(crate) fn parse_sortable_time(s: &str) -> Option<Timestamp> {
    let (sign, digits) = s.split_at_checked(1)?;
    if digits.len() != 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match sign {
        "p" => digits.parse::<i64>().ok().map(Timestamp::from_micros),
        "n" => {
            let magnitude: String = digits
                .bytes()
                .map(|d| char::from(b'9' - (d - b'0')))
                .collect();
            let magnitude = magnitude.parse::<u64>().ok()?;
            0i64.checked_sub_unsigned(magnitude)
                .map(Timestamp::from_micros)
        }
        _ => None,
    }
}

/// Splits a `sortable(time):rest` index member.
pub(crate) fn split_index_member(member: &str) -> Option<(Timestamp, &str)> {
    let (time, rest) = member.split_at_checked(20)?;
    let rest = rest.strip_prefix(':')?;
    Some((parse_sortable_time(time)?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::sortable_time;

    #[test]
    fn sortable_time_round_trips() {
        for t in [
            i64::MIN,
            -1_000_001,
            -1,
            0,
            1,
            1_700_000_000_123_456,
            i64::MAX,
        ] {
            let ts = Timestamp::from_micros(t);
            assert_eq!(parse_sortable_time(&sortable_time(ts)), Some(ts));
        }
        assert_eq!(parse_sortable_time("x0000000000000000000"), None);
        assert_eq!(parse_sortable_time("p12"), None);
    }

    /// A run document as earlier versions stored it (canonical JSON: sorted keys), taken from
    /// a 3-node run after its first moment.
    const CANONICAL_DOCUMENT: &str = concat!(
        r#"{"active_tasks":{},"changed_channels":["edge:e1","state:n"],"channels":{"#,
        r#""edge:e0":{"barrier_seen":[],"channel_id":"edge:e0","value":null,"version":1},"#,
        r#""edge:e1":{"barrier_seen":[],"channel_id":"edge:e1","value":true,"version":1},"#,
        r#""state:n":{"barrier_seen":[],"channel_id":"state:n","value":1,"version":1}},"#,
        r#""checkpoint_seq":2,"event_seq":7,"graph_hash":"#,
        r#""70e474958f461b4df1c740edae6c5df49db2994ae3dd54d95a1544f6ba775a7b","#,
        r#""graph_id":"bench_chain","id":"bench-e2e-0000100","input":{},"interrupts":{},"#,
        r#""metadata":{},"pending_nodes":[],"pending_writes":[],"started_at":1796300539210643,"#,
        r#""status":"running","step":1,"timers":{},"updated_at":1796300539216160}"#
    );

    #[test]
    fn documents_stored_canonical_and_as_written_read_back_alike() {
        let id = RunId::new("bench-e2e-0000100").expect("id");
        let run = decode_document(&id, CANONICAL_DOCUMENT.as_bytes()).expect("old form reads");
        let written = encode_run(&run).expect("encodes");
        assert_eq!(decode_document(&id, &written).expect("new form reads"), run);
        // The same JSON, only in the declared field order.
        let value: serde_json::Value = serde_json::from_slice(&written).expect("JSON");
        assert_eq!(canonical_json(&value), CANONICAL_DOCUMENT.as_bytes());
    }

    #[test]
    fn index_members_split_at_the_first_separator_only() {
        let ts = Timestamp::from_micros(42);
        let member = format!("{}:run:with:colons", sortable_time(ts));
        assert_eq!(split_index_member(&member), Some((ts, "run:with:colons")));
    }
}
