//! The three transitions, run on the writer connection inside `BEGIN IMMEDIATE`.
//!
//! Proposals arrive already validated (`rules::transition::validate_*` runs before any lookup,
//! on the caller's task). Here: lookup (scope) → immutable identity → fences → status matrix →
//! events, exactly as `rules::transition` orders them; any error rolls the transaction back.

use rusqlite::{params, Connection, OptionalExtension};

use docket_core::model::{CheckpointType, ClaimToken, Event, OwnerScope, Run, Scope, Timestamp};
use docket_core::store::rules::events::merge_with_stored;
use docket_core::store::rules::ops::{
    apply_commit, apply_unclaimed_commit, check_row_invariants, holds_claim, initial_state,
};
use docket_core::store::rules::transition::{check_identity, check_status_change};
use docket_core::store::{ClaimedSchedule, InitProposal, ReleaseWake, StoreError};

use super::sql::{
    insert_events, insert_run, load_event_for_merge, load_head, run_exists, update_run,
};
use crate::error::SqlResult;

/// A committed transition and whether its wake is due at the caller's `now` (wake hint).
pub(crate) struct Committed {
    /// The stored run.
    pub run: Run,
    /// Whether the run is ready at the caller's `now`.
    pub due: bool,
}

/// `initialize`: graph exists in `owner` → run id unused anywhere → insert row and events.
pub(crate) fn initialize(
    conn: &Connection,
    owner: &OwnerScope,
    proposal: &InitProposal,
    events: Vec<Event>,
) -> Result<Committed, StoreError> {
    let run = &proposal.run;
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
    if !graph_exists {
        return Err(StoreError::NotFound);
    }
    if run_exists(conn, &run.id)? {
        return Err(StoreError::Conflict);
    }
    let ops = initial_state(proposal.wake_at);
    insert_run(conn, owner, run, &ops)?;
    let to_insert = merge_with_stored(events, |seq| load_event_for_merge(conn, &run.id, seq))?;
    insert_events(conn, &to_insert, proposal.now)?;
    Ok(Committed {
        run: run.clone(),
        due: proposal.wake_at <= proposal.now,
    })
}

/// The fence a commit must match besides `checkpoint_seq`, with its schedule.
pub(crate) enum Fence<'a> {
    /// `commit_claimed`: the claim token must be current.
    Claimed {
        /// The holder's token.
        token: &'a ClaimToken,
        /// Retain or release.
        schedule: ClaimedSchedule,
    },
    /// `commit_unclaimed`: the seq alone (optimistic CAS); always releases.
    Unclaimed {
        /// The next wake.
        wake: ReleaseWake,
    },
}

/// A validated commit proposal.
pub(crate) struct Commit<'a> {
    /// The proposed run.
    pub run: &'a Run,
    /// The seq it builds on.
    pub expected_seq: u64,
    /// Token fence, if any.
    pub fence: Fence<'a>,
    /// Checkpoint type.
    pub checkpoint_type: CheckpointType,
    /// The caller's clock.
    pub now: Timestamp,
}

/// `commit_claimed` / `commit_unclaimed`.
pub(crate) fn commit(
    conn: &Connection,
    scope: &Scope,
    proposal: &Commit<'_>,
    events: Vec<Event>,
) -> Result<Committed, StoreError> {
    let proposed = proposal.run;
    let (stored, row) = load_head(conn, scope, &proposed.id)?.ok_or(StoreError::NotFound)?;
    check_identity(&stored, proposed)?;
    if stored.checkpoint_seq != proposal.expected_seq {
        return Err(StoreError::StaleCheckpoint);
    }
    if let Fence::Claimed { token, .. } = proposal.fence {
        if !holds_claim(&row.ops, token) {
            return Err(StoreError::StaleCheckpoint);
        }
    }
    check_status_change(&stored, proposed)?;
    let to_insert = merge_with_stored(events, |seq| load_event_for_merge(conn, &proposed.id, seq))?;
    let mut ops = row.ops;
    match proposal.fence {
        Fence::Claimed { schedule, .. } => {
            apply_commit(&mut ops, proposal.checkpoint_type, schedule, proposal.now);
        }
        Fence::Unclaimed { wake } => {
            apply_unclaimed_commit(&mut ops, proposal.checkpoint_type, wake, proposal.now);
        }
    }
    check_row_invariants(proposed.status, &ops).map_err(StoreError::invalid_transition)?;
    update_run(conn, proposed, &ops)?;
    insert_events(conn, &to_insert, proposal.now)?;
    Ok(Committed {
        run: proposed.clone(),
        due: ops.wake_at.is_some_and(|wake| wake <= proposal.now),
    })
}
