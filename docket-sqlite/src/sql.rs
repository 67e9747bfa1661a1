//! Row-level statements shared by the operations: load, insert and update one run row, read and
//! append events. Policy never lives here; these only move values in and out.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use docket_core::model::{Event, OperationalState, OwnerScope, Run, RunId, Scope, Timestamp};
use docket_core::store::rules::events::StoredEvent;
use docket_core::store::rules::transition::StoredHead;
use docket_core::store::StoreError;

use crate::codec::{
    decode_event, decode_head, decode_ops, decode_run, encode_document, encode_map, row_values,
    sql_u64, OpsRow, StoredRun, EVENT_COLUMNS, HEAD_STARTED_AT, OPS_COLUMNS, OPS_COLUMN_COUNT,
    RUN_COLUMNS, RUN_COLUMN_COUNT,
};
use crate::error::{commit_error, SqlResult};
use crate::options::Synchronous;

/// Runs `f` inside `BEGIN IMMEDIATE … COMMIT`: the write lock is taken before the first read, so
/// a concurrent writer in another process can never invalidate what `f` read
/// (no `SQLITE_BUSY_SNAPSHOT`). Any error before `COMMIT` rolls everything back; a failing
/// `COMMIT` itself is mapped by `commit_error`: contention and a full disk wrote nothing, an
/// I/O error (e.g. fsync) may leave the frames in the WAL and is `Ambiguous`.
pub(crate) fn immediate<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .sql()?;
    let out = f(&tx)?;
    tx.commit().map_err(commit_error)?;
    Ok(out)
}

/// Runs `f` like [`immediate`], but commits without syncing the write-ahead log to the disk
/// even when the store syncs every commit (`configured` is [`Synchronous::Full`]): for a
/// claim, which need not survive an OS crash or power loss. A lost claim fences its holder
/// out at the holder's next write, exactly as a steal does, and the run is claimed again; and
/// since the WAL is one file written in order, the holder's next synced commit syncs the
/// claim's frames with its own, so no commit of the holder can outlive its claim. An
/// application crash loses nothing either way (the frames are in the OS's cache). Not
/// syncing keeps the disk's fsync — and its stalls — out of the way between a due run and
/// the worker that starts it.
///
/// The configured level is restored before returning, whatever `f` answered — also when it
/// panics (the writer thread survives a panicking job and must not go on committing
/// unsynced).
///
/// # Errors
/// As [`immediate`]; a pragma that cannot be set is a SQLite error mapped as any other.
pub(crate) fn immediate_unsynced<T>(
    conn: &mut Connection,
    configured: Synchronous,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    if configured != Synchronous::Full {
        return immediate(conn, f);
    }
    conn.pragma_update(None, "synchronous", Synchronous::Normal.as_pragma())
        .sql()?;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| immediate(conn, f)));
    // Every other write syncs as configured. Should the restore fail (SQLite sets this
    // pragma without any I/O), the claim's own answer is no longer the whole truth: the
    // writer would commit unsynced from now on, so the error is what the caller hears.
    let restored = conn
        .pragma_update(None, "synchronous", configured.as_pragma())
        .sql();
    match out {
        Ok(out) => restored.and(out),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Runs `f` inside one read transaction, so several statements see one snapshot.
pub(crate) fn snapshot<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Deferred)
        .sql()?;
    let out = f(&tx)?;
    tx.commit().sql()?;
    Ok(out)
}

/// The owner key of a run, if the run exists (no decoding beyond the scope key).
fn owner_of(conn: &Connection, run_id: &RunId) -> Result<Option<String>, StoreError> {
    conn.prepare_cached("SELECT scope_key FROM docket_runs WHERE run_id = ?1")
        .sql()?
        .query_row([run_id.as_str()], |row| row.get::<_, String>(0))
        .optional()
        .sql()
}

/// Whether a row owned by `scope_key` is visible in `scope`.
fn admits(scope: &Scope, scope_key: &str) -> bool {
    match scope {
        Scope::System => true,
        Scope::Tenantless => scope_key.is_empty(),
        Scope::Tenant(id) => id.as_str() == scope_key,
    }
}

/// Whether the run exists and is visible in `scope` (without decoding it).
pub(crate) fn visible(
    conn: &Connection,
    scope: &Scope,
    run_id: &RunId,
) -> Result<bool, StoreError> {
    Ok(owner_of(conn, run_id)?.is_some_and(|key| admits(scope, &key)))
}

