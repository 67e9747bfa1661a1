//! A batch of claimed commits on distinct runs as one statement: one round trip, one
//! transaction.
//!
//! The members travel as parallel arrays, one element per member (its place in the batch,
//! `member`), and their events as parallel arrays tagged with the member they belong to. The
//! statement is the single claimed commit's, applied to every member at once:
//!
//! * `updated`: one `UPDATE … FROM` the members, each row fenced exactly as the single
//!   statement fences it (run id, scope, immutable identity, `checkpoint_seq`, claim token,
//!   the status matrix); it returns the members it wrote.
//! * `inserted`: the events of the members written, appended idempotently (an identical
//!   stored event is kept, a different one is not returned).
//! * `conflict`: if a written member proposed an event that differs from a stored one, the
//!   statement raises `DK001` naming that member (the lowest one), so nothing of the batch
//!   commits; the caller answers that member and sends the rest again.
//! * `notified`: one `pg_notify` if any written member's new wake is due.
//!
//! The members are sent in run-id order, so that two batches touching the same runs (only
//! a stale holder racing the run's new holder can do that) lock the rows they share in the
//! same order; the engine never waits on that lock otherwise.

use std::collections::HashSet;

use docket_core::store::{Message, StoreError};
use sqlx::Row;

use super::{pending, Attempt, InPlay};
use crate::codec::EventArrays;
use crate::error::{self, EVENT_CONFLICT, UNIQUE_VIOLATION};
use crate::sql::{claim_start, APPEND_IDEMPOTENTLY};
use crate::statement::Statement;
use crate::store::{hand_back, PostgresStore};
use crate::transitions::{bind_events, claimed_binds, ClaimedBinds};

/// `commit_claimed_batch` for members on distinct runs. `$1..=$28` the members' arrays
/// (see [`BatchArrays::bind`]), `$29` the events' members, `$30..=$38` the events' arrays,
/// `$39` the notification payload, `$40` the number of members.
///
/// The `LIMIT $40` on the members changes nothing they select (it is their count); it is
/// there for the plan. sqlx keeps the statement prepared per connection, and PostgreSQL
/// settles on a generic plan after a few executions and keeps it until the table's
/// statistics change. A generic plan takes an array parameter for ten elements, and while
/// `runs` is small — a new store, whose first batches come before any `ANALYZE` — ten index
/// probes cost more than one sequential scan, so that plan hash-joined the members against a
/// scan of the whole table and kept doing so as the table grew: 20–25 ms per batch at
/// 30,000 runs, measured with `auto_explain` on a server without autovacuum (where no
/// statistics ever change), which took group commit at concurrency 10 from about 5,000
/// commits/s to 300. A limit given as a parameter is planned as a tenth of its input, one
/// member, and one member is always found through the run-id index, at any table size.
pub(crate) fn commit_claimed_batch() -> String {
    batch_statement(Append::Idempotently)
}

/// [`commit_claimed_batch`] for members none of whose proposed events is stored yet — what a
/// worker sends: the events appended with a plain `INSERT`, without the conflict clause.
///
/// An `INSERT … ON CONFLICT` is a speculative insertion: PostgreSQL first probes the unique
/// index for each row, then inserts it marked as speculative and confirms it with one more
/// WAL record. A plain insert does neither, which saved the server about 6 µs of the
/// 92–95 µs a commit of two events cost it (`pgbench`, BENCHMARKS “Events without a foreign
/// key”). A proposed event that is already stored makes this statement fail as a whole on the
/// primary key of `events` (`23505`, nothing of it commits), and the batch is sent again
/// with the idempotent statement, which keeps an identical event and names a different one's
/// member: the outcomes are the same, at the price of one more round trip in that rare case.
/// Since every proposed event of a written member is then inserted or the statement fails,
/// it has no `conflict` part to look for one that was not (its `conflicts` column is 0).
pub(crate) fn commit_claimed_batch_fresh() -> String {
    batch_statement(Append::Fresh)
}

