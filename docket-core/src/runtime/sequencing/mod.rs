//! Moment sequencing (`docs/runs-and-moments.md`, “Sequencing”): turning a proposed run and its
//! runtime facts into a [`Moment`] whose events are numbered and closed by exactly one
//! `checkpoint_committed`.

mod envelope;

use serde_json::Value;

pub use envelope::{envelope, park_fields};

use super::moment::{Disposition, Moment, PendingAttempt};
use crate::model::{CheckpointType, Event, EventType, Run, Timestamp, ValueMap};

/// A runtime fact before sequencing: an event without run id, sequence or timestamp.
#[derive(Clone, Debug, PartialEq)]
pub struct EventEntry {
    /// Event type.
    pub event_type: EventType,
    /// Graph step the fact belongs to.
    pub step: u64,
    /// Node concerned.
    pub node_id: Option<String>,
    /// Channel concerned.
    pub channel_id: Option<String>,
    /// Task concerned.
    pub task_id: Option<String>,
    /// Payload (never channel values).
    pub payload: ValueMap,
}

impl EventEntry {
    /// A fact of `event_type` at `step` with an empty payload and no ids.
    #[must_use]
    pub fn new(event_type: EventType, step: u64) -> Self {
        EventEntry {
            event_type,
            step,
            node_id: None,
            channel_id: None,
            task_id: None,
            payload: ValueMap::new(),
        }
    }

    /// Sets the node.
    #[must_use]
    pub fn node(mut self, node_id: impl Into<String>) -> Self {
        self.node_id = Some(node_id.into());
        self
    }

    /// Sets the channel.
    #[must_use]
    pub fn channel(mut self, channel_id: impl Into<String>) -> Self {
        self.channel_id = Some(channel_id.into());
        self
    }

    /// Sets the task.
    #[must_use]
    pub fn task(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// Adds a payload member.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.payload.insert(key.to_owned(), value.into());
        self
    }
}

/// Sequences a proposed run into a moment (`docs/runs-and-moments.md`, “Sequencing”).
///
/// `run` is the proposed document with its pre-moment counters; the returned moment's run has
/// `checkpoint_seq + 1` and `event_seq` advanced past the final checkpoint event. `pending` are
/// the pending writes newly parked by this moment.
#[must_use]
pub fn sequence(
    mut run: Run,
    checkpoint_type: CheckpointType,
    entries: Vec<EventEntry>,
    disposition: Disposition,
    now: Timestamp,
    pending: Vec<PendingAttempt>,
) -> Moment {
    run.checkpoint_seq += 1;
    let mut seq = run.event_seq;
    let mut events: Vec<Event> = entries
        .into_iter()
        .map(|entry| {
            seq += 1;
            Event {
                run_id: run.id.clone(),
                seq,
                event_type: entry.event_type,
                step: entry.step,
                node_id: entry.node_id,
                channel_id: entry.channel_id,
                task_id: entry.task_id,
                timestamp: now,
                payload: entry.payload,
                metadata: ValueMap::new(),
            }
        })
        .collect();
    let metadata = envelope(&run, checkpoint_type, &events, disposition, &pending);
    seq += 1;
    events.push(Event {
        run_id: run.id.clone(),
        seq,
        event_type: EventType::CheckpointCommitted,
        step: run.step,
        node_id: None,
        channel_id: None,
        task_id: None,
        timestamp: now,
        payload: ValueMap::new(),
        metadata: metadata.clone(),
    });
    run.event_seq = seq;
    Moment {
        run,
        events,
        checkpoint_type,
        checkpoint_metadata: metadata,
        disposition,
        proposed_at: now,
        pending_attempts: pending,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{CheckpointType, EventType, GraphHash, GraphId, RunId, Timestamp};

    fn run() -> Run {
        let mut run = Run::new_created(
            RunId::new("r").expect("id"),
            GraphId::new("g").expect("id"),
            GraphHash::new("h").expect("hash"),
            ValueMap::new(),
            ValueMap::new(),
        );
        run.checkpoint_seq = 4;
        run.event_seq = 10;
        run.step = 3;
        run
    }

    #[test]
    fn events_are_numbered_after_event_seq_and_closed_by_one_checkpoint() {
        let entries = vec![
            EventEntry::new(EventType::NodeCompleted, 2)
                .node("a")
                .task("r:2:a")
                .with("attempt", 1),
            EventEntry::new(EventType::ChannelUpdated, 2).channel("state:x"),
        ];
        let now = Timestamp::from_millis(77);
        let m = sequence(
            run(),
            CheckpointType::StepCommitted,
            entries,
            Disposition::Continue,
            now,
            vec![],
        );
        let seqs: Vec<u64> = m.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![11, 12, 13]);
        assert_eq!(m.run.event_seq, 13);
        assert_eq!(m.run.checkpoint_seq, 5);
        assert_eq!(m.events[0].step, 2, "runtime facts keep their own step");
        assert_eq!(
            m.events[2].step, 3,
            "the checkpoint carries the committed step"
        );
        assert!(m.events.iter().all(|e| e.timestamp == now));
        assert!(m.events[2].payload.is_empty());
        assert_eq!(m.events[2].metadata, m.checkpoint_metadata);
        assert_eq!(m.checkpoint_metadata["checkpoint_seq"], json!(5));
        assert_eq!(m.checkpoint_metadata["graph_step"], json!(3));
        assert_eq!(
            m.checkpoint_metadata["node_attempts"],
            json!([{"task_id": "r:2:a", "node_id": "a", "attempt": 1,
                    "idempotency_key": "r:2:a:1", "outcome": "completed",
                    "next_scheduled_attempt": null}])
        );
    }

    #[test]
    fn newly_parked_writes_already_covered_by_a_fact_are_not_repeated() {
        let pending = vec![
            PendingAttempt {
                task_id: "r:3:a".into(),
                node_id: "a".into(),
                attempted: 1,
                kind: "interrupt".into(),
                idempotency_key: "r:3:a:1".into(),
            },
            PendingAttempt {
                task_id: "r:3:b".into(),
                node_id: "b".into(),
                attempted: 2,
                kind: "update".into(),
                idempotency_key: "r:3:b:2".into(),
            },
        ];
        let entries = vec![EventEntry::new(EventType::InterruptRequested, 3)
            .node("a")
            .task("r:3:a")
            .with("attempt", 1)];
        let m = sequence(
            run(),
            CheckpointType::RetryScheduled,
            entries,
            Disposition::Continue,
            Timestamp::EPOCH,
            pending,
        );
        let outcomes: Vec<_> = m.checkpoint_metadata["node_attempts"]
            .as_array()
            .expect("list")
            .iter()
            .map(|a| a["outcome"].clone())
            .collect();
        assert_eq!(
            outcomes,
            vec![json!("interrupted"), json!("pending_update")]
        );
    }
}