/// The run row visible in `scope`, decoded. Visibility is decided before decoding, so another
/// tenant's corrupt row is `None` (not found), never a leak of its corruption.
pub(crate) fn load_run(
    conn: &Connection,
    scope: &Scope,
    run_id: &RunId,
) -> Result<Option<StoredRun>, StoreError> {
    if !visible(conn, scope, run_id)? {
        return Ok(None);
    }
    let values = conn
        .prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM docket_runs WHERE run_id = ?1"
        ))
        .sql()?
        .query_row([run_id.as_str()], |row| row_values(row, RUN_COLUMN_COUNT))
        .optional()
        .sql()?;
    values.as_deref().map(decode_run).transpose()
}

/// The transition head and operational row of a run visible in `scope`, read from columns
/// only (a transition never decodes the stored document).
pub(crate) fn load_head(
    conn: &Connection,
    scope: &Scope,
    run_id: &RunId,
) -> Result<Option<(StoredHead, OpsRow)>, StoreError> {
    if !visible(conn, scope, run_id)? {
        return Ok(None);
    }
    let values = conn
        .prepare_cached(&format!(
            "SELECT {OPS_COLUMNS}, started_at FROM docket_runs WHERE run_id = ?1"
        ))
        .sql()?
        .query_row([run_id.as_str()], |row| {
            row_values(row, HEAD_STARTED_AT + 1)
        })
        .optional()
        .sql()?;
    values.as_deref().map(decode_head).transpose()
}

/// The stored event at `seq` as the transition rules compare it (undecodable bytes can never
/// equal a proposal, so they are a conflict rather than an error).
pub(crate) fn load_event_for_merge(
    conn: &Connection,
    run_id: &RunId,
    seq: u64,
) -> Result<Option<StoredEvent>, StoreError> {
    match load_event(conn, run_id, seq) {
        Ok(found) => Ok(found.map(StoredEvent::Event)),
        Err(StoreError::Corrupt { .. }) => Ok(Some(StoredEvent::Undecodable)),
        Err(other) => Err(other),
    }
}

/// The operational row of a run (any owner: claim operations are system work).
pub(crate) fn load_ops(conn: &Connection, run_id: &RunId) -> Result<Option<OpsRow>, StoreError> {
    let values = conn
        .prepare_cached(&format!(
            "SELECT {OPS_COLUMNS} FROM docket_runs WHERE run_id = ?1"
        ))
        .sql()?
        .query_row([run_id.as_str()], |row| row_values(row, OPS_COLUMN_COUNT))
        .optional()
        .sql()?;
    values.as_deref().map(decode_ops).transpose()
}

/// Whether a run id is taken in any scope.
pub(crate) fn run_exists(conn: &Connection, run_id: &RunId) -> Result<bool, StoreError> {
    Ok(owner_of(conn, run_id)?.is_some())
}

/// Inserts a new run row.
pub(crate) fn insert_run(
    conn: &Connection,
    owner: &OwnerScope,
    run: &Run,
    ops: &OperationalState,
) -> Result<(), StoreError> {
    let document = encode_document(run)?;
    let (started_at, updated_at) = run_times(run)?;
    conn.prepare_cached(
        "INSERT INTO docket_runs (run_id, tenant_id, scope_key, graph_id, graph_hash, status, \
         step, checkpoint_seq, event_seq, document, latest_checkpoint_type, claim_token, \
         claimed_at, wake_at, claim_attempts, claim_abandons, poisoned_at, poison_reason, \
         started_at, updated_at, finished_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19, ?20, ?21)",
    )
    .sql()?
    .execute(params![
        run.id.as_str(),
        owner.tenant_id().map(|t| t.as_str()),
        owner.scope_key(),
        run.graph_id.as_str(),
        run.graph_hash.as_str(),
        run.status.as_str(),
        sql_u64(run.step, "step")?,
        sql_u64(run.checkpoint_seq, "checkpoint_seq")?,
        sql_u64(run.event_seq, "event_seq")?,
        document,
        ops.latest_checkpoint_type.as_str(),
        ops.claim_token.as_ref().map(|t| t.as_str()),
        ops.claimed_at.map(Timestamp::as_micros),
        ops.wake_at.map(Timestamp::as_micros),
        i64::from(ops.claim_attempts),
        i64::from(ops.claim_abandons),
        ops.poison.map(|p| p.poisoned_at.as_micros()),
        ops.poison.map(|p| p.reason.as_str()),
        started_at,
        updated_at,
        run.finished_at.map(Timestamp::as_micros),
    ])
    .sql()?;
    Ok(())
}

