//! The three transitions (spec §4.1), applied to the locked state.
//!
//! Each function decides everything first and writes last, so an error leaves the state
//! untouched: validate → lookup in scope → immutable identity → fences → status change →
//! events → write.

use crate::model::{
    CheckpointType, ClaimToken, Event, OperationalState, OwnerScope, Run, Scope, Timestamp,
};
use crate::store::rules::events::merge_with_stored;
use crate::store::rules::ops::{
    apply_commit, apply_unclaimed_commit, check_row_invariants, holds_claim, initial_state,
};
use crate::store::rules::transition::{
    check_identity, check_status_change, validate_claimed, validate_initialize, validate_unclaimed,
    StoredHead,
};
use crate::store::{
    ClaimedCommit, ClaimedSchedule, InitProposal, ReleaseWake, StoreError, UnclaimedCommit,
};

use super::graphs::graph_exists;
use super::state::{encode_event, encode_run, RunRow, State};

/// What a successful transition reports back to the async layer.
#[derive(Debug)]
pub(super) struct Committed {
    /// The committed document (as proposed).
    pub run: Run,
    /// Whether the resulting wake is due at the transition's `now` (a wake hint is owed).
    pub wake_due: bool,
}

/// Whether the stored run still sits at the seq the proposal builds on.
///
/// Kept apart so the fence is one obvious line to read (and to break in a mutant).
fn seq_fence_holds(stored: &StoredHead, expected_seq: u64) -> bool {
    stored.checkpoint_seq == expected_seq
}

/// Whether `token` is the row's current claim.
fn token_fence_holds(ops: &OperationalState, token: &ClaimToken) -> bool {
    holds_claim(ops, token)
}

fn wake_due(ops: &OperationalState, now: Timestamp) -> bool {
    ops.wake_at.is_some_and(|wake| wake <= now)
}

fn encode_events(events: &[Event]) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
    events
        .iter()
        .map(|event| Ok((event.seq, encode_event(event)?)))
        .collect()
}

fn check_new_row(run: &Run, ops: &OperationalState) -> Result<(), StoreError> {
    // The rules maintain the invariants by construction; refusing (rather than storing) a row
    // that breaks them keeps a rules bug from turning into a corrupt store.
    check_row_invariants(run.status, ops).map_err(StoreError::invalid_transition)
}

/// `initialize`: validate → graph exists in `owner` → id unused anywhere → insert.
pub(super) fn initialize(
    state: &mut State,
    owner: &OwnerScope,
    proposal: InitProposal,
    events: Vec<Event>,
) -> Result<Committed, StoreError> {
    let events = validate_initialize(owner, &proposal, &events)?;
    let run = proposal.run;
    if !graph_exists(state, owner, &run.graph_id, &run.graph_hash) {
        return Err(StoreError::NotFound);
    }
    if state.runs.contains_key(&run.id) {
        return Err(StoreError::Conflict);
    }
    let to_insert =
        merge_with_stored(events, |seq| Ok(state.stored_event_for_merge(&run.id, seq)))?;
    let encoded_events = encode_events(&to_insert)?;
    let (columns, document) = encode_run(&run)?;
    let ops = initial_state(proposal.wake_at);
    check_new_row(&run, &ops)?;

    let due = wake_due(&ops, proposal.now);
    state.runs.insert(
        run.id.clone(),
        RunRow {
            owner: owner.clone(),
            columns,
            document,
            ops,
        },
    );
    state.insert_events(&run.id, encoded_events, proposal.now);
    Ok(Committed { run, wake_due: due })
}

/// Who commits: the claim holder (token fence, any claimed schedule) or a signal (no token,
/// always a release that revokes any claim).
enum Authority<'a> {
    Claim {
        token: &'a ClaimToken,
        schedule: ClaimedSchedule,
        skip_seq_fence: bool,
    },
    Signal {
        wake: ReleaseWake,
    },
}

