//! The in-process chaos smoke: three engine workers over each store — memory, SQLite, and the
//! local PostgreSQL and Redis servers (a fresh schema and namespace each; a missing server
//! fails the test) — each store wrapped in the fault layer with a fixed seed, a few hundred runs, a heal phase,
//! and the oracle's verdict. Every fault kind must have been injected, and nothing lost,
//! duplicated, accepted stale or stuck.
//!
//! `CHAOS_SEED=<n>` replays another seed (the default is fixed so CI is repeatable).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use docket_chaos::{run, Outcome, Stack, Workload};
use docket_core::memory::MemoryStore;
use docket_core::store::Backend;

/// The seed: fixed, unless `CHAOS_SEED` names another.
fn seed() -> u64 {
    std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Writes the report as JSON under `target/chaos/` and returns the path.
fn write_report(backend: &str, outcome: &Outcome) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir holds tmp/")
        .join("chaos");
    std::fs::create_dir_all(&target).expect("target/chaos");
    let path = target.join(format!(
        "in_process-{backend}-seed{}.json",
        outcome.report.seed
    ));
    std::fs::write(&path, outcome.report.to_json()).expect("the report is written");
    path
}

/// Runs the smoke workload on `store` and asserts the verdict.
async fn smoke(backend: &str, store: Arc<dyn Backend>, test: &str) -> Outcome {
    let workload = Workload::smoke(backend, seed());
    let hint = workload.reproduce_hint(test);
    let outcome = run(store, &workload, &Stack::default())
        .await
        .unwrap_or_else(|e| panic!("the harness failed: {e}\nreproduce with {hint}"));
    let report = &outcome.report;
    let path = write_report(backend, &outcome);
    println!(
        "{backend}: {} (report: {})",
        report.headline(),
        path.display()
    );
    println!(
        "{backend}: {:.1} s, commits {:?}, starts and signals {:?}, effects {:?}, worker stats {:?}",
        outcome.elapsed.as_secs_f64(),
        report.commits,
        report.starts_and_signals,
        report.effects,
        outcome.stats
    );
    assert!(
        report.is_safe(),
        "{backend}: {}\n{}\nreproduce with {hint}",
        report.headline(),
        report.to_json()
    );
    assert!(
        report.faults.every_kind_injected(),
        "{backend}: not every fault kind was injected: {:?}\nreproduce with {hint}",
        report.faults
    );
    assert!(
        report.commits.ambiguous_landed > 0 && report.commits.ambiguous_not_landed > 0,
        "{backend}: ambiguous commits must both land and not land: {:?}\nreproduce with {hint}",
        report.commits
    );
    assert!(
        report.faults.stalls_taken_over > 0,
        "{backend}: no stalled commit outlived its claim: {:?}\nreproduce with {hint}",
        report.faults
    );
    assert_eq!(
        report.terminal + report.waiting_on_interrupt,
        report.runs,
        "{backend}: reproduce with {hint}"
    );
    assert!(
        report.acks >= report.runs,
        "the ack log is implausibly short"
    );
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_memory_store_under_seeded_faults_loses_nothing() {
    let store: Arc<dyn Backend> = Arc::new(MemoryStore::new());
    smoke(
        "memory",
        store,
        "the_memory_store_under_seeded_faults_loses_nothing",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_under_seeded_faults_loses_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("chaos.db").display());
    let store = docket::connect_backend(&url).await.expect("sqlite store");
    smoke("sqlite", store, "sqlite_under_seeded_faults_loses_nothing").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_under_seeded_faults_loses_nothing() {
    let (store, _schema) = docket_postgres::testing::PostgresHarness::new()
        .open_store()
        .await
        .expect("a PostgreSQL store in a fresh schema");
    smoke(
        "postgres",
        Arc::new(store),
        "postgres_under_seeded_faults_loses_nothing",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_under_seeded_faults_loses_nothing() {
    let (store, _namespace) = docket_redis::testing::RedisHarness::from_env()
        .open_store()
        .await
        .expect("a Redis store in a fresh namespace");
    smoke(
        "redis",
        Arc::new(store),
        "redis_under_seeded_faults_loses_nothing",
    )
    .await;
}
