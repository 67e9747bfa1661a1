//! Operation hashes in and out: the fields of a new record, and the strict decoding of a
//! stored one (a missing or undecodable field, or a record that breaks the invariants of
//! [`check_record`], is `Corrupt`, never "absent").

use std::collections::HashMap;

use docket_core::model::Timestamp;
use docket_core::ops::rules::check_record;
use docket_core::ops::{
    CompletedOperation, CompletionSeq, OperationId, OperationKind, OperationLifecycleSnapshot,
    OperationStatus, OpsError, SessionId,
};

/// A record hash as field → bytes.
pub(super) type Fields = HashMap<String, Vec<u8>>;

/// Pairs a flat `field, value, field, value, ...` list (an `HGETALL` reply) into [`Fields`].
pub(super) fn pair(flat: Vec<Vec<u8>>, what: &str) -> Result<Fields, OpsError> {
    if flat.len() % 2 != 0 {
        return Err(OpsError::corrupt(what, "an odd field/value list"));
    }
    let mut fields = Fields::with_capacity(flat.len() / 2);
    let mut items = flat.into_iter();
    while let (Some(field), Some(value)) = (items.next(), items.next()) {
        let field = String::from_utf8(field)
            .map_err(|e| OpsError::corrupt(what, format!("field name: {e}")))?;
        fields.insert(field, value);
    }
    Ok(fields)
}

/// The error of a source or outcome that cannot be encoded as JSON.
pub(super) fn unencodable(error: serde_json::Error) -> OpsError {
    OpsError::invalid_argument(format!("cannot be encoded: {error}"))
}

/// Reads one record hash of `owner` (fields as stored) into a verified snapshot.
pub(super) fn decode(
    owner: &SessionId,
    id: &OperationId,
    fields: &Fields,
) -> Result<OperationLifecycleSnapshot, OpsError> {
    let what = format!("operation record {owner}/{id}");
    let corrupt = |detail: String| OpsError::corrupt(what.clone(), detail);
    let text = |name: &str| -> Result<Option<&str>, OpsError> {
        fields
            .get(name)
            .map(|bytes| std::str::from_utf8(bytes).map_err(|e| corrupt(format!("{name}: {e}"))))
            .transpose()
    };
    let required = |name: &str| -> Result<&str, OpsError> {
        text(name)?.ok_or_else(|| corrupt(format!("the field {name} is missing")))
    };
    let integer = |name: &str| -> Result<Option<i64>, OpsError> {
        text(name)?
            .map(|t| {
                t.parse::<i64>()
                    .map_err(|_| corrupt(format!("{name} is not an integer: {t:?}")))
            })
            .transpose()
    };
    let unsigned = |name: &str| -> Result<Option<u64>, OpsError> {
        text(name)?
            .map(|t| {
                t.parse::<u64>()
                    .map_err(|_| corrupt(format!("{name} is not an unsigned integer: {t:?}")))
            })
            .transpose()
    };
    let kind = OperationKind::parse(required("kind")?).map_err(|e| corrupt(e.to_string()))?;
    let status_text = required("status")?;
    let status = OperationStatus::parse(status_text)
        .ok_or_else(|| corrupt(format!("unknown status {status_text:?}")))?;
    let source = text("source")?
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(format!("source: {e}")))?;
    let terminal_outcome = text("outcome")?
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(format!("outcome: {e}")))?;
    let created_at = integer("created_at")?
        .ok_or_else(|| corrupt("the field created_at is missing".to_owned()))?;
    let record = OperationLifecycleSnapshot {
        id: *id,
        owner: *owner,
        kind,
        display_name: required("name")?.to_owned(),
        source_label: required("label")?.to_owned(),
        source,
        status,
        progress_count: unsigned("progress")?
            .ok_or_else(|| corrupt("the field progress is missing".to_owned()))?,
        terminal_outcome,
        completion_seq: unsigned("seq")?.map(CompletionSeq),
        created_at: Timestamp::from_micros(created_at),
        started_at: integer("started_at")?.map(Timestamp::from_micros),
        completed_at: integer("completed_at")?.map(Timestamp::from_micros),
    };
    check_record(&record).map_err(corrupt)?;
    Ok(record)
}

/// Reads a `{id, field, value, ...}` element of a script reply (an id, then its record hash).
pub(super) fn decode_tagged(
    owner: &SessionId,
    mut tagged: Vec<Vec<u8>>,
) -> Result<OperationLifecycleSnapshot, OpsError> {
    if tagged.is_empty() {
        return Err(OpsError::corrupt(
            format!("operation records of {owner}"),
            "an untagged record",
        ));
    }
    let raw_id = tagged.remove(0);
    let id = parse_id(owner, &raw_id)?;
    let what = format!("operation record {owner}/{id}");
    decode(owner, &id, &pair(tagged, &what)?)
}

/// Parses an id the store holds (an index member or a script reply).
pub(super) fn parse_id(owner: &SessionId, raw: &[u8]) -> Result<OperationId, OpsError> {
    let text = String::from_utf8_lossy(raw);
    text.parse().map_err(|e: OpsError| {
        OpsError::corrupt(
            format!("operation index of {owner}"),
            format!("{text:?}: {e}"),
        )
    })
}

/// The drained form of a terminal record.
pub(super) fn completed(
    record: OperationLifecycleSnapshot,
) -> Result<CompletedOperation, OpsError> {
    match (record.completion_seq, record.terminal_outcome) {
        (Some(completion_seq), Some(outcome)) => Ok(CompletedOperation {
            id: record.id,
            completion_seq,
            outcome,
        }),
        _ => Err(OpsError::corrupt(
            format!("operation record {}/{}", record.owner, record.id),
            "a terminal record without its outcome",
        )),
    }
}
