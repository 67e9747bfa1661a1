//! The facade on PostgreSQL (feature `postgres`): `postgres://…?schema=` URLs, workers on
//! separate connections sharing one schema, and group commit as a worker's default path (the
//! command's tests are in `docket-cli`). Each test
//! uses its own schema, dropped at the end. The server is `DOCKET_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`); without one the tests fail.
#![cfg(feature = "postgres")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use docket::core::model::{InterruptStatus, RunId, RunQuery, RunStatus, ValueMap};
use docket::core::node::{Node, NodeContext, NodeOutcome};
use docket::engine::{DrainBudget, Worker, WorkerConfig, WorkerStats};
use docket::examples::EXAMPLES;
use docket::history::check_history;
use docket::{AwaitOptions, Docket, StartOptions};

fn server_url() -> String {
    std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A fresh schema's URL; the schema is dropped when the guard is.
struct Schema {
    url: String,
}

impl Schema {
    fn fresh(tag: &str) -> Schema {
        let unique = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Schema {
            url: format!(
                "{}?schema=docket_t_{tag}_{}_{unique}",
                server_url(),
                std::process::id()
            ),
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let url = self.url.clone();
        // `Drop` cannot await: drop the schema on a helper thread with its own runtime.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?
                .block_on(docket_postgres::PostgresStore::drop_schema(&url))
                .map_err(|e| e.to_string())
        })
        .join();
        if !matches!(dropped, Ok(Ok(_))) {
            eprintln!("could not drop the test schema of {}", self.url);
        }
    }
}

fn config() -> WorkerConfig {
    WorkerConfig {
        concurrency: 2,
        poll_interval_ms: 50,
        orphan_ttl_ms: 10_000,
        max_attempt_elapsed_ms: 1_000,
        drain_budget: DrainBudget {
            max_moments: Some(100),
            max_elapsed_ms: 2_000,
        },
        ..WorkerConfig::default()
    }
}

