//! The three transitions: `initialize`, `commit_claimed` (one statement), `commit_unclaimed`
//! (a transaction around `SELECT … FOR UPDATE`).
//!
//! Every proposal passes the transition kernel's stateless checks (`rules::transition`) before
//! any SQL runs. `commit_unclaimed` plans with the kernel against the locked row; the
//! one-statement paths encode the kernel's conditions in SQL, bind the values it computes
//! (`Commit::committed_state`, `allowed_from`), and classify a refused write with
//! `Commit::check_head` on one re-read.

use docket_core::model::{Event, OwnerScope, Run, Scope};
use docket_core::store::rules::events::StoredEvent;
use docket_core::store::rules::transition::{allowed_from, Commit, Init};
use docket_core::store::{
    ClaimedCommit, ClaimedSchedule, InitProposal, Message, StoreError, UnclaimedCommit,
};
use sqlx::Row;

use crate::codec::{
    self, decode_event_for_merge, decode_head_row, EventArrays, OpsColumns, RunColumns,
};
use crate::error::{self, EVENT_CONFLICT, FOREIGN_KEY_VIOLATION, UNIQUE_VIOLATION};
use crate::statement::Statement;
use crate::store::{finish, hand_back, scope_binds, Finish, PostgresStore};

/// Binds the nine event arrays in the order `sql::unnest_events` (and the batch statements)
/// unnest them.
pub(crate) fn bind_events(query: Statement<'_>, arrays: EventArrays) -> Statement<'_> {
    query
        .bind(arrays.seq)
        .bind(arrays.event_type)
        .bind(arrays.step)
        .bind(arrays.node_id)
        .bind(arrays.channel_id)
        .bind(arrays.task_id)
        .bind(arrays.payload)
        .bind(arrays.metadata)
        .bind(arrays.occurred_at)
}

fn bind_ops(query: Statement<'_>, ops: OpsColumns) -> Statement<'_> {
    query
        .bind(ops.claim_token)
        .bind(ops.claimed_at)
        .bind(ops.wake_at)
        .bind(ops.claim_attempts)
        .bind(ops.claim_abandons)
        .bind(ops.poisoned_at)
        .bind(ops.poison_reason)
        .bind(ops.admitted_at)
}

/// Whether a recorded wake is due at the caller's `now` (hint subscribers only then).
pub(crate) fn wake_is_due(wake_at: Option<i64>, now: i64) -> bool {
    wake_at.is_some_and(|at| at <= now)
}

/// Everything the fenced statement of one claimed commit binds, encoded once: the single
/// statement binds it as scalars, a batch appends it to its arrays.
pub(crate) struct ClaimedBinds<'c> {
    pub run_id: &'c str,
    pub system: bool,
    pub scope_key: String,
    pub graph_id: &'c str,
    pub graph_hash: &'c str,
    /// The fence: the stored `checkpoint_seq` and claim token the commit expects.
    pub expected: i64,
    pub token: String,
    pub columns: RunColumns,
    /// The operational columns as `Commit::committed_state` leaves them (schedule applied).
    pub ops: OpsColumns,
    pub events: EventArrays,
    /// The caller's clock, stored as the events' `inserted_at`.
    pub now: i64,
    /// Whether the new wake is due now, so hint subscribers are told.
    pub notify: bool,
    /// The stored statuses that may become the proposed one (`allowed_from`).
    pub allowed: Vec<String>,
    pub keeps_admission: bool,
}

/// Encodes `commit` for its fenced statement; `None` when no stored row can match it (a
/// token this store never minted, a seq past `i64`).
///
/// # Errors
/// Encoding errors of the proposed run or events.
pub(crate) fn claimed_binds<'c>(
    scope: &Scope,
    commit: &'c Commit,
) -> Result<Option<ClaimedBinds<'c>>, StoreError> {
    let Some(token) = commit.fence().token().and_then(codec::token_uuid) else {
        return Ok(None);
    };
    let Ok(expected) = i64::try_from(commit.expected_seq()) else {
        return Ok(None);
    };
    let run = commit.run();
    let columns = codec::encode_run(run)?;
    let events = codec::encode_events(commit.events())?;
    // The stored marker is not read: the statement keeps or clears it as `keeps_admission`
    // says.
    let ops = codec::encode_ops(&commit.committed_state(None));
    let now = commit.now().as_micros();
    let notify = matches!(commit.fence().schedule(), ClaimedSchedule::Release(_))
        && wake_is_due(ops.wake_at, now);
    let allowed = allowed_from(run.status)
        .iter()
        .map(|status| status.as_str().to_owned())
        .collect();
    let (system, scope_key) = scope_binds(scope);
    Ok(Some(ClaimedBinds {
        run_id: run.id.as_str(),
        system,
        scope_key,
        graph_id: run.graph_id.as_str(),
        graph_hash: run.graph_hash.as_str(),
        expected,
        token,
        columns,
        ops,
        events,
        now,
        notify,
        allowed,
        keeps_admission: commit.keeps_admission(),
    }))
}

