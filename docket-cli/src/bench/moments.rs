//! The bench's graphs and the proposals it hands the store directly (claims and fenced
//! commits are measured on the store itself, without the engine in between).

use serde_json::json;

use docket_core::graph::RuntimeGraph;
use docket_core::model::{
    CheckpointType, ClaimToken, Event, EventType, Run, RunId, Timestamp, ValueMap,
};
use docket_core::runtime::sequencing::{sequence, EventEntry};
use docket_core::runtime::{
    build_initial_run, propose_init, Disposition, Initialization, RandomIds,
};
use docket_core::store::{ClaimedCommit, ClaimedSchedule, InitProposal};

use super::BenchError;

/// The graph of the commit and claim phases: one `std.set` node (its runs are only ever
/// claimed and committed by the bench, never executed).
pub(crate) const STEP_GRAPH: &str = r#"{
  "schema_version": 1,
  "id": "bench_step",
  "fields": { "done": { "schema": { "type": "boolean" } } },
  "outputs": { "done": {} },
  "nodes": { "work": { "implementation": "std.set", "config": { "values": { "done": true } } } },
  "edges": {
    "begin": { "from": "$start", "to": "work" },
    "end": { "from": "work", "to": "$finish" }
  }
}"#;

/// The graph of the end-to-end phase: three `std.increment` nodes in a row (no sleeps), so a
/// finished run has output `n = 3`.
pub(crate) const CHAIN_GRAPH: &str = r#"{
  "schema_version": 1,
  "id": "bench_chain",
  "fields": { "n": { "schema": { "type": "integer" }, "default": 0 } },
  "outputs": { "n": {} },
  "nodes": {
    "a": { "implementation": "std.increment", "config": { "field": "n" } },
    "b": { "implementation": "std.increment", "config": { "field": "n" } },
    "c": { "implementation": "std.increment", "config": { "field": "n" } }
  },
  "edges": {
    "e0": { "from": "$start", "to": "a" },
    "e1": { "from": "a", "to": "b" },
    "e2": { "from": "b", "to": "c" },
    "e3": { "from": "c", "to": "$finish" }
  }
}"#;

/// The `n` every end-to-end run must finish with.
pub(crate) const CHAIN_OUTPUT: i64 = 3;

/// The 1-node graph of the end-to-end phase: one `std.increment`, so a finished run has
/// output `n = 1` — the least a run can be, the figure to hold beside a plain job queue.
pub(crate) const SINGLE_GRAPH: &str = r#"{
  "schema_version": 1,
  "id": "bench_single",
  "fields": { "n": { "schema": { "type": "integer" }, "default": 0 } },
  "outputs": { "n": {} },
  "nodes": {
    "a": { "implementation": "std.increment", "config": { "field": "n" } }
  },
  "edges": {
    "e0": { "from": "$start", "to": "a" },
    "e1": { "from": "a", "to": "$finish" }
  }
}"#;

/// A graph the end-to-end phases run, and the output `n` each of its runs must finish with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// The graph document.
    pub graph: &'static str,
    /// The `n` a finished run holds.
    pub output: i64,
    /// Its nodes, for labels.
    pub nodes: usize,
}

/// The 3-node chain.
pub(crate) const CHAIN: Shape = Shape {
    graph: CHAIN_GRAPH,
    output: CHAIN_OUTPUT,
    nodes: 3,
};

/// The 1-node graph.
pub(crate) const SINGLE: Shape = Shape {
    graph: SINGLE_GRAPH,
    output: 1,
    nodes: 1,
};

/// The `initialize` proposal of a fresh run `id` of `rtg`, due at `wake_at`.
///
/// # Errors
/// When the runtime refuses to initialize (a bug in the bench graph).
pub(crate) fn init(
    rtg: &RuntimeGraph,
    id: RunId,
    wake_at: Timestamp,
    now: Timestamp,
) -> Result<(InitProposal, Vec<Event>), BenchError> {
    let run = build_initial_run(rtg, ValueMap::new(), Some(id), ValueMap::new(), &RandomIds)
        .map_err(|e| BenchError::Setup(format!("building a bench run: {e}")))?;
    match propose_init(rtg, &run, now) {
        Ok(Initialization::Moment(moment)) => Ok((
            InitProposal {
                run: moment.run,
                checkpoint_type: moment.checkpoint_type,
                wake_at,
                now,
            },
            moment.events,
        )),
        Ok(Initialization::Terminal(_)) => Err(BenchError::Setup(
            "a fresh bench run proposed a terminal initialization".into(),
        )),
        Err(e) => Err(BenchError::Setup(format!("initializing a bench run: {e}"))),
    }
}

/// The next fenced commit after `prev` under `token`: one channel update plus the checkpoint
/// event, `checkpoint_seq + 1`, the claim retained — what a worker commits between two
/// supersteps of a long run.
#[must_use]
pub(crate) fn next_commit(
    prev: &Run,
    token: &ClaimToken,
    commit_no: u64,
    now: Timestamp,
) -> (ClaimedCommit, Vec<Event>) {
    let mut next = prev.clone();
    next.updated_at = Some(now);
    next.metadata
        .insert("bench_commits".into(), json!(commit_no));
    let fact = EventEntry::new(EventType::ChannelUpdated, prev.step)
        .channel("state:done")
        .with("writers", json!(["work"]));
    let moment = sequence(
        next,
        CheckpointType::StepCommitted,
        vec![fact],
        Disposition::Continue,
        now,
        Vec::new(),
    );
    (
        ClaimedCommit {
            run: moment.run,
            expected_seq: prev.checkpoint_seq,
            claim_token: token.clone(),
            checkpoint_type: moment.checkpoint_type,
            schedule: ClaimedSchedule::RetainClaim,
            now,
        },
        moment.events,
    )
}

/// A bench run id: `bench-<phase>-<n>`.
///
/// # Errors
/// Never for the bench's own phases (ids are short and printable).
pub(crate) fn run_id(phase: &str, n: usize) -> Result<RunId, BenchError> {
    RunId::new(format!("bench-{phase}-{n:07}"))
        .map_err(|e| BenchError::Setup(format!("run id: {e}")))
}
