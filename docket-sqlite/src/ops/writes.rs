//! The registry's writes, each run by the caller inside one `BEGIN IMMEDIATE` transaction on
//! the writer thread, so every check and every write of one call are one atomic step.
//!
//! A transition is one `UPDATE … WHERE status IN (<from-set>) AND <owner not retired>`
//! whose from-set, target, progress, start stamp and sequence minting are bound from the
//! action's row of [`rules::TABLE`] (nothing about the state machine is written here), and
//! which takes the owner's next completion sequence in the same statement. Only when it
//! matches nothing does a re-read tell `OwnerRetired`, `NotFound` and `InvalidTransition`
//! apart.

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use docket_core::model::Timestamp;
use docket_core::ops::rules::{self, RegistrationFacts, Retention, TransitionRule};
use docket_core::ops::{
    CompletedOperation, OperationId, OperationLifecycleSnapshot, OperationStatus,
    OperationTransition, OpsError, SessionId,
};

use super::rows::{collect_raw, decode, raw, unencodable, COLUMNS};
use crate::error::SqlResult;

/// The most statuses any from-set holds (the statement has that many slots).
const FROM_SLOTS: usize = 3;

/// What a terminal write leaves for the caller to announce.
pub(crate) struct Written<T> {
    /// The call's answer.
    pub value: T,
    /// Whether an operation turned terminal (so a wake hint is due after the commit).
    pub ended: bool,
}

fn owner_key(owner: &SessionId) -> String {
    owner.to_string()
}

/// Whether `owner` is retired (an owner without a row is not).
fn is_retired(tx: &Connection, owner: &str) -> Result<bool, OpsError> {
    let retired: Option<i64> = tx
        .prepare_cached("SELECT retired FROM docket_ops_owners WHERE owner_id = ?1")
        .sql()?
        .query_row([owner], |row| row.get(0))
        .optional()
        .sql()?;
    Ok(retired == Some(1))
}

