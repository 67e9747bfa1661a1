//! History checks: a committed run's events must show every checkpoint exactly once, in
//! order (`1..=checkpoint_seq`), with contiguous event seqs and one closing checkpoint event
//! per moment. Used by `docket run verify`, the crash-recovery check, `docket bench` and the
//! tests.

use serde_json::Value;

use docket_core::model::{Event, EventType, Run};

/// Every violation found in `events` (all retained events of `run`, ascending). Empty when
/// the history is sound. Assumes nothing was pruned.
#[must_use]
pub fn check_history(run: &Run, events: &[Event]) -> Vec<String> {
    let mut check = HistoryCheck::new();
    check.feed(events);
    check.finish(run)
}

/// [`check_history`] fed page by page (ascending, as `list_events` returns them), so a
/// history of any length is checked in constant memory.
#[derive(Clone, Debug, Default)]
pub struct HistoryCheck {
    /// Events fed so far.
    events: u64,
    /// The first event whose seq broke the `1, 2, 3, …` order.
    seq_problem: Option<String>,
    /// Checkpoint events fed so far.
    checkpoints: u64,
    /// The first checkpoint event out of the `1, 2, 3, …` order.
    checkpoint_problem: Option<String>,
    /// Whether the last event fed was a checkpoint.
    last_is_checkpoint: Option<bool>,
}

impl HistoryCheck {
    /// A check that has seen no event.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks the next events of the history.
    pub fn feed(&mut self, events: &[Event]) {
        for event in events {
            self.events += 1;
            if self.seq_problem.is_none() && event.seq != self.events {
                self.seq_problem = Some(format!("event #{} has seq {}", self.events, event.seq));
            }
            let is_checkpoint = event.event_type == EventType::CheckpointCommitted;
            self.last_is_checkpoint = Some(is_checkpoint);
            if is_checkpoint {
                self.checkpoints += 1;
                let seq = event.metadata.get("checkpoint_seq").and_then(Value::as_u64);
                if self.checkpoint_problem.is_none() && seq != Some(self.checkpoints) {
                    self.checkpoint_problem = Some(format!(
                        "checkpoint event #{} records checkpoint seq {seq:?}, expected {}",
                        self.checkpoints, self.checkpoints
                    ));
                }
            }
        }
    }

    /// Every violation found, given the run the events belong to.
    #[must_use]
    pub fn finish(self, run: &Run) -> Vec<String> {
        let mut problems: Vec<String> = self.seq_problem.into_iter().collect();
        if self.events != run.event_seq {
            problems.push(format!(
                "{} events retained, run.event_seq is {}",
                self.events, run.event_seq
            ));
        }
        problems.extend(self.checkpoint_problem);
        if self.checkpoints != run.checkpoint_seq {
            problems.push(format!(
                "{} checkpoint events, expected one for each of 1..={}",
                self.checkpoints, run.checkpoint_seq
            ));
        }
        if self.last_is_checkpoint == Some(false) {
            problems.push("the last event is not a checkpoint".into());
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Docket, StartOptions, TestingMode};

    /// A finished run of a three-node chain (inline, in memory) and its events.
    async fn finished_run() -> (Run, Vec<Event>) {
        let docket = Docket::builder(
            std::sync::Arc::new(docket_core::memory::MemoryStore::new()),
            crate::nodes::registry(),
        )
        .testing(TestingMode::Inline)
        .build()
        .expect("valid");
        let graph = docket
            .save_graph_json(
                r#"{"schema_version": 1, "id": "chain",
                    "fields": {"n": {"schema": {"type": "integer"}, "default": 0}},
                    "outputs": {"n": {}},
                    "nodes": {"a": {"implementation": "std.increment", "config": {"field": "n"}},
                              "b": {"implementation": "std.increment", "config": {"field": "n"}}},
                    "edges": {"e0": {"from": "$start", "to": "a"}, "e1": {"from": "a", "to": "b"},
                              "e2": {"from": "b", "to": "$finish"}}}"#,
            )
            .await
            .expect("published");
        let run = docket
            .start_run(&graph, Default::default(), StartOptions::default())
            .await
            .expect("ran inline");
        let events = docket.all_events(&run.id).await.expect("events");
        (run, events)
    }

    #[tokio::test]
    async fn a_sound_history_passes_whole_and_page_by_page() {
        let (run, events) = finished_run().await;
        assert!(
            run.status.is_terminal() && run.checkpoint_seq >= 3,
            "{run:?}"
        );
        assert_eq!(check_history(&run, &events), Vec::<String>::new());
        let mut paged = HistoryCheck::new();
        for page in events.chunks(2) {
            paged.feed(page);
        }
        assert_eq!(paged.finish(&run), Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_missing_event_is_a_gap_a_count_mismatch_and_possibly_a_missing_checkpoint() {
        let (run, mut events) = finished_run().await;
        let checkpoint = events
            .iter()
            .position(|e| e.event_type == EventType::CheckpointCommitted)
            .expect("a checkpoint");
        events.remove(checkpoint);
        let problems = check_history(&run, &events);
        assert!(
            problems.iter().any(|p| p.contains("has seq")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("events retained")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("checkpoint")),
            "{problems:?}"
        );
    }

    #[tokio::test]
    async fn a_history_ending_without_its_checkpoint_is_reported() {
        let (run, mut events) = finished_run().await;
        events.pop();
        let problems = check_history(&run, &events);
        assert!(
            problems
                .iter()
                .any(|p| p == "the last event is not a checkpoint"),
            "{problems:?}"
        );
    }
}
