//! The facade on Redis (feature `redis`): `redis://…?namespace=` URLs, a manual drain and a
//! worker pool, each test in its own namespace on the server named by `DOCKET_TEST_REDIS_URL`
//! (default `redis://127.0.0.1:6379`). A missing server fails these tests.
#![cfg(feature = "redis")]

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use docket::core::model::{RunQuery, RunStatus, ValueMap};
use docket::engine::WorkerConfig;
use docket::history::check_history;
use docket::{AwaitOptions, Docket, DocketError, StartOptions, TestingMode};

use support::graphs::{approval, steps};

const URL_VAR: &str = "DOCKET_TEST_REDIS_URL";

/// A fresh namespace on the test server; dropping it deletes its keys.
struct Namespace {
    url: String,
}

impl Namespace {
    fn fresh() -> Namespace {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "docket-facade-test-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Namespace {
            url: with_namespace(&server_url(), &name),
        }
    }

    async fn connect(&self, mode: TestingMode, config: WorkerConfig) -> Docket {
        let backend = docket::connect_backend(&self.url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "the Redis test server ({}) must be reachable; set {URL_VAR}: {e}",
                    self.url
                )
            });
        Docket::builder(backend, docket::nodes::registry())
            .config(config)
            .testing(mode)
            .build()
            .expect("facade")
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Drop cannot await and may run inside a runtime: purge on a thread of its own.
        let url = self.url.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let store = docket::connect::connect_redis(&url).await.ok()?;
                store.purge_namespace().await.ok()
            })
        })
        .join();
    }
}

fn server_url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

fn with_namespace(url: &str, namespace: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}namespace={namespace}")
}

#[tokio::test]
async fn a_manual_drain_on_redis_finishes_every_run_with_a_sound_history() {
    let ns = Namespace::fresh();
    let docket = ns
        .connect(TestingMode::Manual, WorkerConfig::default())
        .await;
    let graph_ref = docket
        .save_graph_json(&steps(3).to_string())
        .await
        .expect("save");
    let mut ids = Vec::new();
    for _ in 0..4 {
        let run = docket
            .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
            .await
            .expect("start");
        ids.push(run.id);
    }
    let summary = docket.drain_runs(10).await.expect("drain");
    assert_eq!(summary.drained, 4);
    for id in &ids {
        let run = docket.fetch_run(id).await.expect("fetch");
        assert_eq!(run.status, RunStatus::Done);
        assert_eq!(
            run.output.as_ref().and_then(|o| o.get("f3")),
            Some(&json!(3))
        );
        let events = docket.all_events(id).await.expect("events");
        assert_eq!(check_history(&run, &events), Vec::<String>::new());
    }
    let again = docket.drain_runs(10).await.expect("nothing due");
    assert_eq!(again.drained, 0);
}

#[tokio::test]
async fn an_approval_waits_on_redis_until_it_is_resolved() {
    let ns = Namespace::fresh();
    let docket = ns
        .connect(TestingMode::Manual, WorkerConfig::default())
        .await;
    let graph_ref = docket
        .save_graph_json(&approval().to_string())
        .await
        .expect("save");
    let run = docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    docket.drain_runs(10).await.expect("drain");
    assert_eq!(
        docket.fetch_run(&run.id).await.expect("fetch").status,
        RunStatus::Waiting
    );
    docket
        .resolve_interrupt(&run.id, "approve", json!(true))
        .await
        .expect("resolve");
    docket.drain_runs(10).await.expect("drain");
    let done = docket.fetch_run(&run.id).await.expect("fetch");
    assert_eq!(done.status, RunStatus::Done);
    assert_eq!(
        done.output.as_ref().and_then(|o| o.get("approved")),
        Some(&json!(true))
    );
}

#[tokio::test]
async fn a_worker_pool_on_redis_finishes_every_run() {
    let ns = Namespace::fresh();
    let config = WorkerConfig {
        concurrency: 4,
        poll_interval_ms: 50,
        ..WorkerConfig::default()
    };
    let docket = ns.connect(TestingMode::Off, config).await;
    let graph_ref = docket
        .save_graph_json(&steps(2).to_string())
        .await
        .expect("save");
    let worker = docket.start_worker();
    let mut ids = Vec::new();
    for _ in 0..8 {
        let run = docket
            .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
            .await
            .expect("start");
        ids.push(run.id);
    }
    let wait = AwaitOptions {
        timeout: Duration::from_secs(20),
        poll_interval: Duration::from_millis(20),
    };
    for id in &ids {
        let run = docket.await_run(id, wait).await.expect("finishes");
        assert_eq!(run.status, RunStatus::Done);
    }
    worker.shutdown().await;
}

#[tokio::test]
async fn namespaces_in_the_url_keep_stores_apart() {
    let (a, b) = (Namespace::fresh(), Namespace::fresh());
    let docket_a = a
        .connect(TestingMode::Manual, WorkerConfig::default())
        .await;
    let docket_b = b
        .connect(TestingMode::Manual, WorkerConfig::default())
        .await;
    let graph_ref = docket_a
        .save_graph_json(&steps(1).to_string())
        .await
        .expect("save");
    let run = docket_a
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    assert!(matches!(
        docket_b.fetch_run(&run.id).await,
        Err(DocketError::NotFound)
    ));
    let page = docket_b
        .list_runs(&RunQuery {
            limit: 10,
            ..RunQuery::default()
        })
        .await
        .expect("list");
    assert!(page.runs.is_empty());
    assert_eq!(docket_a.fetch_run(&run.id).await.expect("fetch").id, run.id);
}

#[tokio::test]
async fn an_invalid_namespace_in_a_redis_url_is_refused() {
    let url = with_namespace(&server_url(), "no{braces}");
    let err = docket::connect_backend(&url)
        .await
        .expect_err("invalid namespace");
    assert!(err.to_string().contains("no{braces}"), "{err}");
}