/// `commit_claimed`: validate → lookup → identity → fences (token, seq) → status → events.
///
/// `skip_seq_fence` is the deliberate bug of a conformance mutant (always `false` in use).
pub(super) fn commit_claimed(
    state: &mut State,
    scope: &Scope,
    proposal: ClaimedCommit,
    events: Vec<Event>,
    skip_seq_fence: bool,
) -> Result<Committed, StoreError> {
    let events = validate_claimed(&proposal, &events)?;
    let ClaimedCommit {
        run,
        expected_seq,
        claim_token,
        checkpoint_type,
        schedule,
        now,
    } = proposal;
    let authority = Authority::Claim {
        token: &claim_token,
        schedule,
        skip_seq_fence,
    };
    commit(
        state,
        scope,
        expected_seq,
        &authority,
        Proposed {
            run,
            checkpoint_type,
            events,
            now,
        },
    )
}

/// `commit_unclaimed`: validate → lookup → identity → seq CAS → status → events; always
/// releases any claim.
pub(super) fn commit_unclaimed(
    state: &mut State,
    scope: &Scope,
    expected_seq: u64,
    proposal: UnclaimedCommit,
    events: Vec<Event>,
) -> Result<Committed, StoreError> {
    let events = validate_unclaimed(expected_seq, &proposal, &events)?;
    let UnclaimedCommit {
        run,
        checkpoint_type,
        wake,
        now,
    } = proposal;
    commit(
        state,
        scope,
        expected_seq,
        &Authority::Signal { wake },
        Proposed {
            run,
            checkpoint_type,
            events,
            now,
        },
    )
}

/// The validated parts of a commit proposal.
struct Proposed {
    run: Run,
    checkpoint_type: CheckpointType,
    events: Vec<Event>,
    now: Timestamp,
}

fn commit(
    state: &mut State,
    scope: &Scope,
    expected_seq: u64,
    authority: &Authority<'_>,
    proposed: Proposed,
) -> Result<Committed, StoreError> {
    let Proposed {
        run,
        checkpoint_type,
        events,
        now,
    } = proposed;
    let row = state.visible_row(scope, &run.id)?;
    // Only the stored columns matter: a transition never decodes the stored document.
    let stored = StoredHead {
        run_id: run.id.clone(),
        graph_id: row.columns.graph_id.clone(),
        graph_hash: row.columns.graph_hash.clone(),
        started_at: Some(row.columns.started_at),
        status: row.columns.status,
        checkpoint_seq: row.columns.checkpoint_seq,
    };
    check_identity(&stored, &run)?;
    if let Authority::Claim { token, .. } = authority {
        if !token_fence_holds(&row.ops, token) {
            return Err(StoreError::StaleCheckpoint);
        }
    }
    let skip_seq_fence = matches!(
        authority,
        Authority::Claim {
            skip_seq_fence: true,
            ..
        }
    );
    if !skip_seq_fence && !seq_fence_holds(&stored, expected_seq) {
        return Err(StoreError::StaleCheckpoint);
    }
    check_status_change(&stored, &run)?;
    let to_insert =
        merge_with_stored(events, |seq| Ok(state.stored_event_for_merge(&run.id, seq)))?;
    let encoded_events = encode_events(&to_insert)?;
    let (columns, document) = encode_run(&run)?;
    let mut ops = row.ops.clone();
    match *authority {
        Authority::Claim { schedule, .. } => apply_commit(&mut ops, checkpoint_type, schedule, now),
        Authority::Signal { wake } => apply_unclaimed_commit(&mut ops, checkpoint_type, wake, now),
    }
    check_new_row(&run, &ops)?;

    let due = wake_due(&ops, now);
    let row = state.runs.get_mut(&run.id).ok_or(StoreError::NotFound)?;
    row.columns = columns;
    row.document = document;
    row.ops = ops;
    state.insert_events(&run.id, encoded_events, now);
    Ok(Committed { run, wake_due: due })
}