/// How the batch statement appends the events of its written members.
#[derive(Clone, Copy)]
enum Append {
    /// `ON CONFLICT`: an identical stored event is kept, a different one raises `DK001`.
    Idempotently,
    /// A plain `INSERT`: any stored event at a proposed seq fails the statement (`23505`).
    Fresh,
}

/// The batch statement appending as `append` says.
fn batch_statement(append: Append) -> String {
    let (clause, conflict, conflicts) = match append {
        Append::Idempotently => (
            APPEND_IDEMPOTENTLY,
            "conflict AS (
        SELECT {s}.raise_batch_event_conflict(c.member, c.seq) AS seq
        FROM (SELECT p.member, min(p.seq) AS seq
              FROM proposed AS p JOIN updated AS u ON u.member = p.member
              WHERE NOT EXISTS (SELECT 1 FROM inserted AS i
                                WHERE i.run_id = u.run_id AND i.seq = p.seq)
              GROUP BY p.member ORDER BY p.member LIMIT 1) AS c
    ), ",
            "(SELECT count(*) FROM conflict)",
        ),
        Append::Fresh => ("", "", "0::bigint"),
    };
    format!(
        "WITH m AS (
        SELECT * FROM unnest($1::int4[], $2::text[], $3::bool[], $4::text[], $5::text[],
            $6::text[], $7::int8[], $8::int8[], $9::text[], $10::text[], $11::int8[],
            $12::int8[], $13::int8[], $14::bytea[], $15::int8[], $16::int8[], $17::text[],
            $18::text[], $19::int8[], $20::int8[], $21::int4[], $22::int4[], $23::int8[],
            $24::text[], $25::bool[], $26::text[], $27::bool[], $28::int8[])
        AS m(member, run_id, system, scope_key, graph_id, graph_hash, started_at, expected,
             token, status, step, checkpoint_seq, event_seq, document, updated_at,
             finished_at, latest_checkpoint_type, new_token, claimed_at, wake_at,
             claim_attempts, claim_abandons, poisoned_at, poison_reason, keep_admission,
             allowed, notify, now)
        LIMIT $40
    ), updated AS (
        UPDATE {{s}}.runs AS r SET
            status = m.status, step = m.step, checkpoint_seq = m.checkpoint_seq,
            event_seq = m.event_seq, document = m.document, updated_at = m.updated_at,
            finished_at = m.finished_at, latest_checkpoint_type = m.latest_checkpoint_type,
            claim_token = m.new_token::uuid, claimed_at = m.claimed_at, {start},
            wake_at = m.wake_at,
            claim_attempts = m.claim_attempts, claim_abandons = m.claim_abandons,
            poisoned_at = m.poisoned_at, poison_reason = m.poison_reason,
            admitted_at = CASE WHEN m.keep_admission THEN r.admitted_at END
        FROM m
        WHERE r.run_id = m.run_id
          AND (m.system OR r.scope_key = m.scope_key)
          AND r.graph_id = m.graph_id AND r.graph_hash = m.graph_hash
          AND r.started_at = m.started_at
          AND r.checkpoint_seq = m.expected
          AND r.claim_token = m.token::uuid
          AND r.status = ANY(string_to_array(m.allowed, ','))
        RETURNING m.member, r.run_id, m.now, m.notify
    ), proposed AS (
        SELECT * FROM unnest($29::int4[], $30::int8[], $31::text[], $32::int8[], $33::text[],
            $34::text[], $35::text[], $36::bytea[], $37::bytea[], $38::int8[])
        AS p(member, seq, event_type, step, node_id, channel_id, task_id, payload, metadata,
             occurred_at)
    ), inserted AS (
        INSERT INTO {{s}}.events AS e (run_id, seq, event_type, step, node_id, channel_id,
            task_id, payload, metadata, occurred_at, inserted_at)
        SELECT u.run_id, p.seq, p.event_type, p.step, p.node_id, p.channel_id, p.task_id,
            p.payload, p.metadata, p.occurred_at, u.now
        FROM proposed AS p JOIN updated AS u ON u.member = p.member
        {clause}
        RETURNING e.run_id, e.seq
    ), {conflict}notified AS (
        SELECT pg_notify('docket_wake', $39)
        FROM (SELECT 1 FROM updated WHERE notify LIMIT 1) AS n
    )
    SELECT (SELECT array_agg(member) FROM updated) AS written,
           {conflicts} AS conflicts,
           (SELECT count(*) FROM notified) AS notified",
        start = claim_start("m.new_token::uuid", "m.claimed_at")
    )
}

