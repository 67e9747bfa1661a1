//! The in-process workload: a few engine workers over one store wrapped in a [`FaultLayer`],
//! a few hundred runs of graphs with retries, fan-out, a barrier, a cycle and interrupts,
//! then a heal phase, then the oracle.
//!
//! Each worker is its own [`Docket`] engine (its own caches, stats and claims), as separate
//! processes would be; they share only the store and the journal. The harness plays the
//! human: it resolves interrupts as they open and cancels some runs instead.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};

use docket::engine::{DrainBudget, StatsSnapshot, WorkerConfig};
use docket::{Docket, DocketError, StartOptions};
use docket_core::model::{GraphRef, RunId, RunQuery, RunStatus, Scope, ValueMap, MAX_PAGE_LIMIT};
use docket_core::node::{Node, NodeContext, NodeOutcome, NodeRegistry};
use docket_core::store::{Backend, Layered, StoreError};

use crate::fault::{FaultLayer, FaultPlan};
use crate::journal::{Journal, JournalSnapshot, Reply};
use crate::observer::AckObserver;
use crate::oracle::{check, OracleInput};
use crate::report::Report;

/// A retried node, then a second step.
const RETRY_GRAPH: &str = r#"{
    "schema_version": 1, "id": "chaos_retry",
    "fields": {"result": {"schema": {"type": "string"}}, "stored": {"schema": {"type": "boolean"}}},
    "outputs": {"result": {}, "stored": {}},
    "nodes": {
        "call": {"implementation": "chaos.effect",
                 "config": {"ms": 5, "fail_times": 1, "values": {"result": "ok"}},
                 "policies": {"retry": {"max_attempts": 3, "backoff_ms": 20}}},
        "store": {"implementation": "chaos.effect", "config": {"ms": 5, "values": {"stored": true}}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "call"},
        "then": {"from": "call", "to": "store"},
        "end": {"from": "store", "to": "$finish"}
    }
}"#;

/// Three branches in one superstep, joined by a barrier.
const FANOUT_GRAPH: &str = r#"{
    "schema_version": 1, "id": "chaos_fanout",
    "fields": {"a": {"schema": {"type": "integer"}}, "b": {"schema": {"type": "integer"}},
               "c": {"schema": {"type": "integer"}}, "merged": {"schema": {"type": "boolean"}}},
    "outputs": {"a": {}, "b": {}, "c": {}, "merged": {}},
    "nodes": {
        "split": {"implementation": "chaos.effect", "config": {"ms": 3}},
        "branch_a": {"implementation": "chaos.effect", "config": {"ms": 12, "values": {"a": 1}}},
        "branch_b": {"implementation": "chaos.effect", "config": {"ms": 8, "fail_times": 1, "values": {"b": 2}},
                     "policies": {"retry": {"max_attempts": 3, "backoff_ms": 10}}},
        "branch_c": {"implementation": "chaos.effect", "config": {"ms": 4, "values": {"c": 3}}},
        "merge": {"implementation": "chaos.effect", "config": {"values": {"merged": true}}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "split"},
        "to_a": {"from": "split", "to": "branch_a"},
        "to_b": {"from": "split", "to": "branch_b"},
        "to_c": {"from": "split", "to": "branch_c"},
        "join": {"from": ["branch_a", "branch_b", "branch_c"], "to": "merge"},
        "end": {"from": "merge", "to": "$finish"}
    }
}"#;

/// A guarded cycle of three rounds.
const CYCLE_GRAPH: &str = r#"{
    "schema_version": 1, "id": "chaos_cycle",
    "fields": {"n": {"schema": {"type": "integer"}, "default": 0}},
    "outputs": {"n": {}},
    "policies": {"max_supersteps": 20},
    "nodes": {
        "tick": {"implementation": "chaos.effect", "config": {"ms": 3}},
        "count": {"implementation": "std.increment", "config": {"field": "n"}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "tick"},
        "counted": {"from": "tick", "to": "count"},
        "again": {"from": "count", "to": "tick", "guard": {"op": "not", "of": {"op": "equals", "ref": "n", "value": 3}}},
        "end": {"from": "count", "to": "$finish", "guard": {"op": "equals", "ref": "n", "value": 3}}
    }
}"#;

