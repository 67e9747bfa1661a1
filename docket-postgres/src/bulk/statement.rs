//! A batch of starts on distinct run ids as one statement: one round trip, one transaction.
//!
//! The members travel as parallel arrays, one element per member (its place in the batch,
//! `member`), and their events as parallel arrays tagged with the member they belong to:
//!
//! * `found`: the members whose graph version exists in their owner's scope (the others are
//!   answered `NotFound`, as a single `initialize` answers them);
//! * `inserted`: their run rows, `ON CONFLICT (run_id) DO NOTHING`, so a taken run id skips
//!   that member instead of aborting the statement (it is answered `Conflict`);
//! * `events`: the events of the members inserted;
//! * `notified`: one `pg_notify` if any inserted member's wake is due.
//!
//! An integrity error the statement cannot step around (a graph version deleted between the
//! statement's snapshot and its foreign-key check, or a stray event row of a new run id)
//! aborts it whole: nothing commits, and the caller sends the batch again as one transaction
//! of single statements, which answers each member on its own.

use std::collections::HashSet;

use docket_core::model::{OwnerScope, Run};
use docket_core::store::rules::transition::Init;
use docket_core::store::{Message, StoreError};
use sqlx::Row;

use super::Pending;
use crate::codec::{self, EventArrays};
use crate::error;
use crate::sql::{LISTED_COLUMNS, LIST_INSERTED};
use crate::statement::Statement;
use crate::store::PostgresStore;
use crate::transitions::{bind_events, wake_is_due};

/// `initialize_batch` for members with distinct run ids. `$1..=$18` the members' arrays
/// (see [`InitArrays::bind`]), `$19` the events' members, `$20..=$28` the events' arrays,
/// `$29` the notification payload, `$30` the number of members (a `LIMIT` that changes
/// nothing it selects and keeps the generic plan probing indexes; see
/// [`crate::commit_batch::commit_claimed_batch`]).
pub(crate) fn initialize_batch() -> String {
    format!(
        "WITH m AS (
        SELECT * FROM unnest($1::int4[], $2::text[], $3::text[], $4::text[], $5::text[],
            $6::text[], $7::text[], $8::int8[], $9::int8[], $10::int8[], $11::bytea[],
            $12::int8[], $13::int8[], $14::int8[], $15::text[], $16::int8[], $17::int8[],
            $18::bool[])
        AS m(member, run_id, scope_key, graph_id, graph_hash, tenant_id, status, step,
             checkpoint_seq, event_seq, document, started_at, updated_at, finished_at,
             latest_checkpoint_type, wake_at, now, notify)
        LIMIT $30
    ), found AS (
        SELECT m.* FROM m
        WHERE EXISTS (SELECT 1 FROM {{s}}.graph_versions AS g
                      WHERE g.scope_key = m.scope_key AND g.graph_id = m.graph_id
                        AND g.graph_hash = m.graph_hash)
    ), inserted AS (
        INSERT INTO {{s}}.runs (run_id, tenant_id, graph_id, graph_hash, status, step,
            checkpoint_seq, event_seq, document, latest_checkpoint_type, wake_at,
            started_at, updated_at, finished_at, inserted_at)
        SELECT run_id, tenant_id, graph_id, graph_hash, status, step, checkpoint_seq,
            event_seq, document, latest_checkpoint_type, wake_at, started_at, updated_at,
            finished_at, now
        FROM found ORDER BY run_id
        ON CONFLICT (run_id) DO NOTHING
        RETURNING {LISTED_COLUMNS}
    ), listed AS ({LIST_INSERTED}), written AS (
        SELECT f.member, f.run_id, f.now, f.notify
        FROM found AS f JOIN inserted AS i ON i.run_id = f.run_id
    ), events AS (
        INSERT INTO {{s}}.events (run_id, seq, event_type, step, node_id, channel_id, task_id,
            payload, metadata, occurred_at, inserted_at)
        SELECT w.run_id, p.seq, p.event_type, p.step, p.node_id, p.channel_id, p.task_id,
            p.payload, p.metadata, p.occurred_at, w.now
        FROM unnest($19::int4[], $20::int8[], $21::text[], $22::int8[], $23::text[],
            $24::text[], $25::text[], $26::bytea[], $27::bytea[], $28::int8[])
            AS p(member, seq, event_type, step, node_id, channel_id, task_id, payload,
                 metadata, occurred_at)
        JOIN written AS w ON w.member = p.member
        RETURNING 1
    ), notified AS (
        SELECT pg_notify('docket_wake', $29)
        FROM (SELECT 1 FROM written WHERE notify LIMIT 1) AS n
    )
    SELECT (SELECT array_agg(member) FROM written) AS written,
           (SELECT array_agg(m.member) FROM m
            WHERE NOT EXISTS (SELECT 1 FROM found AS f WHERE f.member = m.member)) AS graphless,
           (SELECT count(*) FROM events) AS events,
           (SELECT count(*) FROM notified) AS notified"
    )
}