/// The members of one statement as the parallel arrays it unnests.
#[derive(Default)]
struct BatchArrays {
    member: Vec<i32>,
    run_id: Vec<String>,
    system: Vec<bool>,
    scope_key: Vec<String>,
    graph_id: Vec<String>,
    graph_hash: Vec<String>,
    started_at: Vec<i64>,
    expected: Vec<i64>,
    token: Vec<String>,
    status: Vec<String>,
    step: Vec<i64>,
    checkpoint_seq: Vec<i64>,
    event_seq: Vec<i64>,
    document: Vec<Vec<u8>>,
    updated_at: Vec<i64>,
    finished_at: Vec<Option<i64>>,
    latest_checkpoint_type: Vec<String>,
    new_token: Vec<Option<String>>,
    claimed_at: Vec<Option<i64>>,
    wake_at: Vec<Option<i64>>,
    claim_attempts: Vec<i32>,
    claim_abandons: Vec<i32>,
    poisoned_at: Vec<Option<i64>>,
    poison_reason: Vec<Option<String>>,
    keep_admission: Vec<bool>,
    /// Each member's allowed stored statuses, comma-separated (statuses have no commas).
    allowed: Vec<String>,
    notify: Vec<bool>,
    now: Vec<i64>,
    event_member: Vec<i32>,
    events: EventArrays,
}

impl BatchArrays {
    fn push(&mut self, member: i32, binds: ClaimedBinds<'_>) {
        let ClaimedBinds {
            run_id,
            system,
            scope_key,
            graph_id,
            graph_hash,
            expected,
            token,
            columns,
            ops,
            events,
            now,
            notify,
            allowed,
            keeps_admission,
        } = binds;
        self.member.push(member);
        self.run_id.push(run_id.to_owned());
        self.system.push(system);
        self.scope_key.push(scope_key);
        self.graph_id.push(graph_id.to_owned());
        self.graph_hash.push(graph_hash.to_owned());
        self.started_at.push(columns.started_at);
        self.expected.push(expected);
        self.token.push(token);
        self.status.push(columns.status.to_owned());
        self.step.push(columns.step);
        self.checkpoint_seq.push(columns.checkpoint_seq);
        self.event_seq.push(columns.event_seq);
        self.document.push(columns.document);
        self.updated_at.push(columns.updated_at);
        self.finished_at.push(columns.finished_at);
        self.latest_checkpoint_type
            .push(ops.latest_checkpoint_type.to_owned());
        self.new_token.push(ops.claim_token);
        self.claimed_at.push(ops.claimed_at);
        self.wake_at.push(ops.wake_at);
        self.claim_attempts.push(ops.claim_attempts);
        self.claim_abandons.push(ops.claim_abandons);
        self.poisoned_at.push(ops.poisoned_at);
        self.poison_reason
            .push(ops.poison_reason.map(str::to_owned));
        self.keep_admission.push(keeps_admission);
        self.allowed.push(allowed.join(","));
        self.notify.push(notify);
        self.now.push(now);
        self.event_member
            .extend(std::iter::repeat_n(member, events.seq.len()));
        self.events.append(events);
    }