/// A step, an approval interrupt the harness resolves (or a cancellation), a last step.
const APPROVAL_GRAPH: &str = r#"{
    "schema_version": 1, "id": "chaos_approval",
    "fields": {"approved": {"schema": {"type": "boolean"}}, "status": {"schema": {"type": "string"}}},
    "outputs": {"approved": {}, "status": {}},
    "nodes": {
        "prepare": {"implementation": "chaos.effect", "config": {"ms": 4, "values": {"status": "submitted"}}},
        "approve": {"implementation": "std.approval", "config": {"field": "approved"}},
        "record": {"implementation": "chaos.effect", "config": {"values": {"status": "recorded"}}}
    },
    "edges": {
        "begin": {"from": "$start", "to": "prepare"},
        "ask": {"from": "prepare", "to": "approve"},
        "decided": {"from": "approve", "to": "record"},
        "end": {"from": "record", "to": "$finish"}
    }
}"#;

/// The workload's graphs, started round-robin.
pub const GRAPHS: [&str; 4] = [RETRY_GRAPH, FANOUT_GRAPH, CYCLE_GRAPH, APPROVAL_GRAPH];

/// Node ids whose attempts record side effects (every `chaos.effect` node of [`GRAPHS`]).
pub const EFFECT_NODES: [&str; 10] = [
    "call", "store", "split", "branch_a", "branch_b", "branch_c", "merge", "tick", "prepare",
    "record",
];

/// `chaos.effect`: records one side effect under the attempt's idempotency key, works for
/// `config.ms`, fails its first `config.fail_times` attempts (retryably), then writes
/// `config.values`.
#[derive(Debug)]
pub struct EffectNode {
    journal: Arc<Journal>,
}

impl EffectNode {
    /// A node recording into `journal`.
    #[must_use]
    pub fn new(journal: Arc<Journal>) -> Self {
        EffectNode { journal }
    }
}

#[async_trait]
impl Node for EffectNode {
    fn config_schema(&self) -> Value {
        json!({"type": "object", "fields": {
            "ms": {"type": "integer", "min": 0, "default": 0},
            "fail_times": {"type": "integer", "min": 0, "default": 0},
            "values": {"type": "map", "default": {}}
        }})
    }

    async fn call(&self, _: &ValueMap, config: &ValueMap, ctx: &NodeContext) -> NodeOutcome {
        // The effect happens first, as a call to an outside system would: whatever becomes
        // of this attempt's result, the outside world saw it.
        self.journal.record_effect(&ctx.idempotency_key);
        let ms = config.get("ms").and_then(Value::as_u64).unwrap_or(0);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let fail_times = config
            .get("fail_times")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if u64::from(ctx.attempt) <= fail_times {
            return NodeOutcome::Error(format!("chaos.effect: attempt {} fails", ctx.attempt));
        }
        NodeOutcome::Update(
            config
                .get("values")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        )
    }
}

/// Turns one store into another (a mutant wrapped around or under the fault layer).
pub type Wrap = Arc<dyn Fn(Arc<dyn Backend>) -> Arc<dyn Backend> + Send + Sync>;

/// Where deliberately broken layers go.
#[derive(Clone, Default)]
pub struct Stack {
    /// Between the fault layer and the store: a broken store.
    pub below: Option<Wrap>,
    /// Between the engine and the fault layer: a broken engine-side wrapper.
    pub above: Option<Wrap>,
}

impl fmt::Debug for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stack")
            .field("below", &self.below.is_some())
            .field("above", &self.above.is_some())
            .finish()
    }
}

/// The size and shape of one chaos run.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The backend's name, for the report.
    pub backend: String,
    /// Runs to start.
    pub runs: usize,
    /// Workers (engines) to start.
    pub workers: usize,
    /// The faults.
    pub plan: FaultPlan,
    /// How long the faulted phase may last before the harness heals anyway.
    pub faulted_for: Duration,
    /// How long the heal phase may last before the remaining runs count as stuck.
    pub heal_for: Duration,
}

impl Workload {
    /// A few hundred runs on three workers with [`FaultPlan::smoke`].
    #[must_use]
    pub fn smoke(backend: &str, seed: u64) -> Self {
        Workload {
            backend: backend.to_owned(),
            runs: 240,
            workers: 3,
            plan: FaultPlan::smoke(seed),
            faulted_for: Duration::from_secs(30),
            heal_for: Duration::from_secs(15),
        }
    }

    /// The command that reproduces this run (printed on failure).
    #[must_use]
    pub fn reproduce_hint(&self, test: &str) -> String {
        format!(
            "seed {seed}: CHAOS_SEED={seed} cargo test -p docket-chaos --test in_process {test} -- --nocapture",
            seed = self.plan.seed
        )
    }
}