/// The members of one statement as the parallel arrays it unnests.
#[derive(Default)]
struct InitArrays {
    member: Vec<i32>,
    run_id: Vec<String>,
    scope_key: Vec<String>,
    graph_id: Vec<String>,
    graph_hash: Vec<String>,
    tenant_id: Vec<Option<String>>,
    status: Vec<String>,
    step: Vec<i64>,
    checkpoint_seq: Vec<i64>,
    event_seq: Vec<i64>,
    document: Vec<Vec<u8>>,
    started_at: Vec<i64>,
    updated_at: Vec<i64>,
    finished_at: Vec<Option<i64>>,
    latest_checkpoint_type: Vec<String>,
    wake_at: Vec<Option<i64>>,
    now: Vec<i64>,
    notify: Vec<bool>,
    event_member: Vec<i32>,
    events: EventArrays,
}

impl InitArrays {
    /// Encodes one member and appends it; an encoding error leaves the arrays untouched.
    fn push(&mut self, member: i32, owner: &OwnerScope, init: &Init) -> Result<(), StoreError> {
        let run = init.run();
        let columns = codec::encode_run(run)?;
        let events = codec::encode_events(init.events())?;
        let ops = codec::encode_ops(&init.initial_state());
        let now = init.now().as_micros();
        self.member.push(member);
        self.run_id.push(run.id.as_str().to_owned());
        self.scope_key.push(owner.scope_key().to_owned());
        self.graph_id.push(run.graph_id.as_str().to_owned());
        self.graph_hash.push(run.graph_hash.as_str().to_owned());
        self.tenant_id
            .push(owner.tenant_id().map(|t| t.as_str().to_owned()));
        self.status.push(columns.status.to_owned());
        self.step.push(columns.step);
        self.checkpoint_seq.push(columns.checkpoint_seq);
        self.event_seq.push(columns.event_seq);
        self.document.push(columns.document);
        self.started_at.push(columns.started_at);
        self.updated_at.push(columns.updated_at);
        self.finished_at.push(columns.finished_at);
        self.latest_checkpoint_type
            .push(ops.latest_checkpoint_type.to_owned());
        self.wake_at.push(ops.wake_at);
        self.now.push(now);
        self.notify.push(wake_is_due(ops.wake_at, now));
        self.event_member
            .extend(std::iter::repeat_n(member, events.seq.len()));
        self.events.append(events);
        Ok(())
    }

