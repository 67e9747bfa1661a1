//! Connection set-up and the versioned schema (`PRAGMA user_version`).
//!
//! The row invariants (`docs/state-machines.md`, “Row invariants”) are CHECK constraints, so even
//! a bug in this crate cannot store an impossible operational state; the decoder checks them again
//! on the way out.

use rusqlite::{Connection, TransactionBehavior};

use docket_core::store::StoreError;

use crate::error::{permanent, SqlResult};
use crate::options::SqliteOptions;

/// `PRAGMA application_id` of a Docket database ("dokt"), so a foreign file is refused.
pub const APPLICATION_ID: i64 = 0x646f_6b74;

/// Bytes the WAL file is truncated to after a checkpoint (`PRAGMA journal_size_limit`).
const WAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i64 = 3;

/// Migration `n` moves the schema from version `n` to `n + 1`. Released migrations are never
/// edited: a change is a new step.
const MIGRATIONS: [&str; 3] = [V1, V2, V3];

const V1: &str = r"
CREATE TABLE docket_graph_versions (
    scope_key    TEXT    NOT NULL,
    tenant_id    TEXT    NULL CHECK (tenant_id IS NULL OR tenant_id <> ''),
    graph_id     TEXT    NOT NULL CHECK (graph_id <> ''),
    graph_hash   TEXT    NOT NULL CHECK (graph_hash <> ''),
    graph        BLOB    NOT NULL,
    published_at INTEGER NOT NULL,
    PRIMARY KEY (scope_key, graph_id, graph_hash),
    CHECK (scope_key = COALESCE(tenant_id, ''))
) STRICT;

CREATE INDEX docket_graph_versions_order
    ON docket_graph_versions (scope_key, graph_id, published_at DESC, graph_hash DESC);

CREATE TABLE docket_runs (
    run_id                 TEXT    NOT NULL PRIMARY KEY CHECK (run_id <> ''),
    tenant_id              TEXT    NULL CHECK (tenant_id IS NULL OR tenant_id <> ''),
    scope_key              TEXT    NOT NULL,
    graph_id               TEXT    NOT NULL,
    graph_hash             TEXT    NOT NULL,
    status                 TEXT    NOT NULL
        CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
    step                   INTEGER NOT NULL CHECK (step >= 0),
    checkpoint_seq         INTEGER NOT NULL CHECK (checkpoint_seq >= 1),
    event_seq              INTEGER NOT NULL CHECK (event_seq >= 0),
    document               TEXT    NOT NULL,
    latest_checkpoint_type TEXT    NOT NULL,
    claim_token            TEXT    NULL,
    claimed_at             INTEGER NULL,
    wake_at                INTEGER NULL,
    claim_attempts         INTEGER NOT NULL CHECK (claim_attempts >= 0),
    claim_abandons         INTEGER NOT NULL CHECK (claim_abandons >= 0),
    poisoned_at            INTEGER NULL,
    poison_reason          TEXT    NULL CHECK (poison_reason IS NULL OR poison_reason IN
        ('max_claim_attempts_exceeded', 'max_claim_abandons_exceeded')),
    started_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL,
    finished_at            INTEGER NULL,
    CHECK (scope_key = COALESCE(tenant_id, '')),
    -- 1. claim token present <=> claimed_at present
    CHECK ((claim_token IS NULL) = (claimed_at IS NULL)),
    -- 2. poison facts are paired
    CHECK ((poisoned_at IS NULL) = (poison_reason IS NULL)),
    -- 3. non-running rows have no token, no wake, no poison
    CHECK (status = 'running'
        OR (claim_token IS NULL AND wake_at IS NULL AND poisoned_at IS NULL)),
    -- 4. a poisoned row is running with no token and no wake
    CHECK (poisoned_at IS NULL
        OR (status = 'running' AND claim_token IS NULL AND wake_at IS NULL)),
    -- 5. a healthy running row has exactly one of wake and claim
    CHECK (status <> 'running' OR poisoned_at IS NOT NULL
        OR ((wake_at IS NOT NULL) <> (claim_token IS NOT NULL))),
    -- 6. finished_at present <=> terminal
    CHECK ((finished_at IS NOT NULL) = (status IN ('done', 'failed', 'cancelled'))),
    FOREIGN KEY (scope_key, graph_id, graph_hash)
        REFERENCES docket_graph_versions (scope_key, graph_id, graph_hash) ON DELETE RESTRICT
) STRICT;

