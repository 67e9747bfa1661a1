//! Event rules of transitions (`docs/storage-contract.md`, “Transitions”;
//! `docs/storage-contract.md`, “Reading events”): identity, in-batch duplicates, and idempotent
//! appends against already stored events.

use std::collections::BTreeMap;

use crate::model::value::canonical_json;
use crate::model::{check_portable_map, Event, Run, MAX_SEQ};

/// Whether two events are the same fact: equal canonical encodings (so `-0.0` and `0.0`
/// differ, exactly as on a backend that compares stored bytes).
#[must_use]
pub fn same_event(a: &Event, b: &Event) -> bool {
    canonical(a) == canonical(b)
}

fn canonical(event: &Event) -> Vec<u8> {
    // Serializing an event cannot fail: every map is string-keyed.
    canonical_json(&serde_json::to_value(event).unwrap_or_default())
}

/// What a backend found at one `(run_id, seq)`.
#[derive(Clone, Debug, PartialEq)]
pub enum StoredEvent {
    /// A decodable stored event.
    Event(Event),
    /// Stored bytes that do not decode; they can never equal a proposed event.
    Undecodable,
}
use crate::store::error::StoreError;

/// Sorts `events` by seq, collapses identical duplicates and rejects contradictory ones.
///
/// # Errors
/// `InvalidTransition` for an event of another run, a zero or oversized seq, a control
/// character in its node, channel or task id, or a non-portable payload; `EventConflict` for two different events at one seq.
pub fn normalize_events(run: &Run, events: Vec<Event>) -> Result<Vec<Event>, StoreError> {
    // What a worker proposes is already in order without repeats, so nothing can conflict
    // and the events are kept as they are; the checks run in the same order either way.
    if events.windows(2).all(|pair| pair[0].seq < pair[1].seq) {
        for event in &events {
            check_event(run, event)?;
        }
        return Ok(events);
    }
    // The first event proposed at each seq.
    let mut by_seq: BTreeMap<u64, usize> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        check_event(run, event)?;
        match by_seq.get(&event.seq) {
            Some(&first) if !same_event(&events[first], event) => {
                return Err(StoreError::EventConflict { seq: event.seq });
            }
            Some(_) => {}
            None => {
                by_seq.insert(event.seq, index);
            }
        }
    }
    let mut events: Vec<Option<Event>> = events.into_iter().map(Some).collect();
    Ok(by_seq
        .into_values()
        .filter_map(|index| events[index].take())
        .collect())
}

/// The checks of one proposed event on its own: its run, its seq's range, its ids and its
/// maps.
fn check_event(run: &Run, event: &Event) -> Result<(), StoreError> {
    if event.run_id != run.id {
        return Err(StoreError::invalid_transition(format!(
            "event seq {} belongs to run {}, not {}",
            event.seq, event.run_id, run.id
        )));
    }
    if event.seq == 0 || event.seq > MAX_SEQ {
        return Err(StoreError::invalid_transition(format!(
            "event seq {} is out of range",
            event.seq
        )));
    }
    for (name, field) in [
        ("node_id", &event.node_id),
        ("channel_id", &event.channel_id),
        ("task_id", &event.task_id),
    ] {
        // Every backend must store these as text; PostgreSQL `text` cannot hold NUL, so
        // control characters are refused everywhere rather than on one backend only.
        if field
            .as_deref()
            .is_some_and(|f| f.chars().any(char::is_control))
        {
            return Err(StoreError::invalid_transition(format!(
                "event {} {name} contains a control character",
                event.seq
            )));
        }
    }
    check_portable_map(&event.payload)
        .and_then(|()| check_portable_map(&event.metadata))
        .map_err(|e| StoreError::invalid_transition(format!("event {}: {e}", event.seq)))
}

/// Splits normalized `proposed` events into those to insert, given the stored event at each
/// seq (`stored(seq)`): identical stored events are accepted without a write; a different or
/// undecodable stored event is a conflict (the proposal cannot be the fact stored there).
///
/// # Errors
/// `EventConflict` at the first seq whose stored event differs; any error of `stored`.
pub fn merge_with_stored<F>(proposed: Vec<Event>, mut stored: F) -> Result<Vec<Event>, StoreError>
where
    F: FnMut(u64) -> Result<Option<StoredEvent>, StoreError>,
{
    let mut to_insert = Vec::with_capacity(proposed.len());
    for event in proposed {
        match stored(event.seq)? {
            Some(StoredEvent::Event(existing)) if same_event(&existing, &event) => {}
            Some(_) => return Err(StoreError::EventConflict { seq: event.seq }),
            None => to_insert.push(event),
        }
    }
    Ok(to_insert)
}