    /// Binds `$1..=$28` in the order [`initialize_batch`] unnests them.
    fn bind(self, query: Statement<'_>) -> Statement<'_> {
        let events = self.events;
        let query = query
            .bind(self.member)
            .bind(self.run_id)
            .bind(self.scope_key)
            .bind(self.graph_id)
            .bind(self.graph_hash)
            .bind(self.tenant_id)
            .bind(self.status)
            .bind(self.step)
            .bind(self.checkpoint_seq)
            .bind(self.event_seq)
            .bind(self.document)
            .bind(self.started_at)
            .bind(self.updated_at)
            .bind(self.finished_at)
            .bind(self.latest_checkpoint_type)
            .bind(self.wake_at)
            .bind(self.now)
            .bind(self.notify)
            .bind(self.event_member);
        bind_events(query, events)
    }
}

/// How the one-statement attempt ended.
pub(super) enum StatementAttempt {
    /// Every member in play has its outcome (index into the batch).
    Settled(Vec<(usize, Result<Run, StoreError>)>),
    /// The statement met an integrity error it cannot step around and committed nothing;
    /// the batch goes again as a transaction.
    Aborted,
}

/// Which members the statement wrote and which found no graph version.
struct Answer {
    written: HashSet<usize>,
    graphless: HashSet<usize>,
}

/// The members named in `column` of the statement's answer (an `int4[]`, NULL when empty).
fn members_of(row: &sqlx::postgres::PgRow, column: &str) -> Result<HashSet<usize>, sqlx::Error> {
    Ok(row
        .try_get::<Option<Vec<i32>>, _>(column)?
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| usize::try_from(m).ok())
        .collect())
}

impl PostgresStore {
    /// One statement over the members still in play, whose run ids are distinct.
    pub(super) async fn init_statement_attempt(&self, pending: &[Pending]) -> StatementAttempt {
        let mut settled = Vec::new();
        let mut arrays = InitArrays::default();
        let mut sent = Vec::new();
        for (index, member) in pending.iter().enumerate() {
            let Some((owner, init)) = member else {
                continue;
            };
            let Ok(number) = i32::try_from(index) else {
                settled.push((index, Err(too_large())));
                continue;
            };
            match arrays.push(number, owner, init) {
                Ok(()) => sent.push((index, init.run())),
                Err(e) => settled.push((index, Err(e))),
            }
        }
        if sent.is_empty() {
            return StatementAttempt::Settled(settled);
        }
        let fail_sent = |mut settled: Vec<(usize, Result<Run, StoreError>)>, e: StoreError| {
            settled.extend(sent.iter().map(|&(i, _)| (i, Err(e.clone()))));
            StatementAttempt::Settled(settled)
        };
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            Err(e) => return fail_sent(settled, e),
        };
        let count = i64::try_from(sent.len()).unwrap_or(i64::MAX);
        let query = arrays
            .bind(self.q(&self.sql().initialize_batch))
            .bind(self.schema())
            .bind(count);
        let answer = match query.fetch_one(&mut conn).await {
            Ok(row) => match (members_of(&row, "written"), members_of(&row, "graphless")) {
                (Ok(written), Ok(graphless)) => Answer { written, graphless },
                // The statement ran (and committed); only its answer is unreadable.
                (Err(e), _) | (_, Err(e)) => {
                    return fail_sent(
                        settled,
                        StoreError::ambiguous(Message(format!(
                            "the answer of a start batch could not be read: {e}"
                        ))),
                    )
                }
            },
            Err(e) if is_integrity_error(&e) => return StatementAttempt::Aborted,
            Err(e) => return fail_sent(settled, error::sent(e)),
        };
        conn.reuse();
        for (index, run) in sent {
            let outcome = if answer.written.contains(&index) {
                Ok(run.clone())
            } else if answer.graphless.contains(&index) {
                Err(StoreError::NotFound)
            } else {
                // Found its graph and was not inserted: the run id is taken.
                Err(StoreError::Conflict)
            };
            settled.push((index, outcome));
        }
        StatementAttempt::Settled(settled)
    }
}

/// An integrity constraint violation (SQLSTATE class 23): the server refused the statement
/// whole, so nothing of it was written.
fn is_integrity_error(e: &sqlx::Error) -> bool {
    error::sqlstate(e).is_some_and(|state| state.starts_with("23"))
}

/// A batch too large to number its members in the statement's `int4` column.
fn too_large() -> StoreError {
    StoreError::invalid_transition("a start batch holds more than 2^31 members")
}