    /// Binds `$1..=$38` in the order [`commit_claimed_batch`] unnests them.
    fn bind(self, query: Statement<'_>) -> Statement<'_> {
        let events = self.events;
        let query = query
            .bind(self.member)
            .bind(self.run_id)
            .bind(self.system)
            .bind(self.scope_key)
            .bind(self.graph_id)
            .bind(self.graph_hash)
            .bind(self.started_at)
            .bind(self.expected)
            .bind(self.token)
            .bind(self.status)
            .bind(self.step)
            .bind(self.checkpoint_seq)
            .bind(self.event_seq)
            .bind(self.document)
            .bind(self.updated_at)
            .bind(self.finished_at)
            .bind(self.latest_checkpoint_type)
            .bind(self.new_token)
            .bind(self.claimed_at)
            .bind(self.wake_at)
            .bind(self.claim_attempts)
            .bind(self.claim_abandons)
            .bind(self.poisoned_at)
            .bind(self.poison_reason)
            .bind(self.keep_admission)
            .bind(self.allowed)
            .bind(self.notify)
            .bind(self.now)
            .bind(self.event_member);
        bind_events(query, events)
    }
}

/// The member and seq named in the DETAIL (`member:seq`) of the batch's `DK001` error.
fn conflict_member(error: &sqlx::Error) -> Option<(usize, u64)> {
    parse_conflict_detail(&error::DriverError::from_sqlx(error).detail?)
}

fn parse_conflict_detail(detail: &str) -> Option<(usize, u64)> {
    let (member, seq) = detail.trim().split_once(':')?;
    Some((member.parse().ok()?, seq.parse().ok()?))
}

/// A batch's members laid out for the statement.
struct Plan {
    /// Outcomes known before anything is sent (a member whose binds do not encode).
    settled: Vec<(usize, Result<(), StoreError>)>,
    /// The arrays of the members sent, in run-id order.
    arrays: BatchArrays,
    /// Members sent in the statement.
    sent: Vec<usize>,
    /// Members no stored row can match (a token this store never minted): only classified.
    unmatchable: Vec<usize>,
}

impl Plan {
    /// Lays out the members still in play, in run-id order (the same plan every time for the
    /// same members).
    fn of(members: &InPlay<'_>) -> Plan {
        let commit_of = |index: usize| members[index];
        let mut order: Vec<usize> = pending(members).collect();
        order.sort_by(|a, b| {
            let run = |i: usize| commit_of(i).map(|(_, c)| c.run().id.as_str());
            run(*a).cmp(&run(*b))
        });
        let mut plan = Plan {
            settled: Vec::new(),
            arrays: BatchArrays::default(),
            sent: Vec::new(),
            unmatchable: Vec::new(),
        };
        for index in order {
            let Some((scope, commit)) = commit_of(index) else {
                continue;
            };
            let Ok(member) = i32::try_from(index) else {
                plan.settled.push((index, Err(too_large())));
                continue;
            };
            match claimed_binds(scope, commit) {
                Err(e) => plan.settled.push((index, Err(e))),
                Ok(None) => plan.unmatchable.push(index),
                Ok(Some(binds)) => {
                    plan.arrays.push(member, binds);
                    plan.sent.push(index);
                }
            }
        }
        plan
    }
}

/// Whether a batch statement failed because one of its proposed events is already stored
/// (the primary key of `events`); only the fresh statement fails so.
fn stores_a_proposed_event(error: &sqlx::Error) -> bool {
    let error = error::DriverError::from_sqlx(error);
    error.code.as_deref() == Some(UNIQUE_VIOLATION)
        && error.constraint.as_deref() == Some(EVENTS_KEY)
}

/// The primary key of `events` (schema version 1).
const EVENTS_KEY: &str = "events_pkey";

impl PostgresStore {
    /// Sends one batch statement (`sql`) with `arrays`, which hold `members` members.
    async fn send_batch(
        &self,
        conn: &mut sqlx::PgConnection,
        sql: &str,
        arrays: BatchArrays,
        members: i64,
    ) -> Result<sqlx::postgres::PgRow, sqlx::Error> {
        arrays
            .bind(self.q(sql))
            .bind(self.schema())
            .bind(members)
            .fetch_one(conn)
            .await
    }