/// Registers `record` (a fresh Provisioning record): the facts, the decision of the rules,
/// then the owner row if absent and the operation row.
pub(crate) fn register(
    tx: &Connection,
    record: &OperationLifecycleSnapshot,
    max_concurrent: Option<u32>,
) -> Result<(), OpsError> {
    let owner = owner_key(&record.owner);
    let id = record.id.to_string();
    // Live rows are exactly those without a completion sequence (a CHECK of the table).
    let (retired, taken, active): (Option<i64>, bool, i64) = tx
        .prepare_cached(
            "SELECT (SELECT retired FROM docket_ops_owners WHERE owner_id = ?1), \
                    EXISTS (SELECT 1 FROM docket_ops_operations \
                            WHERE owner_id = ?1 AND op_id = ?2), \
                    (SELECT count(*) FROM docket_ops_operations \
                     WHERE owner_id = ?1 AND completion_seq IS NULL)",
        )
        .sql()?
        .query_row(params![owner, id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .sql()?;
    let facts = RegistrationFacts {
        owner_retired: retired == Some(1),
        id_taken: taken,
        active: u64::try_from(active).unwrap_or(0),
    };
    rules::check_registration(record.owner, record.id, facts, max_concurrent)?;
    tx.prepare_cached(
        "INSERT INTO docket_ops_owners (owner_id, retired, next_completion_seq) \
         VALUES (?1, 0, 1) ON CONFLICT (owner_id) DO NOTHING",
    )
    .sql()?
    .execute([&owner])
    .sql()?;
    let source = record
        .source
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(unencodable)?;
    tx.prepare_cached(
        "INSERT INTO docket_ops_operations (owner_id, op_id, kind, display_name, source_label, \
             source, status, progress_count, outcome, completion_seq, created_at, started_at, \
             completed_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, NULL, NULL, ?8, NULL, NULL)",
    )
    .sql()?
    .execute(params![
        owner,
        id,
        record.kind.name(),
        record.display_name,
        record.source_label,
        source,
        record.status.as_str(),
        record.created_at.as_micros(),
    ])
    .sql()?;
    Ok(())
}

/// The from-set of `rule` as the statement's slots, padded with NULL (which matches nothing).
fn from_slots(rule: &TransitionRule) -> Result<[Value; FROM_SLOTS], OpsError> {
    if rule.from.len() > FROM_SLOTS {
        return Err(OpsError::permanent(docket_core::store::Message(format!(
            "the from-set of {} has more than {FROM_SLOTS} statuses",
            rule.action
        ))));
    }
    let mut slots = [Value::Null, Value::Null, Value::Null];
    for (slot, status) in slots.iter_mut().zip(rule.from) {
        *slot = Value::Text(status.as_str().to_owned());
    }
    Ok(slots)
}

/// Applies one transition (validated) in one statement; `None` when nothing matched.
fn update(
    tx: &Connection,
    owner: &SessionId,
    id: &OperationId,
    transition: &OperationTransition,
    now: Timestamp,
) -> Result<Option<OperationLifecycleSnapshot>, OpsError> {
    let rule = rules::rule(transition.action);
    let [from_a, from_b, from_c] = from_slots(rule)?;
    let outcome = transition
        .outcome
        .as_ref()
        .filter(|_| rule.mints_completion_seq)
        .map(serde_json::to_string)
        .transpose()
        .map_err(unencodable)?;
    let sql = format!(
        "UPDATE docket_ops_operations SET \
             status = COALESCE(?6, status), \
             progress_count = progress_count + ?7, \
             started_at = CASE WHEN ?8 THEN ?11 ELSE started_at END, \
             outcome = CASE WHEN ?9 THEN ?10 ELSE outcome END, \
             completion_seq = CASE WHEN ?9 THEN \
                 (SELECT next_completion_seq FROM docket_ops_owners WHERE owner_id = ?1) \
                 ELSE completion_seq END, \
             completed_at = CASE WHEN ?9 THEN ?11 ELSE completed_at END \
         WHERE owner_id = ?1 AND op_id = ?2 AND status IN (?3, ?4, ?5) \
           AND EXISTS (SELECT 1 FROM docket_ops_owners WHERE owner_id = ?1 AND retired = 0) \
         RETURNING {COLUMNS}"
    );
    let row = tx
        .prepare_cached(&sql)
        .sql()?
        .query_row(
            params![
                owner_key(owner),
                id.to_string(),
                from_a,
                from_b,
                from_c,
                rule.to.map(OperationStatus::as_str),
                i64::from(rule.counts_progress),
                rule.stamps_started_at,
                rule.mints_completion_seq,
                outcome,
                now.as_micros(),
            ],
            raw,
        )
        .optional()
        .sql()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let record = decode(owner, row)?;
    if rule.mints_completion_seq {
        tx.prepare_cached(
            "UPDATE docket_ops_owners SET next_completion_seq = next_completion_seq + 1 \
             WHERE owner_id = ?1",
        )
        .sql()?
        .execute([owner_key(owner)])
        .sql()?;
    }
    Ok(Some(record))
}

/// Why a transition matched nothing: the owner is retired, the record is absent, or its
/// status is outside the action's from-set.
fn refusal(
    tx: &Connection,
    owner: &SessionId,
    id: &OperationId,
    transition: &OperationTransition,
) -> Result<OpsError, OpsError> {
    let key = owner_key(owner);
    if is_retired(tx, &key)? {
        return Ok(OpsError::OwnerRetired { owner: *owner });
    }
    let status: Option<String> = tx
        .prepare_cached(
            "SELECT status FROM docket_ops_operations WHERE owner_id = ?1 AND op_id = ?2",
        )
        .sql()?
        .query_row(params![key, id.to_string()], |row| row.get(0))
        .optional()
        .sql()?;
    let Some(status) = status else {
        return Ok(OpsError::NotFound { id: *id });
    };
    let status = OperationStatus::parse(&status).ok_or_else(|| {
        OpsError::corrupt(
            format!("operation row {owner}/{id}"),
            format!("unknown status {status:?}"),
        )
    })?;
    match rules::check_from(*id, transition.action, status) {
        Err(refused) => Ok(refused),
        // The status allows the action, yet the statement matched nothing: the row changed
        // under a transaction that holds the write lock, which cannot happen.
        Ok(_) => Err(OpsError::corrupt(
            format!("operation row {owner}/{id}"),
            "a legal transition matched no row",
        )),
    }
}

/// Evicts the owner's oldest terminal records beyond `retention`.
fn evict(tx: &Connection, owner: &SessionId, retention: Retention) -> Result<(), OpsError> {
    tx.prepare_cached(
        "DELETE FROM docket_ops_operations \
         WHERE owner_id = ?1 AND completion_seq < ( \
             SELECT completion_seq FROM docket_ops_operations \
             WHERE owner_id = ?1 AND completion_seq IS NOT NULL \
             ORDER BY completion_seq DESC LIMIT 1 OFFSET ?2)",
    )
    .sql()?
    .execute(params![
        owner_key(owner),
        i64::from(retention.max_terminal() - 1)
    ])
    .sql()?;
    Ok(())
}

/// One transition of one operation, with retention when it ended the operation.
pub(crate) fn transition(
    tx: &Connection,
    owner: &SessionId,
    id: &OperationId,
    transition: &OperationTransition,
    now: Timestamp,
    retention: Retention,
) -> Result<Written<OperationLifecycleSnapshot>, OpsError> {
    match update(tx, owner, id, transition, now)? {
        Some(record) => {
            let ended = rules::rule(transition.action).mints_completion_seq;
            if ended {
                evict(tx, owner, retention)?;
            }
            Ok(Written {
                value: record,
                ended,
            })
        }
        None => Err(refusal(tx, owner, id, transition)?),
    }
}

/// Terminates every live operation of `owner` in id order (the owner must not be retired).
fn terminate_live(
    tx: &Connection,
    owner: &SessionId,
    reason: &str,
    now: Timestamp,
    retention: Retention,
) -> Result<Vec<CompletedOperation>, OpsError> {
    let ids: Vec<String> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT op_id FROM docket_ops_operations \
                 WHERE owner_id = ?1 AND completion_seq IS NULL ORDER BY op_id",
            )
            .sql()?;
        let rows = stmt.query_map([owner_key(owner)], |row| row.get(0)).sql()?;
        rows.collect::<rusqlite::Result<_>>().sql()?
    };
    let termination = rules::termination(reason);
    let mut ended = Vec::with_capacity(ids.len());
    for id in ids {
        let id: OperationId = id
            .parse()
            .map_err(|e: OpsError| OpsError::corrupt(format!("operation row {owner}/{id}"), e))?;
        let record = update(tx, owner, &id, &termination, now)?.ok_or_else(|| {
            OpsError::corrupt(
                format!("operation row {owner}/{id}"),
                "a live operation could not be terminated",
            )
        })?;
        if let (Some(completion_seq), Some(outcome)) =
            (record.completion_seq, record.terminal_outcome)
        {
            ended.push(CompletedOperation {
                id,
                completion_seq,
                outcome,
            });
        }
    }
    if !ended.is_empty() {
        evict(tx, owner, retention)?;
    }
    Ok(ended)
}

