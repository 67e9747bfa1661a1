//! The three transitions, applied to the locked state through the transition kernel
//! ([`crate::store::rules::transition`]): the kernel checks and plans, this file looks up and
//! writes. Every check runs before the first write, so an error leaves the state untouched.

use crate::model::{Event, OwnerScope, Scope};
use crate::store::rules::transition::{Commit, Init, Planned, StoredHead};
use crate::store::StoreError;

use super::graphs::graph_exists;
use super::state::{encode_event, encode_run, RunRow, State};

fn encode_events(events: &[Event]) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
    events
        .iter()
        .map(|event| Ok((event.seq, encode_event(event)?)))
        .collect()
}

/// `initialize`: the graph must exist in `owner`, the run id must be unused in any scope.
pub(super) fn initialize(
    state: &mut State,
    owner: &OwnerScope,
    init: Init,
) -> Result<Planned, StoreError> {
    let run = init.run();
    let graph_exists = graph_exists(state, owner, &run.graph_id, &run.graph_hash);
    let taken = state.runs.contains_key(&run.id);
    let run_id = run.id.clone();
    let planned = init.plan(graph_exists, taken, |seq| {
        Ok(state.stored_event_for_merge(&run_id, seq))
    })?;
    let encoded_events = encode_events(&planned.new_events)?;
    let (columns, document) = encode_run(&planned.run)?;
    state.runs.insert(
        run_id.clone(),
        RunRow {
            owner: owner.clone(),
            columns,
            document,
            ops: planned.ops.clone(),
        },
    );
    state.insert_events(&run_id, encoded_events, planned.now);
    Ok(planned)
}

/// `commit_claimed` / `commit_unclaimed`: lookup in `scope`, then the kernel's plan.
///
/// `skip_seq_fence` is the deliberate bug of a conformance mutant (always `false` in use): it
/// shows the kernel a stored seq equal to the expected one, whatever is stored.
pub(super) fn commit(
    state: &mut State,
    scope: &Scope,
    commit: Commit,
    skip_seq_fence: bool,
) -> Result<Planned, StoreError> {
    let run_id = commit.run().id.clone();
    let row = state.visible_row(scope, &run_id)?;
    // Only the stored columns matter: a transition never decodes the stored document.
    let stored = StoredHead {
        run_id: run_id.clone(),
        graph_id: row.columns.graph_id.clone(),
        graph_hash: row.columns.graph_hash.clone(),
        started_at: Some(row.columns.started_at),
        status: row.columns.status,
        checkpoint_seq: if skip_seq_fence {
            commit.expected_seq()
        } else {
            row.columns.checkpoint_seq
        },
    };
    let planned = commit.plan(&stored, &row.ops, |seq| {
        Ok(state.stored_event_for_merge(&run_id, seq))
    })?;
    let encoded_events = encode_events(&planned.new_events)?;
    let (columns, document) = encode_run(&planned.run)?;
    let row = state.runs.get_mut(&run_id).ok_or(StoreError::NotFound)?;
    row.columns = columns;
    row.document = document;
    row.ops = planned.ops.clone();
    state.insert_events(&run_id, encoded_events, planned.now);
    Ok(planned)
}