/// The worker configuration of the workload: short polls and a short orphan TTL, so stalled
/// claims are taken over within a second and no phase waits long.
#[must_use]
pub fn worker_config() -> WorkerConfig {
    WorkerConfig {
        concurrency: 4,
        poll_interval_ms: 20,
        orphan_ttl_ms: 500,
        // Faults make claims without progress common; poisoning would only add operator work
        // to the heal phase (which still retries any poisoned run).
        max_claim_attempts: 50,
        max_claim_abandons: 50,
        drain_timeout_ms: 10_000,
        max_attempt_elapsed_ms: 250,
        drain_budget: DrainBudget {
            max_moments: Some(20),
            max_elapsed_ms: 300,
        },
        abandon_backoff_ms: 20,
        abandon_backoff_cap_ms: 500,
        // Group commit on, so its queue and batch tasks meet the faults too (the fault layer
        // below it still sees every member as its own commit).
        max_commit_batch: Some(8),
        ..WorkerConfig::default()
    }
}

/// What a chaos run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The oracle's verdict.
    pub report: Report,
    /// Everything journalled.
    pub journal: JournalSnapshot,
    /// The workers' counters, summed.
    pub stats: StatsSnapshot,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

/// Why a chaos run could not produce a verdict (a harness failure, never a passing run).
#[derive(Debug)]
pub enum ChaosError {
    /// The facade refused set-up (graphs, configuration, starting runs).
    Docket(DocketError),
    /// The oracle could not read the store.
    Store(StoreError),
}

impl std::error::Error for ChaosError {}

impl fmt::Display for ChaosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChaosError::Docket(e) => write!(f, "chaos set-up failed: {e}"),
            ChaosError::Store(e) => write!(f, "the oracle could not read the store: {e}"),
        }
    }
}

impl From<DocketError> for ChaosError {
    fn from(e: DocketError) -> Self {
        ChaosError::Docket(e)
    }
}

impl From<StoreError> for ChaosError {
    fn from(e: StoreError) -> Self {
        ChaosError::Store(e)
    }
}

/// Runs the workload over `store` and returns the oracle's verdict.
///
/// # Errors
/// [`ChaosError`] when the harness itself fails (set-up, or an unreadable store at the end).
///
/// # Panics
/// Outside a multi-threaded tokio runtime.
pub async fn run(
    store: Arc<dyn Backend>,
    workload: &Workload,
    stack: &Stack,
) -> Result<Outcome, ChaosError> {
    let started = Instant::now();
    let journal = Arc::new(Journal::new());
    let base = stack
        .below
        .as_ref()
        .map_or_else(|| Arc::clone(&store), |wrap| wrap(Arc::clone(&store)));
    let fault = Arc::new(Layered(FaultLayer::new(
        base,
        workload.plan,
        Arc::clone(&journal),
    )));
    let faulted: Arc<dyn Backend> = fault.clone();
    let top = stack
        .above
        .as_ref()
        .map_or_else(|| Arc::clone(&faulted), |wrap| wrap(Arc::clone(&faulted)));

    let nodes = docket::nodes::registry()
        .with("chaos.effect", EffectNode::new(Arc::clone(&journal)))
        .map_err(DocketError::Runtime)?;
    let handle = |nodes: NodeRegistry| {
        Docket::builder(Arc::clone(&top), nodes)
            .config(worker_config())
            .observer(Arc::new(AckObserver::new(Arc::clone(&journal))))
            .build()
    };
    let client = handle(nodes.clone())?;
    let mut graphs: Vec<GraphRef> = Vec::new();
    for json in GRAPHS {
        graphs.push(client.publish_graph_json(json).await?.graph_ref);
    }
    let engines: Vec<Docket> = (0..workload.workers)
        .map(|_| handle(nodes.clone()))
        .collect::<Result<_, _>>()?;
    let workers: Vec<_> = engines.iter().map(Docket::start_worker).collect();

    let mut ids = Vec::with_capacity(workload.runs);
    for n in 0..workload.runs {
        let id = RunId::new(format!("chaos-{}-{n:04}", workload.plan.seed))
            .map_err(|e| DocketError::InvalidOptions(e.to_string()))?;
        let options = StartOptions {
            run_id: Some(id.clone()),
            ..StartOptions::default()
        };
        start(&client, &graphs[n % graphs.len()], options).await?;
        ids.push(id);
    }

    // Faulted phase: play the human until every run settles or time is up.
    settle(&client, store.as_ref(), workload.faulted_for).await;
    fault.heal();
    // Heal phase: an operator retries poisoned runs; everything else must finish by itself.
    let poisoned_retried = retry_poisoned(&client, store.as_ref(), &ids).await;
    settle(&client, store.as_ref(), workload.heal_for).await;

    let mut stats = StatsSnapshot::default();
    for worker in workers {
        stats = stats + worker.stats().snapshot();
        let _report = worker.shutdown().await;
    }
    // Observers run on their own tasks: give the last ones a bounded moment to land.
    let journalled = journal.snapshot();
    let expected_acks = journalled
        .attempts
        .iter()
        .filter(|a| a.reply == Reply::Ok)
        .count();
    let deadline = Instant::now() + Duration::from_secs(2);
    while journal.ack_count() < expected_acks && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let snapshot = journal.snapshot();
    let input = OracleInput {
        backend: workload.backend.clone(),
        seed: workload.plan.seed,
        runs: ids,
        faults: fault.counts(),
        poisoned_retried,
        effect_nodes: EFFECT_NODES
            .iter()
            .map(|n| (*n).to_owned())
            .collect::<HashSet<_>>(),
    };
    let report = check(store.as_ref(), &snapshot, &input).await?;
    Ok(Outcome {
        report,
        journal: snapshot,
        stats,
        elapsed: started.elapsed(),
    })
}