impl PostgresStore {
    pub(crate) async fn do_initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let init = Init::new(owner, proposal, events)?;
        let mut conn = self.conn().await?;
        // Outside a transaction the statement commits itself: a lost answer is ambiguous.
        let outcome = self
            .initialize_on(&mut conn, owner, &init, error::sent)
            .await;
        hand_back(conn, [&outcome]);
        outcome
    }

    /// The `initialize` statement for `init` on `conn`, its refusals classified; `lost`
    /// classifies any other driver error (ambiguous when the statement commits itself, safe
    /// inside a transaction that has not committed).
    pub(crate) async fn initialize_on(
        &self,
        conn: &mut sqlx::PgConnection,
        owner: &OwnerScope,
        init: &Init,
        lost: fn(sqlx::Error) -> StoreError,
    ) -> Result<Run, StoreError> {
        let run = init.run().clone();
        let columns = codec::encode_run(&run)?;
        let arrays = codec::encode_events(init.events())?;
        let ops = codec::encode_ops(&init.initial_state());
        let now = init.now().as_micros();
        let notify = wake_is_due(ops.wake_at, now);
        let query = self
            .q(&self.sql().initialize)
            .bind(run.id.as_str())
            .bind(owner.scope_key())
            .bind(run.graph_id.as_str())
            .bind(run.graph_hash.as_str())
            .bind(owner.tenant_id().map(|t| t.as_str()))
            .bind(columns.status)
            .bind(columns.step)
            .bind(columns.checkpoint_seq)
            .bind(columns.event_seq)
            .bind(columns.document)
            .bind(columns.started_at)
            .bind(columns.updated_at)
            .bind(columns.finished_at)
            .bind(ops.latest_checkpoint_type)
            .bind(ops.wake_at)
            .bind(now);
        let query = bind_events(query, arrays).bind(notify).bind(self.schema());
        match query.fetch_one(conn).await {
            Ok(row) => {
                let inserted: i64 = row.try_get("inserted").map_err(error::safe)?;
                if inserted == 1 {
                    Ok(run)
                } else {
                    Err(StoreError::NotFound)
                }
            }
            Err(e) => Err(match error::sqlstate(&e).as_deref() {
                Some(UNIQUE_VIOLATION) => StoreError::Conflict,
                // The graph was deleted between the statement's snapshot and its FK check.
                Some(FOREIGN_KEY_VIOLATION) => StoreError::NotFound,
                _ => lost(e),
            }),
        }
    }

    pub(crate) async fn do_commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::claimed(proposal, events)?;
        let mut conn = self.conn().await?;
        let Some(query) = self.claimed_statement(scope, &commit)? else {
            // Nothing this store minted, or a seq no row can hold: the fence cannot match.
            // Classify like any other zero-row commit.
            return self
                .classify_claimed_failure(&mut conn, scope, &commit)
                .await;
        };
        let outcome = match query.fetch_one(&mut conn).await {
            Ok(row) => match row.try_get::<i64, _>("updated").map_err(error::safe) {
                Ok(1) => Ok(commit.into_run()),
                Ok(_) => {
                    self.classify_claimed_failure(&mut conn, scope, &commit)
                        .await
                }
                Err(e) => Err(e),
            },
            Err(e) => match error::sqlstate(&e).as_deref() {
                Some(EVENT_CONFLICT) => Err(StoreError::EventConflict {
                    seq: conflict_seq(&e).unwrap_or_else(|| first_seq(commit.events())),
                }),
                _ => Err(error::sent(e)),
            },
        };
        hand_back(conn, [&outcome]);
        outcome
    }

    /// The one fenced statement of a claimed commit, bound; `None` when no stored row can
    /// match it (a token this store never minted, a seq past `i64`).
    ///
    /// # Errors
    /// Encoding errors of the proposed run or events.
    pub(crate) fn claimed_statement<'s>(
        &'s self,
        scope: &Scope,
        commit: &'s Commit,
    ) -> Result<Option<Statement<'s>>, StoreError> {
        let Some(binds) = claimed_binds(scope, commit)? else {
            return Ok(None);
        };
        let query = self
            .q(&self.sql().commit_claimed)
            .bind(binds.run_id)
            .bind(binds.system)
            .bind(binds.scope_key)
            .bind(binds.graph_id)
            .bind(binds.graph_hash)
            .bind(binds.columns.started_at)
            .bind(binds.expected)
            .bind(binds.token)
            .bind(binds.columns.status)
            .bind(binds.columns.step)
            .bind(binds.columns.checkpoint_seq)
            .bind(binds.columns.event_seq)
            .bind(binds.columns.document)
            .bind(binds.columns.updated_at)
            .bind(binds.columns.finished_at)
            .bind(binds.ops.latest_checkpoint_type)
            .bind(binds.ops.claim_token)
            .bind(binds.ops.claimed_at)
            .bind(binds.ops.wake_at);
        Ok(Some(
            bind_events(query, binds.events)
                .bind(binds.now)
                .bind(binds.notify)
                .bind(self.schema())
                .bind(binds.allowed)
                .bind(binds.ops.claim_attempts)
                .bind(binds.ops.claim_abandons)
                .bind(binds.ops.poisoned_at)
                .bind(binds.ops.poison_reason)
                .bind(binds.keeps_admission),
        ))
    }

    /// The one diagnostic read after a zero-row claimed commit, on `conn` (inside the batch's
    /// transaction for a batch member), classified by the kernel's order: not visible →
    /// `NotFound`; then `Commit::check_head` (identity → `InvalidTransition`; fences →
    /// `StaleCheckpoint`; status matrix → `InvalidTransition`).
    ///
    /// Never `Ok`: it is generic so that each caller gets the result type it answers with.
    pub(crate) async fn classify_claimed_failure<T>(
        &self,
        conn: &mut sqlx::PgConnection,
        scope: &Scope,
        commit: &Commit,
    ) -> Result<T, StoreError> {
        let (system, scope_key) = scope_binds(scope);
        let row = self
            .q(&self.sql().select_head)
            .bind(commit.run().id.as_str())
            .bind(system)
            .bind(scope_key)
            .fetch_optional(&mut *conn)
            .await
            .map_err(error::safe)?;
        let Some(row) = row else {
            return Err(StoreError::NotFound);
        };
        let (head, stored_ops) = decode_head_row(&row)?;
        commit.check_head(&head, &stored_ops)?;
        // Everything matches now, so the row moved and came back between the two reads:
        // this proposal did not commit.
        Err(StoreError::StaleCheckpoint)
    }

    pub(crate) async fn do_commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::unclaimed(expected_seq, proposal, events)?;
        let mut conn = self.conn().await?;
        let mut tx = self.begin(&mut conn).await?;
        let outcome = self.commit_unclaimed_in(&mut tx, scope, commit).await;
        finish(tx, outcome.map(Finish::Commit)).await
    }

    /// The body of `commit_unclaimed` inside its transaction: lock the head, read the stored
    /// events at the proposed seqs, plan with the kernel, write the row and the new events,
    /// queue the wake hint.
    async fn commit_unclaimed_in(
        &self,
        tx: &mut sqlx::PgConnection,
        scope: &Scope,
        commit: Commit,
    ) -> Result<Run, StoreError> {
        let run_id = commit.run().id.clone();
        let (system, scope_key) = scope_binds(scope);
        let row = self
            .q(&self.sql().select_head_for_update)
            .bind(run_id.as_str())
            .bind(system)
            .bind(&scope_key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(error::safe)?;
        let Some(row) = row else {
            return Err(StoreError::NotFound);
        };
        let (head, stored_ops) = decode_head_row(&row)?;
        // Checked before the event read so a refused commit costs no more than the lock.
        commit.check_head(&head, &stored_ops)?;
        let seqs: Vec<i64> = codec::encode_events(commit.events())?.seq;
        let stored_events = self
            .q(&self.sql().events_at)
            .bind(run_id.as_str())
            .bind(&seqs)
            .fetch_all(&mut *tx)
            .await
            .map_err(error::safe)?;
        let mut by_seq: std::collections::BTreeMap<u64, StoredEvent> =
            std::collections::BTreeMap::new();
        for row in &stored_events {
            let (seq, event) = decode_event_for_merge(row)?;
            by_seq.insert(seq, event);
        }
        let planned = commit.plan(&head, &stored_ops, |seq| Ok(by_seq.remove(&seq)))?;
        let run = &planned.run;
        let columns = codec::encode_run(run)?;
        let to_insert = &planned.new_events;
        let new_ops = codec::encode_ops(&planned.ops);
        let now = planned.now.as_micros();
        let notify = planned.wake_due;
        let RunColumns {
            status,
            step,
            checkpoint_seq,
            event_seq,
            document,
            updated_at,
            finished_at,
            ..
        } = columns;
        let latest = new_ops.latest_checkpoint_type;
        let update = self
            .q(&self.sql().write_commit)
            .bind(run.id.as_str())
            .bind(status)
            .bind(step)
            .bind(checkpoint_seq)
            .bind(event_seq)
            .bind(document)
            .bind(updated_at)
            .bind(finished_at)
            .bind(latest);
        bind_ops(update, new_ops)
            .execute(&mut *tx)
            .await
            .map_err(error::safe)?;
        if !to_insert.is_empty() {
            let insert = self.q(&self.sql().insert_events).bind(run.id.as_str());
            bind_events(insert, codec::encode_events(to_insert)?)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(error::safe)?;
        }
        if notify {
            self.notify(&mut *tx).await?;
        }
        Ok(planned.run)
    }

    /// Queues the wake hint; PostgreSQL delivers it only if the transaction commits.
    pub(crate) async fn notify(&self, conn: &mut sqlx::PgConnection) -> Result<(), StoreError> {
        self.q("SELECT pg_notify('docket_wake', $1)")
            .bind(self.schema())
            .execute(&mut *conn)
            .await
            .map_err(error::safe)?;
        Ok(())
    }
}

/// The seq named in the DETAIL of our `DK001` error.
pub(crate) fn conflict_seq(error: &sqlx::Error) -> Option<u64> {
    crate::error::DriverError::from_sqlx(error)
        .detail
        .and_then(|d| d.trim().parse().ok())
}

pub(crate) fn first_seq(events: &[Event]) -> u64 {
    events.first().map_or(0, |e| e.seq)
}

/// The outcome of each member of a batch, in order. A member the attempts left without one
/// (every attempt settles all members or refuses one, so none should be) is `Ambiguous`
/// rather than a panic: the caller re-reads it as after a lost connection.
pub(crate) fn every_outcome<T>(
    outcomes: Vec<Option<Result<T, StoreError>>>,
) -> Vec<Result<T, StoreError>> {
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.unwrap_or_else(|| {
                Err(StoreError::ambiguous(Message(
                    "a batch member was left without an outcome".into(),
                )))
            })
        })
        .collect()
}
