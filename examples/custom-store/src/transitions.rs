//! The three transitions, applied to the locked tables: every check first (validation →
//! lookup in scope → identity → fences → status → events), every write last.

use docket_core::model::{ClaimToken, Event, OperationalState, OwnerScope, Run, Scope, Timestamp};
use docket_core::store::rules::events::{merge_with_stored, StoredEvent};
use docket_core::store::rules::ops::{
    apply_commit, check_row_invariants, holds_claim, initial_state,
};
use docket_core::store::rules::transition::{
    check_identity, check_status_change, validate_claimed, validate_initialize, validate_unclaimed,
    StoredHead,
};
use docket_core::store::{
    ClaimedCommit, ClaimedSchedule, InitProposal, StoreError, UnclaimedCommit,
};

use crate::codec::{decode_event, encode_event, encode_run};
use crate::tables::{EventRow, RunRow, Tables};

/// The stored event at `(run.id, seq)`, decoded, for idempotent appends.
/// The stored event at `seq` for the merge rules: bytes that do not decode can never equal a
/// proposal, so they are a conflict, not an error.
fn stored_event(tables: &Tables, run: &Run, seq: u64) -> Result<Option<StoredEvent>, StoreError> {
    Ok(tables
        .events
        .get(&run.id)
        .and_then(|events| events.get(&seq))
        .map(|row| match decode_event(&run.id, seq, row) {
            Ok(event) => StoredEvent::Event(event),
            Err(_) => StoredEvent::Undecodable,
        }))
}

/// Encodes `events` and appends them (the last write of a transition).
fn encoded(events: &[Event]) -> Result<Vec<(u64, String)>, StoreError> {
    events
        .iter()
        .map(|event| Ok((event.seq, encode_event(event)?)))
        .collect()
}

fn append(tables: &mut Tables, run: &Run, events: Vec<(u64, String)>, now: Timestamp) {
    if events.is_empty() {
        return;
    }
    let rows = tables.events.entry(run.id.clone()).or_default();
    for (seq, json) in events {
        rows.insert(
            seq,
            EventRow {
                json,
                inserted_at: now,
            },
        );
    }
}

/// `initialize`: validate → graph exists for `owner` → id unused anywhere → insert.
pub(crate) fn initialize(
    tables: &mut Tables,
    owner: &OwnerScope,
    proposal: InitProposal,
    events: Vec<Event>,
) -> Result<Run, StoreError> {
    let events = validate_initialize(owner, &proposal, &events)?;
    let run = proposal.run;
    let graph = (owner.clone(), run.graph_id.clone(), run.graph_hash.clone());
    if !tables.graphs.contains_key(&graph) {
        return Err(StoreError::NotFound);
    }
    if tables.runs.contains_key(&run.id) {
        return Err(StoreError::Conflict);
    }
    let fresh = merge_with_stored(events, |seq| stored_event(tables, &run, seq))?;
    let fresh = encoded(&fresh)?;
    let (columns, document) = encode_run(&run)?;
    let ops = initial_state(proposal.wake_at);
    check_row_invariants(run.status, &ops).map_err(StoreError::invalid_transition)?;
    tables.runs.insert(
        run.id.clone(),
        RunRow {
            owner: owner.clone(),
            columns,
            document,
            ops,
        },
    );
    append(tables, &run, fresh, proposal.now);
    Ok(run)
}

/// `commit_claimed`: the holder's commit under both fences.
pub(crate) fn commit_claimed(
    tables: &mut Tables,
    scope: &Scope,
    proposal: ClaimedCommit,
    events: Vec<Event>,
) -> Result<Run, StoreError> {
    let events = validate_claimed(&proposal, &events)?;
    commit(
        tables,
        scope,
        proposal.expected_seq,
        Some(&proposal.claim_token),
        proposal.schedule,
        Commit {
            run: proposal.run,
            checkpoint_type: proposal.checkpoint_type,
            events,
            now: proposal.now,
        },
    )
}

/// `commit_unclaimed`: a signal's commit under the seq CAS; always releases.
pub(crate) fn commit_unclaimed(
    tables: &mut Tables,
    scope: &Scope,
    expected_seq: u64,
    proposal: UnclaimedCommit,
    events: Vec<Event>,
) -> Result<Run, StoreError> {
    let events = validate_unclaimed(expected_seq, &proposal, &events)?;
    commit(
        tables,
        scope,
        expected_seq,
        None,
        ClaimedSchedule::Release(proposal.wake),
        Commit {
            run: proposal.run,
            checkpoint_type: proposal.checkpoint_type,
            events,
            now: proposal.now,
        },
    )
}

/// The validated parts of a commit.
struct Commit {
    run: Run,
    checkpoint_type: docket_core::model::CheckpointType,
    events: Vec<Event>,
    now: Timestamp,
}

fn commit(
    tables: &mut Tables,
    scope: &Scope,
    expected_seq: u64,
    token: Option<&ClaimToken>,
    schedule: ClaimedSchedule,
    proposed: Commit,
) -> Result<Run, StoreError> {
    let Commit {
        run,
        checkpoint_type,
        events,
        now,
    } = proposed;
    let row = tables.visible(scope, &run.id)?;
    // Transitions compare columns only; the stored document is never decoded here.
    let stored = StoredHead {
        run_id: run.id.clone(),
        graph_id: row.columns.graph_id.clone(),
        graph_hash: row.columns.graph_hash.clone(),
        started_at: Some(row.columns.started_at),
        status: row.columns.status,
        checkpoint_seq: row.columns.checkpoint_seq,
    };
    check_identity(&stored, &run)?;
    let token_holds = token.is_none_or(|token| holds_claim(&row.ops, token));
    if !token_holds || stored.checkpoint_seq != expected_seq {
        return Err(StoreError::StaleCheckpoint);
    }
    check_status_change(&stored, &run)?;
    let fresh = merge_with_stored(events, |seq| stored_event(tables, &run, seq))?;
    let fresh = encoded(&fresh)?;
    let (columns, document) = encode_run(&run)?;
    let mut ops: OperationalState = row.ops.clone();
    apply_commit(&mut ops, checkpoint_type, schedule, now);
    check_row_invariants(run.status, &ops).map_err(StoreError::invalid_transition)?;
    let row = tables.runs.get_mut(&run.id).ok_or(StoreError::NotFound)?;
    row.columns = columns;
    row.document = document;
    row.ops = ops;
    append(tables, &run, fresh, now);
    Ok(run)
}
