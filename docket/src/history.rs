//! History checks: a committed run's events must show every checkpoint exactly once, in
//! order (`1..=checkpoint_seq`), with contiguous event seqs and one closing checkpoint event
//! per moment. Used by `docket run verify`, the crash-recovery check and the tests.

use serde_json::Value;

use docket_core::model::{Event, EventType, Run};

/// Every violation found in `events` (all retained events of `run`, ascending). Empty when
/// the history is sound. Assumes nothing was pruned.
#[must_use]
pub fn check_history(run: &Run, events: &[Event]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let expected = i as u64 + 1;
        if event.seq != expected {
            problems.push(format!("event #{expected} has seq {}", event.seq));
            break;
        }
    }
    if events.len() as u64 != run.event_seq {
        problems.push(format!(
            "{} events retained, run.event_seq is {}",
            events.len(),
            run.event_seq
        ));
    }
    let checkpoints: Vec<Option<u64>> = events
        .iter()
        .filter(|e| e.event_type == EventType::CheckpointCommitted)
        .map(|e| e.metadata.get("checkpoint_seq").and_then(Value::as_u64))
        .collect();
    let expected: Vec<Option<u64>> = (1..=run.checkpoint_seq).map(Some).collect();
    if checkpoints != expected {
        problems.push(format!(
            "checkpoint seqs are {checkpoints:?}, expected 1..={}",
            run.checkpoint_seq
        ));
    }
    if events
        .last()
        .is_some_and(|e| e.event_type != EventType::CheckpointCommitted)
    {
        problems.push("the last event is not a checkpoint".into());
    }
    problems
}
