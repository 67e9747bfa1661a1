//! The three transitions: `initialize`, `commit_claimed` (one statement), `commit_unclaimed`
//! (a transaction around `SELECT … FOR UPDATE`).
//!
//! Every proposal is validated with `rules::transition` before any SQL runs; decisions that
//! need the stored row are taken by the same rules functions the memory store uses, or —
//! in the one-statement paths — encoded as the same conditions in SQL.

use docket_core::model::{Event, OwnerScope, Run, Scope};
use docket_core::store::rules::{events, ops, transition};
use docket_core::store::{
    ClaimedCommit, ClaimedSchedule, InitProposal, StoreError, UnclaimedCommit,
};
use sqlx::Row;

use crate::codec::{
    self, decode_event_for_merge, decode_head_row, EventArrays, OpsColumns, RunColumns,
};
use crate::error::{self, EVENT_CONFLICT, FOREIGN_KEY_VIOLATION, UNIQUE_VIOLATION};
use crate::statement::Statement;
use crate::store::{finish, scope_binds, Finish, PostgresStore};

fn bind_events(query: Statement<'_>, arrays: EventArrays) -> Statement<'_> {
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
}

/// Whether a recorded wake is due at the caller's `now` (hint subscribers only then).
fn wake_is_due(wake_at: Option<i64>, now: i64) -> bool {
    wake_at.is_some_and(|at| at <= now)
}

impl PostgresStore {
    pub(crate) async fn do_initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let events = transition::validate_initialize(owner, &proposal, &events)?;
        let run = proposal.run;
        let columns = codec::encode_run(&run)?;
        let arrays = codec::encode_events(&events)?;
        let ops = codec::encode_ops(&ops::initial_state(proposal.wake_at));
        let now = proposal.now.as_micros();
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
        let mut conn = self.conn().await?;
        match query.fetch_one(&mut conn).await {
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
                _ => error::sent(e),
            }),
        }
    }

    pub(crate) async fn do_commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let events = transition::validate_claimed(&proposal, &events)?;
        let Some(token) = codec::token_uuid(&proposal.claim_token) else {
            // Nothing this store minted: the fence cannot match. Classify like any other
            // zero-row commit.
            return self.classify_claimed_failure(scope, &proposal).await;
        };
        let Ok(expected) = i64::try_from(proposal.expected_seq) else {
            return self.classify_claimed_failure(scope, &proposal).await;
        };
        let run = &proposal.run;
        let columns = codec::encode_run(run)?;
        let arrays = codec::encode_events(&events)?;
        // The new operational state is the rules' answer for a row held by this token.
        let mut new_ops = docket_core::model::OperationalState {
            claim_token: Some(proposal.claim_token.clone()),
            wake_at: None,
            claimed_at: Some(proposal.now),
            claim_attempts: 0,
            claim_abandons: 0,
            poison: None,
            latest_checkpoint_type: proposal.checkpoint_type,
        };
        ops::apply_commit(
            &mut new_ops,
            proposal.checkpoint_type,
            proposal.schedule,
            proposal.now,
        );
        let new_ops = codec::encode_ops(&new_ops);
        let now = proposal.now.as_micros();
        let notify = matches!(proposal.schedule, ClaimedSchedule::Release(_))
            && wake_is_due(new_ops.wake_at, now);
        let (system, scope_key) = scope_binds(scope);
        let query = self
            .q(&self.sql().commit_claimed)
            .bind(run.id.as_str())
            .bind(system)
            .bind(scope_key)
            .bind(run.graph_id.as_str())
            .bind(run.graph_hash.as_str())
            .bind(columns.started_at)
            .bind(expected)
            .bind(token)
            .bind(columns.status)
            .bind(columns.step)
            .bind(columns.checkpoint_seq)
            .bind(columns.event_seq)
            .bind(columns.document)
            .bind(columns.updated_at)
            .bind(columns.finished_at)
            .bind(new_ops.latest_checkpoint_type)
            .bind(new_ops.claim_token)
            .bind(new_ops.claimed_at)
            .bind(new_ops.wake_at);
        let query = bind_events(query, arrays)
            .bind(now)
            .bind(notify)
            .bind(self.schema());
        let result = {
            let mut conn = self.conn().await?;
            query.fetch_one(&mut conn).await
        };
        match result {
            Ok(row) => {
                let updated: i64 = row.try_get("updated").map_err(error::safe)?;
                if updated == 1 {
                    Ok(proposal.run)
                } else {
                    self.classify_claimed_failure(scope, &proposal).await
                }
            }
            Err(e) => match error::sqlstate(&e).as_deref() {
                Some(EVENT_CONFLICT) => Err(StoreError::EventConflict {
                    seq: conflict_seq(&e).unwrap_or_else(|| first_seq(&events)),
                }),
                _ => Err(error::sent(e)),
            },
        }
    }

    /// The one diagnostic read after a zero-row claimed commit, classified by the rules'
    /// order: not visible → `NotFound`; identity → `InvalidTransition`; fences →
    /// `StaleCheckpoint`; status matrix → `InvalidTransition`.
    async fn classify_claimed_failure(
        &self,
        scope: &Scope,
        proposal: &ClaimedCommit,
    ) -> Result<Run, StoreError> {
        let (system, scope_key) = scope_binds(scope);
        let row = {
            let mut conn = self.conn().await?;
            self.q(&self.sql().select_head)
                .bind(proposal.run.id.as_str())
                .bind(system)
                .bind(scope_key)
                .fetch_optional(&mut conn)
                .await
                .map_err(error::safe)?
        };
        let Some(row) = row else {
            return Err(StoreError::NotFound);
        };
        let (head, stored_ops) = decode_head_row(&row)?;
        transition::check_identity(&head, &proposal.run)?;
        if head.checkpoint_seq != proposal.expected_seq
            || !ops::holds_claim(&stored_ops, &proposal.claim_token)
        {
            return Err(StoreError::StaleCheckpoint);
        }
        transition::check_status_change(&head, &proposal.run)?;
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
        let events = transition::validate_unclaimed(expected_seq, &proposal, &events)?;
        let mut conn = self.conn().await?;
        let mut tx = self.begin(&mut conn).await?;
        let outcome = self
            .commit_unclaimed_in(&mut tx, scope, expected_seq, &proposal, events)
            .await;
        finish(tx, outcome.map(Finish::Commit)).await?;
        Ok(proposal.run)
    }

    /// The body of `commit_unclaimed` inside its transaction: lock and check the head, merge
    /// the events, write the row and the new events, queue the wake hint.
    async fn commit_unclaimed_in(
        &self,
        tx: &mut sqlx::PgConnection,
        scope: &Scope,
        expected_seq: u64,
        proposal: &UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        let run = &proposal.run;
        let columns = codec::encode_run(run)?;
        let (system, scope_key) = scope_binds(scope);
        let row = self
            .q(&self.sql().select_head_for_update)
            .bind(run.id.as_str())
            .bind(system)
            .bind(&scope_key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(error::safe)?;
        let Some(row) = row else {
            return Err(StoreError::NotFound);
        };
        let (head, stored_ops) = decode_head_row(&row)?;
        transition::check_identity(&head, run)?;
        if head.checkpoint_seq != expected_seq {
            return Err(StoreError::StaleCheckpoint);
        }
        transition::check_status_change(&head, run)?;

        let seqs: Vec<i64> = codec::encode_events(&events)?.seq;
        let stored_events = self
            .q(&self.sql().events_at)
            .bind(run.id.as_str())
            .bind(&seqs)
            .fetch_all(&mut *tx)
            .await
            .map_err(error::safe)?;
        let mut by_seq = std::collections::BTreeMap::new();
        for row in &stored_events {
            let (seq, event) = decode_event_for_merge(row)?;
            by_seq.insert(seq, event);
        }
        let to_insert = events::merge_with_stored(events, |seq| Ok(by_seq.remove(&seq)))?;

        let mut new_ops = stored_ops;
        ops::apply_unclaimed_commit(
            &mut new_ops,
            proposal.checkpoint_type,
            proposal.wake,
            proposal.now,
        );
        let new_ops = codec::encode_ops(&new_ops);
        let now = proposal.now.as_micros();
        let notify = wake_is_due(new_ops.wake_at, now);
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
            bind_events(insert, codec::encode_events(&to_insert)?)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(error::safe)?;
        }
        if notify {
            self.notify(&mut *tx).await?;
        }
        Ok(())
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
fn conflict_seq(error: &sqlx::Error) -> Option<u64> {
    crate::error::DriverError::from_sqlx(error)
        .detail
        .and_then(|d| d.trim().parse().ok())
}

fn first_seq(events: &[Event]) -> u64 {
    events.first().map_or(0, |e| e.seq)
}