async fn facade(url: &str) -> Docket {
    let backend = docket::connect_backend(url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL (DOCKET_TEST_POSTGRES_URL) at {url}: {e}"));
    Docket::builder(backend, docket::nodes::registry())
        .config(config())
        .build()
        .expect("facade")
}

async fn statuses(docket: &Docket) -> Vec<(RunId, RunStatus)> {
    let page = docket
        .list_runs(&RunQuery {
            limit: 100,
            ..RunQuery::default()
        })
        .await
        .expect("list runs");
    page.runs.into_iter().map(|s| (s.id, s.status)).collect()
}

/// Polls (with a deadline) until no run is running, approving every open approval.
async fn finish_all(docket: &Docket) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let runs = statuses(docket).await;
        if runs.iter().all(|(_, s)| s.is_terminal()) {
            return;
        }
        for (id, status) in &runs {
            if *status == RunStatus::Waiting {
                let info = docket.inspect_run(id).await.expect("inspect");
                let open = info
                    .run
                    .interrupts
                    .values()
                    .filter(|i| i.status == InterruptStatus::Open);
                for interrupt in open {
                    docket
                        .resolve_interrupt(id, &interrupt.id, json!(true))
                        .await
                        .expect("resolve an open interrupt");
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "runs stuck: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_on_separate_connections_drain_the_examples_on_one_schema() {
    let schema = Schema::fresh("facade");
    // `Docket::connect` migrates the schema named in the URL.
    let client = Docket::connect(&schema.url).await.expect("connect");
    let mut graphs = Vec::new();
    for example in EXAMPLES {
        graphs.push((
            example,
            client.save_graph_json(example.json).await.expect("save"),
        ));
    }
    // Two facades with their own pools: the stand-ins for two worker processes.
    let (a, b) = (facade(&schema.url).await, facade(&schema.url).await);
    let (stats_a, stats_b) = (Arc::new(WorkerStats::new()), Arc::new(WorkerStats::new()));
    let workers = [
        Worker::builder(a.engine()).stats(stats_a.clone()).start(),
        Worker::builder(b.engine()).stats(stats_b.clone()).start(),
    ];
    let mut ids = Vec::new();
    for n in 0..16 {
        let (example, graph_ref) = &graphs[n % graphs.len()];
        let run = client
            .start_run(graph_ref, example.input(n), StartOptions::default())
            .await
            .expect("start");
        ids.push((run.id, example.expected));
    }
    finish_all(&client).await;
    for worker in workers {
        worker.shutdown().await;
    }
    for (id, expected) in &ids {
        let run = client.fetch_run(id).await.expect("run");
        assert_eq!(run.status, *expected, "run {id}");
        let events = client.all_events(id).await.expect("events");
        assert_eq!(check_history(&run, &events), Vec::<String>::new(), "{id}");
    }
    let (a, b) = (stats_a.snapshot(), stats_b.snapshot());
    assert!(
        a.moments_committed > 0 && b.moments_committed > 0,
        "both workers share the load: {a:?} {b:?}"
    );
    assert_eq!(a.fence_losses + b.fence_losses, 0, "{a:?} {b:?}");
}

/// A node that announces it is running, then waits until the test lets it finish.
struct Gate {
    entered: Arc<tokio::sync::Semaphore>,
    release: Arc<tokio::sync::Semaphore>,
}

#[async_trait::async_trait]
impl Node for Gate {
    async fn call(&self, _: &ValueMap, _: &ValueMap, _: &NodeContext) -> NodeOutcome {
        self.entered.add_permits(1);
        match self.release.acquire().await {
            Ok(_) => NodeOutcome::update(json!({"passed": true})),
            Err(_) => NodeOutcome::Fail("the gate was closed".into()),
        }
    }
}

/// Scenario 45 of `docs/scenarios.md`: a vehicle holds no database connection while its nodes run.
/// With a pool of ONE connection, the worker's node is held open mid-superstep while the same store
/// serves reads and a write; the run then finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_running_node_holds_no_database_connection() {
    let schema = Schema::fresh("slow");
    let url = format!("{}&pool_size=1", schema.url);
    let (entered, release) = (
        Arc::new(tokio::sync::Semaphore::new(0)),
        Arc::new(tokio::sync::Semaphore::new(0)),
    );
    let nodes = docket::nodes::registry()
        .with(
            "test.gate",
            Gate {
                entered: entered.clone(),
                release: release.clone(),
            },
        )
        .expect("registered");
    let backend = docket::connect_backend(&url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL (DOCKET_TEST_POSTGRES_URL) at {url}: {e}"));
    let docket = Docket::builder(backend, nodes)
        .config(WorkerConfig {
            concurrency: 1,
            max_attempt_elapsed_ms: 30_000,
            drain_budget: DrainBudget {
                max_moments: Some(100),
                max_elapsed_ms: 40_000,
            },
            orphan_ttl_ms: 60_000,
            ..config()
        })
        .build()
        .expect("facade");
    let graph = docket
        .save_graph_json(
            &json!({
                "schema_version": 1, "id": "gated",
                "fields": {"passed": {"schema": {"type": "boolean"}}},
                "outputs": {"passed": {}},
                "nodes": {"gate": {"implementation": "test.gate"}},
                "edges": {
                    "begin": {"from": "$start", "to": "gate"},
                    "end": {"from": "gate", "to": "$finish"}
                }
            })
            .to_string(),
        )
        .await
        .expect("save");
    let run = docket
        .start_run(&graph, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    let worker = Worker::builder(docket.engine()).start();
    tokio::time::timeout(Duration::from_secs(30), entered.acquire())
        .await
        .expect("the worker reaches the node")
        .expect("semaphore open")
        .forget();

    // Mid-superstep: if the vehicle held the only connection these would wait for the node.
    let within = Duration::from_secs(5);
    let info = tokio::time::timeout(within, docket.inspect_run(&run.id))
        .await
        .expect("a read is served while the node runs")
        .expect("inspect");
    assert!(info.is_claimed(), "the run is claimed by the worker");
    let other = tokio::time::timeout(
        within,
        docket.start_run(&graph, ValueMap::new(), StartOptions::default()),
    )
    .await
    .expect("a write is served while the node runs")
    .expect("start");

    release.add_permits(2);
    let done = |id: RunId| {
        let docket = &docket;
        async move {
            docket
                .await_run(
                    &id,
                    AwaitOptions {
                        timeout: Duration::from_secs(30),
                        poll_interval: Duration::from_millis(20),
                    },
                )
                .await
                .expect("the run finishes")
        }
    };
    for id in [run.id.clone(), other.id.clone()] {
        let finished = done(id).await;
        assert_eq!(finished.status, RunStatus::Done);
        assert_eq!(
            finished.output.and_then(|o| o.get("passed").cloned()),
            Some(json!(true))
        );
    }
    worker.shutdown().await;
}

/// Records how many distinct runs every `commit_claimed_batch` call a worker makes on its
/// store names (a vehicle's moment and its chained completion go as one call of one run
/// whatever the batch limit; only group commit puts several runs in one call).
struct BatchSizes {
    inner: Arc<dyn docket::core::store::Backend>,
    runs_per_call: std::sync::Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl docket::core::store::StoreLayer for BatchSizes {
    fn inner(&self) -> &dyn docket::core::store::Backend {
        self.inner.as_ref()
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<docket::core::store::BatchedCommit>,
    ) -> Vec<Result<docket::core::model::Run, docket::core::store::StoreError>> {
        let runs: std::collections::BTreeSet<_> =
            commits.iter().map(|c| c.proposal.run.id.clone()).collect();
        self.runs_per_call
            .lock()
            .expect("batch sizes")
            .push(runs.len());
        self.inner.commit_claimed_batch(commits).await
    }
}

impl std::fmt::Debug for BatchSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchSizes").finish_non_exhaustive()
    }
}

/// Group commit is PostgreSQL's default path: a worker that leaves `max_commit_batch` to the
/// store sends the commits its many vehicles queue up as shared batches (one statement
/// each), and every run still finishes with each checkpoint committed exactly once and a
/// sound history.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_left_to_the_stores_preference_batches_its_commits_and_every_one_lands_once() {
    let schema = Schema::fresh("batches");
    let client = Docket::connect(&schema.url).await.expect("connect");
    let backend = docket::connect_backend(&schema.url)
        .await
        .expect("PostgreSQL backend");
    let recording = Arc::new(docket::core::store::Layered(BatchSizes {
        inner: backend,
        runs_per_call: std::sync::Mutex::default(),
    }));
    let docket = Docket::builder(recording.clone(), docket::nodes::registry())
        .config(WorkerConfig {
            concurrency: 32,
            max_commit_batch: None,
            ..config()
        })
        .build()
        .expect("facade");
    let graph = client
        .save_graph_json(&support::graphs::steps(3).to_string())
        .await
        .expect("save");
    let mut ids = Vec::new();
    for _ in 0..96 {
        let run = client
            .start_run(&graph, ValueMap::new(), StartOptions::default())
            .await
            .expect("start");
        ids.push(run.id);
    }
    let worker = docket.start_worker();
    let wait = AwaitOptions {
        timeout: Duration::from_secs(60),
        poll_interval: Duration::from_millis(10),
    };
    for id in &ids {
        let run = client.await_run(id, wait).await.expect("finished");
        assert_eq!(run.status, RunStatus::Done, "{id}");
        let events = client.all_events(id).await.expect("events");
        assert_eq!(check_history(&run, &events), Vec::<String>::new(), "{id}");
    }
    worker.shutdown().await;
    let runs_per_call = recording
        .0
        .runs_per_call
        .lock()
        .expect("batch sizes")
        .clone();
    assert!(
        runs_per_call.iter().any(|&n| n > 1),
        "32 vehicles committing at once shared no batch: {runs_per_call:?}"
    );
}