    /// One statement over the members still in play, which name distinct runs: the fresh
    /// statement, and the idempotent one when a proposed event turns out to be stored
    /// ([`commit_claimed_batch_fresh`]).
    pub(super) async fn statement_attempt(&self, members: &InPlay<'_>) -> Attempt {
        let commit_of = |index: usize| members[index];
        let Plan {
            mut settled,
            arrays,
            sent,
            unmatchable,
        } = Plan::of(members);
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            Err(e) => return failed_as_a_whole(settled, &sent, &unmatchable, &e),
        };
        let written: Result<HashSet<usize>, StoreError> = if sent.is_empty() {
            Ok(HashSet::new())
        } else {
            let count = i64::try_from(sent.len()).unwrap_or(i64::MAX);
            let sql = self.sql();
            let answer = match self
                .send_batch(&mut conn, &sql.commit_claimed_batch_fresh, arrays, count)
                .await
            {
                // Nothing of it committed; the same members again, idempotently.
                Err(e) if stores_a_proposed_event(&e) => {
                    let again = Plan::of(members).arrays;
                    self.send_batch(&mut conn, &sql.commit_claimed_batch, again, count)
                        .await
                }
                answer => answer,
            };
            match answer {
                Ok(row) => row
                    .try_get::<Option<Vec<i32>>, _>("written")
                    .map(|members| {
                        members
                            .unwrap_or_default()
                            .into_iter()
                            .filter_map(|m| usize::try_from(m).ok())
                            .collect()
                    })
                    // The statement ran (and committed); only its answer is unreadable.
                    .map_err(|e| {
                        StoreError::ambiguous(Message(format!(
                            "the answer of a commit batch could not be read: {e}"
                        )))
                    }),
                Err(e) if error::sqlstate(&e).as_deref() == Some(EVENT_CONFLICT) => {
                    match conflict_member(&e) {
                        Some((index, seq)) if sent.contains(&index) => {
                            return Attempt::Conflict {
                                index,
                                error: StoreError::EventConflict { seq },
                            };
                        }
                        // Our function always names a member of the batch; if the server's
                        // answer says otherwise, nothing was committed and no member can be
                        // singled out.
                        _ => Err(error::safe(e)),
                    }
                }
                Err(e) => Err(error::sent(e)),
            }
        };
        let written = match written {
            Ok(written) => written,
            Err(e) => return failed_as_a_whole(settled, &sent, &unmatchable, &e),
        };
        for index in sent.into_iter().chain(unmatchable) {
            let Some((scope, commit)) = commit_of(index) else {
                continue;
            };
            let outcome = if written.contains(&index) {
                Ok(())
            } else {
                // Fenced out, stale or refused: one read says which, as for a single call.
                self.classify_claimed_failure(&mut conn, scope, commit)
                    .await
            };
            settled.push((index, outcome));
        }
        hand_back(conn, settled.iter().map(|(_, outcome)| outcome));
        Attempt::Settled(settled)
    }
}

/// Every member of an attempt that failed as a whole gets the same `error`, beside the
/// outcomes already settled before anything was sent.
fn failed_as_a_whole(
    mut settled: Vec<(usize, Result<(), StoreError>)>,
    sent: &[usize],
    unmatchable: &[usize],
    error: &StoreError,
) -> Attempt {
    settled.extend(
        sent.iter()
            .chain(unmatchable)
            .map(|&i| (i, Err(error.clone()))),
    );
    Attempt::Settled(settled)
}

/// A batch too large to number its members in the statement's `int4` column.
fn too_large() -> StoreError {
    StoreError::invalid_transition("a commit batch holds more than 2^31 members")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conflict_detail_names_the_member_then_the_seq() {
        assert_eq!(parse_conflict_detail("3:17"), Some((3, 17)));
        assert_eq!(parse_conflict_detail(" 0:1\n"), Some((0, 1)));
        // Version 1's function names only the seq; that is no member.
        assert_eq!(parse_conflict_detail("17"), None);
        assert_eq!(parse_conflict_detail("x:1"), None);
        assert_eq!(parse_conflict_detail("1:-1"), None);
    }
}