/// Starts one run, as a client facing a flaky store would: an error is retried, and a
/// `Conflict` on a retry means an earlier, ambiguous try landed.
pub(crate) async fn start(
    client: &Docket,
    graph: &GraphRef,
    options: StartOptions,
) -> Result<(), DocketError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match client
            .start_run(graph, ValueMap::new(), options.clone())
            .await
        {
            Ok(_) => return Ok(()),
            Err(DocketError::Store(StoreError::Conflict)) if tries > 1 => return Ok(()),
            Err(DocketError::Store(_)) if tries < MAX_START_TRIES => {}
            Err(error) => return Err(error),
        }
    }
}

/// Tries of one start before the harness gives up (faults are drawn afresh on each).
const MAX_START_TRIES: u32 = 20;

/// Resolves open interrupts (every fifth approval run is cancelled instead) until no run is
/// running or waiting, or `budget` passes. Polls; never sleeps a fixed time to "let things
/// happen".
pub(crate) async fn settle(client: &Docket, store: &dyn Backend, budget: Duration) {
    let deadline = Instant::now() + budget;
    loop {
        if Instant::now() >= deadline {
            return;
        }
        let Ok(open) = unfinished(store).await else {
            // A read failed (reads are not faulted, but a real store can hiccup): try again.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        if open.is_empty() {
            return;
        }
        for (id, status) in open {
            if status != RunStatus::Waiting {
                continue;
            }
            let Ok(run) = client.fetch_run(&id).await else {
                continue;
            };
            let cancel = id
                .as_str()
                .rsplit('-')
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| (n / GRAPHS.len()) % 5 == 0);
            // Failures (a lost fence under concurrent commits) are retried on the next pass.
            if cancel {
                let _ = client.cancel_run(&id).await;
            } else {
                for interrupt in run.open_interrupt_ids() {
                    let _ = client.resolve_interrupt(&id, &interrupt, json!(true)).await;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs still running or waiting, with their status.
pub(crate) async fn unfinished(store: &dyn Backend) -> Result<Vec<(RunId, RunStatus)>, StoreError> {
    let mut out = Vec::new();
    let mut query = RunQuery {
        limit: MAX_PAGE_LIMIT,
        statuses: Some(vec![RunStatus::Running, RunStatus::Waiting]),
        ..RunQuery::default()
    };
    loop {
        let page = store.list_runs(&Scope::System, &query).await?;
        out.extend(page.runs.iter().map(|r| (r.id.clone(), r.status)));
        if !page.has_more {
            return Ok(out);
        }
        query.before = page.next_before;
    }
}

/// Retries every poisoned run (as an operator would after an outage); returns how many.
pub(crate) async fn retry_poisoned(client: &Docket, store: &dyn Backend, ids: &[RunId]) -> u64 {
    let mut retried = 0;
    for id in ids {
        let poisoned = store
            .inspect_run(&Scope::System, id)
            .await
            .is_ok_and(|info| info.is_poisoned());
        if poisoned && client.retry_poisoned_run(id).await.is_ok() {
            retried += 1;
        }
    }
    retried
}