CREATE INDEX docket_runs_list ON docket_runs (started_at DESC, run_id DESC);
CREATE INDEX docket_runs_scope_list ON docket_runs (scope_key, started_at DESC, run_id DESC);
CREATE INDEX docket_runs_graph ON docket_runs (scope_key, graph_id, graph_hash);
CREATE INDEX docket_runs_ready ON docket_runs (wake_at, run_id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL
      AND wake_at IS NOT NULL;
CREATE INDEX docket_runs_expired ON docket_runs (claimed_at, run_id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;
CREATE INDEX docket_runs_poisoned ON docket_runs (poisoned_at) WHERE poisoned_at IS NOT NULL;
CREATE INDEX docket_runs_terminal ON docket_runs (updated_at, run_id)
    WHERE status IN ('done', 'failed', 'cancelled');

CREATE TABLE docket_events (
    run_id      TEXT    NOT NULL REFERENCES docket_runs (run_id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    event_type  TEXT    NOT NULL,
    step        INTEGER NOT NULL CHECK (step >= 0),
    node_id     TEXT    NULL,
    channel_id  TEXT    NULL,
    task_id     TEXT    NULL,
    occurred_at INTEGER NOT NULL,
    payload     TEXT    NOT NULL,
    metadata    TEXT    NOT NULL,
    inserted_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;

CREATE INDEX docket_events_retention ON docket_events (inserted_at, run_id, seq);
";

/// Version 2: the operation registry. One row per owner (its retired flag and the completion
/// sequence its next terminal transition takes) and one per operation, with the record
/// invariants as CHECKs: terminal exactly when it has an outcome, a completion sequence and a
/// completion time; a start time whenever the status implies the operation ran.
const V2: &str = r"
CREATE TABLE docket_ops_owners (
    owner_id            TEXT    NOT NULL PRIMARY KEY CHECK (length(owner_id) = 36),
    retired             INTEGER NOT NULL CHECK (retired IN (0, 1)),
    next_completion_seq INTEGER NOT NULL CHECK (next_completion_seq >= 1)
) STRICT;

CREATE TABLE docket_ops_operations (
    owner_id       TEXT    NOT NULL
        REFERENCES docket_ops_owners (owner_id) ON DELETE RESTRICT,
    op_id          TEXT    NOT NULL CHECK (length(op_id) = 36),
    kind           TEXT    NOT NULL CHECK (kind <> ''),
    display_name   TEXT    NOT NULL CHECK (display_name <> ''),
    source_label   TEXT    NOT NULL,
    source         TEXT    NULL,
    status         TEXT    NOT NULL CHECK (status IN ('provisioning', 'running', 'retiring',
        'completed', 'failed', 'aborted', 'cancelled', 'retired', 'terminated')),
    progress_count INTEGER NOT NULL CHECK (progress_count >= 0),
    outcome        TEXT    NULL,
    completion_seq INTEGER NULL CHECK (completion_seq IS NULL OR completion_seq >= 1),
    created_at     INTEGER NOT NULL,
    started_at     INTEGER NULL,
    completed_at   INTEGER NULL,
    PRIMARY KEY (owner_id, op_id),
    CHECK ((status IN ('provisioning', 'running', 'retiring')) = (outcome IS NULL)),
    CHECK ((outcome IS NULL) = (completion_seq IS NULL)),
    CHECK ((outcome IS NULL) = (completed_at IS NULL)),
    CHECK (started_at IS NOT NULL
        OR status IN ('provisioning', 'failed', 'aborted', 'cancelled', 'terminated')),
    CHECK (started_at IS NULL OR status <> 'provisioning' AND status <> 'aborted')
) STRICT;

-- A completion sequence is used once per owner; retention and collection walk it in order.
CREATE UNIQUE INDEX docket_ops_completion
    ON docket_ops_operations (owner_id, completion_seq) WHERE completion_seq IS NOT NULL;
CREATE INDEX docket_ops_listing ON docket_ops_operations (owner_id, display_name, op_id);
";

/// Version 3: tenant-fair claiming. The admission marker on the run row (only a running,
/// healthy row may hold one), each owner's ready runs indexed by owner so a fair claim reads
/// only the heads of each owner's queue, each owner's claimed runs indexed so a capped owner's
/// claims are counted without reading anyone else's, the stored tenant shares, and the
/// one-row cursor of the round robin.
const V3: &str = r"
ALTER TABLE docket_runs ADD COLUMN admitted_at INTEGER NULL
    CHECK (admitted_at IS NULL OR (status = 'running' AND poisoned_at IS NULL));

CREATE INDEX docket_runs_ready_by_owner ON docket_runs (scope_key, wake_at, run_id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL
      AND wake_at IS NOT NULL;

CREATE INDEX docket_runs_claimed_by_owner ON docket_runs (scope_key)
    WHERE claim_token IS NOT NULL;

CREATE TABLE docket_tenant_shares (
    tenant_id TEXT    NOT NULL PRIMARY KEY CHECK (tenant_id <> ''),
    weight    INTEGER NOT NULL CHECK (weight BETWEEN 1 AND 4294967295),
    cap       INTEGER NULL CHECK (cap IS NULL OR cap BETWEEN 1 AND 4294967295)
) STRICT;

CREATE TABLE docket_claim_cursor (
    id        INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    scope_key TEXT    NOT NULL,
    taken     INTEGER NOT NULL CHECK (taken BETWEEN 1 AND 4294967295)
) STRICT;
";

/// Pragmas every connection gets.
pub(crate) fn configure(conn: &Connection, options: &SqliteOptions) -> Result<(), StoreError> {
    conn.busy_timeout(options.busy_timeout).sql()?;
    conn.pragma_update(None, "foreign_keys", "ON").sql()?;
    Ok(())
}

/// Pragmas of the writer connection: WAL, the durability level, checkpoints left on.
pub(crate) fn configure_writer(
    conn: &Connection,
    options: &SqliteOptions,
) -> Result<(), StoreError> {
    configure(conn, options)?;
    let mode = switch_to_wal(conn, options)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(permanent(format!(
            "sqlite refused WAL mode (journal_mode is {mode:?}); is the file on a filesystem \
             without shared-memory support?"
        )));
    }
    conn.pragma_update(None, "synchronous", options.synchronous.as_pragma())
        .sql()?;
    // After a burst (or a long-lived reader) has grown the WAL, truncate it back at the next
    // checkpoint instead of keeping the peak size on disk forever.
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)
        .sql()?;
    Ok(())
}

/// Sets `journal_mode=WAL`, retrying while another process holds the lock it needs.
///
/// Switching a fresh file to WAL takes an exclusive lock and may answer `SQLITE_BUSY` at once
/// instead of waiting in the busy handler, so two processes opening a new database together
/// could see "database is locked" (reproduced by the `fresh_open_race` test under load). The
/// retry is bounded by the configured busy timeout.
fn switch_to_wal(conn: &Connection, options: &SqliteOptions) -> Result<String, StoreError> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(2);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
            Ok(mode) => return Ok(mode),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() < options.busy_timeout =>
            {
                // The writer thread backs off before asking SQLite again.
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(other) => return Err(other).sql(),
        }
    }
}

/// Pragmas of a reader connection: it may never write.
pub(crate) fn configure_reader(
    conn: &Connection,
    options: &SqliteOptions,
) -> Result<(), StoreError> {
    configure(conn, options)?;
    conn.pragma_update(None, "query_only", "ON").sql()?;
    Ok(())
}

/// Brings the schema to [`SCHEMA_VERSION`] in one `BEGIN IMMEDIATE` transaction, so concurrent
/// openers (several processes) migrate exactly once.
///
/// # Errors
/// A permanent `Unavailable` for a database written by a newer build (no silent downgrade) or
/// for a file that belongs to another application.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .sql()?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .sql()?;
    let app_id: i64 = tx
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .sql()?;
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(permanent(format!(
            "this database belongs to another application (application_id {app_id:#x}); \
             docket-sqlite refuses to open it"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(permanent(format!(
            "database schema version {version} is newer than the newest this build of \
             docket-sqlite knows ({SCHEMA_VERSION}); refusing to open it (no downgrade)"
        )));
    }
    if version < 0 {
        return Err(permanent(format!(
            "database schema version {version} is invalid"
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(migration).sql()?;
        tx.pragma_update(None, "user_version", index as i64 + 1)
            .sql()?;
    }
    if app_id != APPLICATION_ID {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .sql()?;
    }
    tx.commit().sql()
}

#[cfg(test)]
mod tests {
    use docket_core::ops::OperationStatus;

    use super::V2;

    /// The status CHECKs of the registry spell exactly the statuses of the state machine:
    /// all of them in the status column, the live ones where terminality is decided.
    #[test]
    fn the_registry_checks_name_the_statuses_of_the_rules() {
        let quoted = |statuses: &mut dyn Iterator<Item = OperationStatus>| {
            statuses
                .map(|s| format!("'{}'", s.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let all = quoted(&mut OperationStatus::ALL.into_iter());
        let live = quoted(
            &mut OperationStatus::ALL
                .into_iter()
                .filter(|s| !s.is_terminal()),
        );
        let flat = V2.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&format!("status IN ({all})")), "{flat}");
        assert!(flat.contains(&format!("(status IN ({live})) = (outcome IS NULL)")));
    }
}
