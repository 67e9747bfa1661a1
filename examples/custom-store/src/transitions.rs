//! The three transitions. The store's part is only what it alone knows — where rows live and
//! how they are encoded; every check and every effect comes from the transition kernel
//! (`docket_core::store::rules::transition`): `Init::new` / `Commit::claimed` /
//! `Commit::unclaimed` check the proposal on its own, `plan` checks it against the stored row
//! and says what to write. All checks run before the first write, under one lock.

use docket_core::model::{Event, OwnerScope, Run, Scope, Timestamp};
use docket_core::store::rules::events::StoredEvent;
use docket_core::store::rules::transition::{Commit, Init, Planned, StoredHead};
use docket_core::store::StoreError;

use crate::codec::{decode_event, encode_event, encode_run};
use crate::tables::{EventRow, RunRow, Tables};

/// The stored event at `(run, seq)` for the kernel's event comparison: bytes that do not
/// decode can never equal a proposal, so they are a conflict, not an error.
fn stored_event(tables: &Tables, run: &Run, seq: u64) -> Option<StoredEvent> {
    tables
        .events
        .get(&run.id)
        .and_then(|events| events.get(&seq))
        .map(|row| match decode_event(&run.id, seq, row) {
            Ok(event) => StoredEvent::Event(event),
            Err(_) => StoredEvent::Undecodable,
        })
}

/// Appends the planned new events (the last write of a transition).
fn append(
    tables: &mut Tables,
    run: &Run,
    events: &[Event],
    now: Timestamp,
) -> Result<(), StoreError> {
    let encoded = events
        .iter()
        .map(|event| Ok((event.seq, encode_event(event)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    if encoded.is_empty() {
        return Ok(());
    }
    let rows = tables.events.entry(run.id.clone()).or_default();
    for (seq, json) in encoded {
        rows.insert(
            seq,
            EventRow {
                json,
                inserted_at: now,
            },
        );
    }
    Ok(())
}

/// `initialize`: the kernel needs to know whether the graph version exists for `owner` and
/// whether the run id is taken anywhere.
pub(crate) fn initialize(
    tables: &mut Tables,
    owner: &OwnerScope,
    init: Init,
) -> Result<Run, StoreError> {
    let run = init.run().clone();
    let graph = (owner.clone(), run.graph_id.clone(), run.graph_hash.clone());
    let graph_exists = tables.graphs.contains_key(&graph);
    let taken = tables.runs.contains_key(&run.id);
    let planned = init.plan(graph_exists, taken, |seq| {
        Ok(stored_event(tables, &run, seq))
    })?;
    let (columns, document) = encode_run(&planned.run)?;
    tables.runs.insert(
        run.id.clone(),
        RunRow {
            owner: owner.clone(),
            columns,
            document,
            ops: planned.ops.clone(),
        },
    );
    append(tables, &run, &planned.new_events, planned.now)?;
    Ok(planned.run)
}

/// `commit_claimed` and `commit_unclaimed`: find the row in `scope`, show the kernel its
/// stored head (columns only — the stored document is never decoded here), write the plan.
pub(crate) fn commit(
    tables: &mut Tables,
    scope: &Scope,
    commit: Commit,
) -> Result<Run, StoreError> {
    let run = commit.run().clone();
    let row = tables.visible(scope, &run.id)?;
    let stored = StoredHead {
        run_id: run.id.clone(),
        graph_id: row.columns.graph_id.clone(),
        graph_hash: row.columns.graph_hash.clone(),
        started_at: Some(row.columns.started_at),
        status: row.columns.status,
        checkpoint_seq: row.columns.checkpoint_seq,
    };
    let Planned {
        run: proposed,
        ops,
        new_events,
        now,
        ..
    } = commit.plan(&stored, &row.ops, |seq| Ok(stored_event(tables, &run, seq)))?;
    let (columns, document) = encode_run(&proposed)?;
    let row = tables.runs.get_mut(&run.id).ok_or(StoreError::NotFound)?;
    row.columns = columns;
    row.document = document;
    row.ops = ops;
    append(tables, &run, &new_events, now)?;
    Ok(proposed)
}