/// `terminate_owner`.
pub(crate) fn terminate_owner(
    tx: &Connection,
    owner: &SessionId,
    reason: &str,
    now: Timestamp,
    retention: Retention,
) -> Result<Written<Vec<CompletedOperation>>, OpsError> {
    if is_retired(tx, &owner_key(owner))? {
        return Err(OpsError::OwnerRetired { owner: *owner });
    }
    let value = terminate_live(tx, owner, reason, now, retention)?;
    let ended = !value.is_empty();
    Ok(Written { value, ended })
}

/// `retire_owner`: nothing for a retired owner; otherwise terminate, then set the flag.
pub(crate) fn retire_owner(
    tx: &Connection,
    owner: &SessionId,
    reason: &str,
    now: Timestamp,
    retention: Retention,
) -> Result<Written<Vec<CompletedOperation>>, OpsError> {
    if is_retired(tx, &owner_key(owner))? {
        return Ok(Written {
            value: Vec::new(),
            ended: false,
        });
    }
    let value = terminate_live(tx, owner, reason, now, retention)?;
    tx.prepare_cached(
        "INSERT INTO docket_ops_owners (owner_id, retired, next_completion_seq) \
         VALUES (?1, 1, 1) ON CONFLICT (owner_id) DO UPDATE SET retired = 1",
    )
    .sql()?
    .execute([owner_key(owner)])
    .sql()?;
    let ended = !value.is_empty();
    Ok(Written { value, ended })
}

/// `collect_completed`: deletes the owner's terminal rows and returns them in completion
/// order.
pub(crate) fn collect_completed(
    tx: &Connection,
    owner: &SessionId,
) -> Result<Vec<CompletedOperation>, OpsError> {
    if is_retired(tx, &owner_key(owner))? {
        return Err(OpsError::OwnerRetired { owner: *owner });
    }
    let raws = {
        let mut stmt = tx
            .prepare_cached(&format!(
                "DELETE FROM docket_ops_operations \
                 WHERE owner_id = ?1 AND completion_seq IS NOT NULL RETURNING {COLUMNS}"
            ))
            .sql()?;
        let rows = stmt.query_map([owner_key(owner)], raw).sql()?;
        collect_raw(rows)?
    };
    let mut drained = Vec::with_capacity(raws.len());
    for raw in raws {
        let record = decode(owner, raw)?;
        let (Some(completion_seq), Some(outcome)) =
            (record.completion_seq, record.terminal_outcome)
        else {
            return Err(OpsError::corrupt(
                format!("operation row {owner}/{}", record.id),
                "a terminal record without its outcome",
            ));
        };
        drained.push(CompletedOperation {
            id: record.id,
            completion_seq,
            outcome,
        });
    }
    drained.sort_by_key(|d| d.completion_seq);
    Ok(drained)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transition statement is bound from the table; every from-set must fit its slots,
    /// and the bound slots must be exactly the from-set.
    #[test]
    fn every_from_set_of_the_table_fits_the_statement() {
        for rule in &rules::TABLE {
            let slots = from_slots(rule).expect("fits");
            let bound: Vec<&str> = slots
                .iter()
                .filter_map(|v| match v {
                    Value::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let expected: Vec<&str> = rule.from.iter().map(|s| s.as_str()).collect();
            assert_eq!(bound, expected, "{}", rule.action);
        }
    }
}