/// Replaces the document columns and the operational state of an existing run, in one
/// statement (the CHECK constraints judge the final row, not a half-updated one).
pub(crate) fn update_run(
    conn: &Connection,
    run: &Run,
    ops: &OperationalState,
) -> Result<(), StoreError> {
    let document = encode_document(run)?;
    let (_, updated_at) = run_times(run)?;
    conn.prepare_cached(
        "UPDATE docket_runs SET status = ?2, step = ?3, checkpoint_seq = ?4, event_seq = ?5, \
         document = ?6, updated_at = ?7, finished_at = ?8, latest_checkpoint_type = ?9, \
         claim_token = ?10, claimed_at = ?11, wake_at = ?12, claim_attempts = ?13, \
         claim_abandons = ?14, poisoned_at = ?15, poison_reason = ?16, admitted_at = ?17 \
         WHERE run_id = ?1",
    )
    .sql()?
    .execute(params![
        run.id.as_str(),
        run.status.as_str(),
        sql_u64(run.step, "step")?,
        sql_u64(run.checkpoint_seq, "checkpoint_seq")?,
        sql_u64(run.event_seq, "event_seq")?,
        document,
        updated_at,
        run.finished_at.map(Timestamp::as_micros),
        ops.latest_checkpoint_type.as_str(),
        ops.claim_token.as_ref().map(|t| t.as_str()),
        ops.claimed_at.map(Timestamp::as_micros),
        ops.wake_at.map(Timestamp::as_micros),
        i64::from(ops.claim_attempts),
        i64::from(ops.claim_abandons),
        ops.poison.map(|p| p.poisoned_at.as_micros()),
        ops.poison.map(|p| p.reason.as_str()),
        ops.admitted_at.map(Timestamp::as_micros),
    ])
    .sql()?;
    Ok(())
}

/// Replaces the operational state of a run.
pub(crate) fn update_ops(
    conn: &Connection,
    run_id: &RunId,
    ops: &OperationalState,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE docket_runs SET latest_checkpoint_type = ?2, claim_token = ?3, claimed_at = ?4, \
         wake_at = ?5, claim_attempts = ?6, claim_abandons = ?7, poisoned_at = ?8, \
         poison_reason = ?9, admitted_at = ?10 WHERE run_id = ?1",
    )
    .sql()?
    .execute(params![
        run_id.as_str(),
        ops.latest_checkpoint_type.as_str(),
        ops.claim_token.as_ref().map(|t| t.as_str()),
        ops.claimed_at.map(Timestamp::as_micros),
        ops.wake_at.map(Timestamp::as_micros),
        i64::from(ops.claim_attempts),
        i64::from(ops.claim_abandons),
        ops.poison.map(|p| p.poisoned_at.as_micros()),
        ops.poison.map(|p| p.reason.as_str()),
        ops.admitted_at.map(Timestamp::as_micros),
    ])
    .sql()?;
    Ok(())
}

fn run_times(run: &Run) -> Result<(i64, i64), StoreError> {
    match (run.started_at, run.updated_at) {
        (Some(started), Some(updated)) => Ok((started.as_micros(), updated.as_micros())),
        _ => Err(StoreError::invalid_transition(
            "a stored run needs started_at and updated_at",
        )),
    }
}

/// The stored event `seq` of `run_id`, decoded.
pub(crate) fn load_event(
    conn: &Connection,
    run_id: &RunId,
    seq: u64,
) -> Result<Option<Event>, StoreError> {
    let Ok(seq) = i64::try_from(seq) else {
        return Ok(None);
    };
    let values = conn
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM docket_events WHERE run_id = ?1 AND seq = ?2"
        ))
        .sql()?
        .query_row(params![run_id.as_str(), seq], |row| row_values(row, 10))
        .optional()
        .sql()?;
    values.as_deref().map(decode_event).transpose()
}

/// Appends events (already merged with the stored ones), stamping `inserted_at = now`.
pub(crate) fn insert_events(
    conn: &Connection,
    events: &[Event],
    now: Timestamp,
) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO docket_events (run_id, seq, event_type, step, node_id, channel_id, \
             task_id, occurred_at, payload, metadata, inserted_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .sql()?;
    for event in events {
        stmt.execute(params![
            event.run_id.as_str(),
            sql_u64(event.seq, "event seq")?,
            event.event_type.as_str(),
            sql_u64(event.step, "event step")?,
            event.node_id.as_deref(),
            event.channel_id.as_deref(),
            event.task_id.as_deref(),
            event.timestamp.as_micros(),
            encode_map(&event.payload),
            encode_map(&event.metadata),
            now.as_micros(),
        ])
        .sql()?;
    }
    Ok(())
}
