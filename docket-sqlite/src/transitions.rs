//! The three transitions, run on the writer connection inside `BEGIN IMMEDIATE`.
//!
//! Proposals arrive as the kernel's [`Init`] / [`Commit`] (the stateless checks ran on the
//! caller's task, before any lookup). Here: the lookups, then the kernel's plan (identity →
//! `checkpoint_seq` fence → token fence → status matrix → events), then the writes; any error
//! rolls the transaction back.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use docket_core::model::{OwnerScope, Scope};
use docket_core::store::rules::transition::{Commit, Init, Planned};
use docket_core::store::StoreError;

use crate::error::{commit_error, SqlResult};
use crate::sql::{
    insert_events, insert_run, load_event_for_merge, load_head, run_exists, update_run,
};

/// `initialize`: graph exists in `owner` → run id unused anywhere → insert row and events.
pub(crate) fn initialize(
    conn: &Connection,
    owner: &OwnerScope,
    init: Init,
) -> Result<Planned, StoreError> {
    let run = init.run();
    let graph_exists = conn
        .prepare_cached(
            "SELECT 1 FROM docket_graph_versions \
             WHERE scope_key = ?1 AND graph_id = ?2 AND graph_hash = ?3",
        )
        .sql()?
        .query_row(
            params![
                owner.scope_key(),
                run.graph_id.as_str(),
                run.graph_hash.as_str()
            ],
            |_| Ok(()),
        )
        .optional()
        .sql()?
        .is_some();
    let taken = graph_exists && run_exists(conn, &run.id)?;
    let run_id = run.id.clone();
    let planned = init.plan(graph_exists, taken, |seq| {
        load_event_for_merge(conn, &run_id, seq)
    })?;
    insert_run(conn, owner, &planned.run, &planned.ops)?;
    insert_events(conn, &planned.new_events, planned.now)?;
    Ok(planned)
}

/// `commit_claimed` / `commit_unclaimed`: lookup in `scope`, then the kernel's plan.
pub(crate) fn commit(
    conn: &Connection,
    scope: &Scope,
    commit: Commit,
) -> Result<Planned, StoreError> {
    let run_id = commit.run().id.clone();
    let (stored, row) = load_head(conn, scope, &run_id)?.ok_or(StoreError::NotFound)?;
    let planned = commit.plan(&stored, &row.ops, |seq| {
        load_event_for_merge(conn, &run_id, seq)
    })?;
    update_run(conn, &planned.run, &planned.ops)?;
    insert_events(conn, &planned.new_events, planned.now)?;
    Ok(planned)
}

/// One member of a batch as the writer gets it: its stateless checks' verdict, or its scope
/// and kernel proposal.
pub(crate) type BatchMember = Result<(Scope, Commit), StoreError>;

/// `commit_claimed_batch`: every member in one `BEGIN IMMEDIATE` transaction — one fsync for
/// the whole batch — each inside its own savepoint, so a member that fails rolls back alone
/// and its neighbours keep their writes. Members run in order, so two members of one run
/// chain like two calls.
///
/// Answers one outcome per member. When the transaction cannot begin, every member gets that
/// error (nothing was written); when the final `COMMIT` fails, every member that had
/// succeeded inside the transaction gets the commit's error (`Ambiguous` unless SQLite
/// reports a rollback), and the others keep their own.
pub(crate) fn commit_batch(
    conn: &mut Connection,
    members: Vec<BatchMember>,
) -> Vec<Result<Planned, StoreError>> {
    in_one_transaction(conn, members, |member, (scope, proposal)| {
        commit(member, &scope, proposal)
    })
}

/// One member of an `initialize` batch as the writer gets it: its stateless checks' verdict,
/// or its owner and kernel proposal.
pub(crate) type InitMember = Result<(OwnerScope, Init), StoreError>;

/// `initialize_batch`: every member in one `BEGIN IMMEDIATE` transaction, each inside its own
/// savepoint, exactly as [`commit_batch`]. Members run in order, so a second member with the
/// run id of an earlier winner finds the id taken (`Conflict`).
pub(crate) fn initialize_batch(
    conn: &mut Connection,
    members: Vec<InitMember>,
) -> Vec<Result<Planned, StoreError>> {
    in_one_transaction(conn, members, |member, (owner, init)| {
        initialize(member, &owner, init)
    })
}

/// Runs `apply` for each member inside its own savepoint of one immediate transaction; the
/// outcome rules of [`commit_batch`].
fn in_one_transaction<T>(
    conn: &mut Connection,
    members: Vec<Result<T, StoreError>>,
    apply: impl Fn(&Connection, T) -> Result<Planned, StoreError>,
) -> Vec<Result<Planned, StoreError>> {
    let count = members.len();
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let error = crate::error::sql_error(e);
            return (0..count).map(|_| Err(error.clone())).collect();
        }
    };
    let mut outcomes = Vec::with_capacity(count);
    for member in members {
        let outcome = member.and_then(|input| {
            let member = tx.savepoint().sql()?;
            // A failed member's savepoint rolls back when dropped.
            let planned = apply(&member, input)?;
            member.commit().sql()?;
            Ok(planned)
        });
        outcomes.push(outcome);
    }
    if let Err(e) = tx.commit() {
        let error = commit_error(e);
        for outcome in &mut outcomes {
            if outcome.is_ok() {
                *outcome = Err(error.clone());
            }
        }
    }
    outcomes
}
