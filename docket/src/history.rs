//! History checks: a committed run's events must show every checkpoint exactly once, in
//! order (`1..=checkpoint_seq`), with contiguous event seqs and one closing checkpoint event
//! per moment. Used by `docket run verify`, the crash-recovery check, `docket bench` and the
//! tests.

use std::collections::BTreeMap;

use serde_json::Value;

use docket_core::model::{
    Event, EventQuery, EventType, OwnerScope, Run, RunId, RunQuery, RunStatus, RunSummary, Scope,
    MAX_PAGE_LIMIT,
};
use docket_core::store::{RunStore, StoreError};

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

/// The verdict on one run of a store-wide verification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunVerdict {
    /// The run.
    pub id: RunId,
    /// Its owner.
    pub owner: OwnerScope,
    /// Its status.
    pub status: RunStatus,
    /// Its committed checkpoint seq.
    pub checkpoint_seq: u64,
    /// Retained events read.
    pub events: u64,
    /// Every violation found (empty when sound).
    pub problems: Vec<String>,
}

/// Runs and violations of one owner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerTally {
    /// Runs verified.
    pub runs: u64,
    /// Of those, runs with at least one violation.
    pub violations: u64,
}

/// The result of [`verify_store`]: every run of every owner.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreVerification {
    /// One verdict per run, newest first.
    pub runs: Vec<RunVerdict>,
    /// Runs and violations per owner: `None` is tenantless, `Some(id)` a tenant.
    pub per_owner: BTreeMap<Option<String>, OwnerTally>,
}

impl StoreVerification {
    /// Runs with at least one violation.
    #[must_use]
    pub fn violations(&self) -> usize {
        self.runs.iter().filter(|r| !r.problems.is_empty()).count()
    }
}

/// Checks the history of every run in the store, whatever its owner — verification is system
/// work, so a tenant's runs are never skipped — and, with `expect_terminal`, that each run is
/// terminal. Runs are listed page by page and each history is read page by page, so any
/// store is checked in memory proportional to its number of runs, not events.
///
/// # Errors
/// Store errors (a corrupt record, an unreachable store).
pub async fn verify_store<S>(
    store: &S,
    expect_terminal: bool,
) -> Result<StoreVerification, StoreError>
where
    S: RunStore + ?Sized,
{
    let mut out = StoreVerification::default();
    let mut query = RunQuery {
        limit: MAX_PAGE_LIMIT,
        ..RunQuery::default()
    };
    loop {
        let page = store.list_runs(&Scope::System, &query).await?;
        for summary in &page.runs {
            let verdict = match verify_run(store, summary, expect_terminal).await {
                Ok(verdict) => verdict,
                // Pruned between the listing and the reading: nothing left to verify.
                Err(StoreError::NotFound) => continue,
                Err(e) => return Err(e),
            };
            let tally = out
                .per_owner
                .entry(verdict.owner.tenant_id().map(|t| t.as_str().to_owned()))
                .or_default();
            tally.runs += 1;
            tally.violations += u64::from(!verdict.problems.is_empty());
            out.runs.push(verdict);
        }
        if !page.has_more {
            return Ok(out);
        }
        query.before = page.next_before;
    }
}

async fn verify_run<S>(
    store: &S,
    summary: &RunSummary,
    expect_terminal: bool,
) -> Result<RunVerdict, StoreError>
where
    S: RunStore + ?Sized,
{
    let id = &summary.id;
    let run = store.fetch_run(&Scope::System, id).await?;
    let mut check = HistoryCheck::new();
    let mut events = EventQuery {
        after_seq: 0,
        limit: MAX_PAGE_LIMIT,
    };
    loop {
        let page = store.list_events(&Scope::System, id, &events).await?;
        check.feed(&page.events);
        if !page.has_more {
            break;
        }
        events.after_seq = page.next_after_seq;
    }
    let read = check.events;
    let mut problems = check.finish(&run);
    if expect_terminal && !run.status.is_terminal() {
        problems.push(format!("status is {}, not terminal", run.status));
    }
    Ok(RunVerdict {
        id: run.id,
        owner: summary.owner.clone(),
        status: run.status,
        checkpoint_seq: run.checkpoint_seq,
        events: read,
        problems,
    })
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

    #[tokio::test]
    async fn verifying_a_store_covers_every_tenant_and_counts_per_owner() {
        let store = std::sync::Arc::new(docket_core::memory::MemoryStore::new());
        let docket = Docket::builder(store.clone(), crate::nodes::registry())
            .testing(TestingMode::Manual)
            .build()
            .expect("valid");
        let graph = r#"{"schema_version": 1, "id": "one",
            "nodes": {"a": {"implementation": "std.echo"}},
            "edges": {"e0": {"from": "$start", "to": "a"}, "e1": {"from": "a", "to": "$finish"}}}"#;
        let acme = docket.tenant(docket_core::model::TenantId::new("acme").expect("id"));
        for owner in [&docket, &docket, &acme] {
            let graph_ref = owner.save_graph_json(graph).await.expect("published");
            owner
                .start_run(&graph_ref, Default::default(), StartOptions::default())
                .await
                .expect("started");
        }
        // Nothing drained: every run is running, so every run breaks `expect_terminal`.
        let report = verify_store(store.as_ref(), true).await.expect("verified");
        assert_eq!(report.runs.len(), 3, "the tenant's run is not skipped");
        assert_eq!(report.violations(), 3);
        assert_eq!(
            report.per_owner.get(&None),
            Some(&OwnerTally {
                runs: 2,
                violations: 2
            })
        );
        assert_eq!(
            report.per_owner.get(&Some("acme".to_owned())),
            Some(&OwnerTally {
                runs: 1,
                violations: 1
            })
        );
        let sound = verify_store(store.as_ref(), false).await.expect("verified");
        assert_eq!(sound.violations(), 0, "{:?}", sound.runs);
    }
}
