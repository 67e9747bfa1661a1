//! The bench machinery on tiny windows: every figure is produced beside a floor, the run
//! verifies what it wrote, a broken store fails the verification, and an existing store is
//! refused. Behaviour only — no test here looks at a speed.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use docket::core::memory::MemoryStore;
use docket::core::model::{Event, Run, Scope};
use docket::core::store::layer::commit_each;
use docket::core::store::{
    Backend, BatchedCommit, ClaimBatch, ClaimRequest, ClaimedCommit, Layered, RunStore, StoreError,
    StoreLayer,
};
use docket_cli::bench::{self, BenchError, BenchOptions, BenchReport, ScaleFigure, ScaleOptions};

/// Every figure `BENCHMARKS.md` lists (“The figures”; (e) needs `/proc`).
const FIGURES: [&str; 16] = [
    "commit_throughput",
    "claim_throughput",
    "claim_throughput_batch",
    "claim_throughput_fair",
    "claim_throughput_fair_batch",
    "e2e_throughput",
    "e2e_throughput_1node",
    "e2e_drain_1node",
    "commit_latency_p50",
    "commit_latency_p99",
    "claim_to_start_p50",
    "claim_to_start_p99",
    "fairness_small_finish_oldest",
    "fairness_small_finish_fair",
    "fairness_jain_oldest",
    "fairness_jain_fair",
];

/// Every scale figure `BENCHMARKS.md` lists (“Scale figures”) at the tiny sweep's levels 1
/// and 2; the RSS growth needs `/proc`.
const SCALE_FIGURES: [&str; 14] = [
    "wakeup_push_p50",
    "wakeup_push_p99",
    "wakeup_push_max",
    "wakeup_poll_p50",
    "wakeup_poll_p99",
    "wakeup_poll_max",
    "commit_throughput_c1",
    "commit_throughput_c2",
    "e2e_throughput_c1",
    "e2e_throughput_c2",
    "e2e_throughput_1node_c1",
    "e2e_throughput_1node_c2",
    "claim_latency_p99_at_scale",
    "e2e_throughput_backlog",
];

/// The scale figures at sizes that only prove the machinery.
fn tiny_scale() -> ScaleOptions {
    ScaleOptions {
        name: "test".into(),
        sweep: vec![1, 2],
        window: Duration::from_millis(200),
        claim_pending: (10, 60),
        claim_samples: 15,
        backlog: (10, 40),
        completed: (10, 30),
        wakeup_samples: 5,
        wakeup_poll_ms: 40,
        figures: ScaleFigure::ALL.to_vec(),
    }
}

fn tiny() -> BenchOptions {
    BenchOptions {
        concurrency: 3,
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(50),
        claim_pool: 40,
        claim_batch: 4,
        max_commit_batch: Some(8),
        commit_batches_in_flight: 2,
        drain_runs: 30,
        fairness_backlog: 40,
        fairness_runs: 5,
        scale: Some(tiny_scale()),
        git_commit: Some("abc1234".into()),
    }
}

/// (f) is measured on stores that offer an operation registry.
fn assert_registry_figure(report: &BenchReport) {
    let figure = report
        .figure("registry_throughput")
        .unwrap_or_else(|| panic!("registry figure missing from {:?}", report.figures));
    assert!(figure.value > 0.0 && figure.floor > 0.0, "{figure:?}");
    assert!(
        report.verified.iter().any(|line| line.starts_with("(f)")),
        "no verification of (f): {:?}",
        report.verified
    );
}

/// The wakeup samples without push hints were spread over fresh stores beside the bench's
/// (`lanes`, one per sample at these sizes) or, for a store without a URL, taken on it alone.
fn assert_wakeup_lanes(report: &BenchReport, lanes: bool) {
    let samples = tiny_scale().wakeup_samples;
    let expected = if lanes {
        format!("(h) push hints off: {samples} runs over {samples} fresh stores beside the bench's")
    } else {
        format!("(h) push hints off: {samples} runs, each started on an idle worker")
    };
    assert!(
        report
            .verified
            .iter()
            .any(|line| line.starts_with(&expected)),
        "{expected:?} not in {:?}",
        report.verified
    );
    let on = format!("(h) push hints on: {samples} runs, each started on an idle worker");
    assert!(
        report.verified.iter().any(|line| line.starts_with(&on)),
        "{on:?} not in {:?}",
        report.verified
    );
}

/// The report's line of the server's settings (`server: <name> …`).
#[cfg(any(feature = "postgres", feature = "redis"))]
fn server_line<'a>(report: &'a BenchReport, name: &str) -> &'a str {
    let prefix = format!("server: {name} ");
    report
        .floors
        .iter()
        .find(|f| f.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no server line: {:?}", report.floors))
}

fn assert_complete(report: &BenchReport) {
    let drained = format!("(c) drain: {} runs of the 1-node graph", tiny().drain_runs);
    assert!(
        report.verified.iter().any(|l| l.starts_with(&drained)),
        "no verification of the drain: {:?}",
        report.verified
    );
    for key in FIGURES {
        let figure = report
            .figure(key)
            .unwrap_or_else(|| panic!("figure {key} missing from {:?}", report.figures));
        assert!(figure.value > 0.0, "{key} measured nothing: {figure:?}");
        assert!(figure.floor > 0.0, "{key} has no floor: {figure:?}");
        assert!(figure.ratio().is_some(), "{key} has no ratio");
    }
    for key in SCALE_FIGURES
        .into_iter()
        .chain(["claim_latency_p50_at_scale", "seed_rate"])
    {
        let figure = report
            .figure(key)
            .unwrap_or_else(|| panic!("scale figure {key} missing from {:?}", report.figures));
        assert!(figure.value > 0.0, "{key} measured nothing: {figure:?}");
        assert!(figure.floor > 0.0, "{key} has no floor: {figure:?}");
        assert!(
            figure.label.contains("[test]") || key.contains("_c"),
            "{figure:?}"
        );
    }
    assert_eq!(
        report
            .curve
            .iter()
            .map(|p| p.concurrency)
            .collect::<Vec<_>>(),
        vec![1, 2],
        "the sweep's curve"
    );
    if cfg!(target_os = "linux") {
        assert!(report.figure("peak_rss").is_some(), "peak RSS missing");
        assert!(
            report.figure("scale_peak_rss").is_some(),
            "scale RSS missing"
        );
        assert!(
            report.verified.iter().any(|line| line.starts_with("(e) ")),
            "no verification of (e) at scale: {:?}",
            report.verified
        );
    }
    // A 3-node chain commits its initialization and at least one moment per node.
    assert!(report.commits_per_run >= 4, "{}", report.commits_per_run);
    for phase in [
        "(a) floor",
        "(a) store",
        "(b) limit 1",
        "(b) limit 4",
        "(c)",
        "(f) 10 pending",
        "(f) 60 pending",
        "(g) 10-run backlog",
        "(g) 40-run backlog",
        "(h) push hints on",
        "(h) push hints off",
        "(a)(c) at concurrency 1",
        "(a)(c) at concurrency 2",
    ] {
        assert!(
            report.verified.iter().any(|line| line.starts_with(phase)),
            "no verification of {phase}: {:?}",
            report.verified
        );
    }
    let lines: Vec<Value> = report
        .json_lines()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect();
    assert_eq!(lines.len(), report.figures.len());
    let keys: BTreeSet<&str> = lines.iter().filter_map(|l| l["figure"].as_str()).collect();
    assert!(FIGURES.iter().all(|k| keys.contains(k)), "{keys:?}");
    for line in &lines {
        assert_eq!(line["backend"], report.backend.as_str());
        assert_eq!(line["concurrency"], 3);
        assert_eq!(line["git_commit"], "abc1234");
        for field in ["value", "floor", "ratio", "duration_s"] {
            assert!(line[field].is_number(), "{field} in {line}");
        }
        assert!(
            line["unit"].is_string() && line["floor_kind"].is_string(),
            "{line}"
        );
    }
    let table = report.table();
    assert!(table.contains("(a) fenced claimed commits/s"), "{table}");
    assert!(table.contains("raw conditional update"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_bench_reports_every_figure_beside_its_floor_and_verifies() {
    let report = bench::run("memory://", &tiny()).await.expect("bench runs");
    assert_eq!(report.backend, "memory");
    assert_complete(&report);
    assert_registry_figure(&report);
    assert_wakeup_lanes(&report, false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chosen_scale_figure_is_measured_without_the_others() {
    let options = BenchOptions {
        scale: Some(ScaleOptions {
            figures: vec![ScaleFigure::ClaimLatency, ScaleFigure::Wakeup],
            ..tiny_scale()
        }),
        // And no drain: its figure is left out too.
        drain_runs: 0,
        ..tiny()
    };
    let report = bench::run("memory://", &options).await.expect("bench runs");
    let keys: Vec<&str> = report.figures.iter().map(|f| f.key.as_str()).collect();
    for chosen in ["claim_latency_p99_at_scale", "seed_rate", "wakeup_poll_max"] {
        assert!(keys.contains(&chosen), "{chosen} missing from {keys:?}");
    }
    for left_out in [
        "scale_peak_rss",
        "e2e_throughput_backlog",
        "commit_throughput_c1",
        "e2e_drain_1node",
    ] {
        assert!(!keys.contains(&left_out), "{left_out} measured: {keys:?}");
    }
    assert!(
        report.verified.iter().all(|v| !v.starts_with("(g)")),
        "{:?}",
        report.verified
    );
    // The standard figures are all still there.
    assert!(keys.contains(&"e2e_throughput_1node"), "{keys:?}");
}

#[test]
fn scale_figure_lists_name_each_figure_once() {
    assert_eq!(
        ScaleFigure::parse_list("all").expect("all"),
        ScaleFigure::ALL.to_vec()
    );
    assert_eq!(
        ScaleFigure::parse_list("h, f").expect("two"),
        vec![ScaleFigure::Wakeup, ScaleFigure::ClaimLatency]
    );
    for bad in ["", "h,h", "x", "h,,f"] {
        assert!(ScaleFigure::parse_list(bad).is_err(), "{bad:?} accepted");
    }
    let empty = ScaleOptions {
        figures: Vec::new(),
        ..tiny_scale()
    };
    assert!(empty.validate().is_err(), "no figure at all accepted");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_bench_measures_a_fresh_file_and_cleanup_deletes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bench.db");
    let url = format!("sqlite://{}", path.display());
    let report = bench::run(&url, &tiny()).await.expect("bench runs");
    assert_eq!(report.backend, "sqlite");
    assert_complete(&report);
    assert_registry_figure(&report);
    assert!(report.floors.iter().any(|f| f.contains("UPDATE")));
    assert_wakeup_lanes(&report, true);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("-lane"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "the wakeup lanes' files are deleted"
    );
    assert!(path.exists());
    bench::purge(&url).await.expect("purged");
    assert!(!path.exists(), "the bench's file is deleted");
}

/// A unique store name for this test process.
#[cfg(any(feature = "postgres", feature = "redis"))]
fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("docket_bench_t_{tag}_{}_{nanos}", std::process::id())
}

/// Purges the bench's store when dropped, whatever the test did.
#[cfg(any(feature = "postgres", feature = "redis"))]
struct Purge(String);

#[cfg(any(feature = "postgres", feature = "redis"))]
impl Drop for Purge {
    fn drop(&mut self) {
        let url = self.0.clone();
        // `Drop` cannot await: purge on a helper thread with its own runtime.
        let purged = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?
                .block_on(bench::purge(&url))
                .map_err(|e| e.to_string())
        })
        .join();
        if !matches!(purged, Ok(Ok(_))) {
            eprintln!("could not purge the bench store {}", self.0);
        }
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_bench_measures_a_fresh_schema_beside_a_skip_locked_floor() {
    let server = std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let separator = if server.contains('?') { '&' } else { '?' };
    let url = format!("{server}{separator}schema={}", unique("pg"));
    let _purge = Purge(url.clone());
    let report = bench::run(&url, &tiny()).await.expect("bench runs");
    assert_eq!(report.backend, "postgres");
    assert_complete(&report);
    assert_wakeup_lanes(&report, true);
    assert!(
        report.floors.iter().any(|f| f.contains("SKIP LOCKED")),
        "{:?}",
        report.floors
    );
    // The server's own answer, read apart from the bench.
    let pool = sqlx::PgPool::connect(&server).await.expect("connect");
    let autovacuum: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
        .fetch_one(&pool)
        .await
        .expect("autovacuum setting");
    let settings = server_line(&report, "PostgreSQL");
    assert!(
        settings.contains(&format!("autovacuum {autovacuum}")),
        "{settings} (the server says autovacuum {autovacuum})"
    );
    let again = bench::run(&url, &tiny())
        .await
        .expect_err("not fresh any more");
    assert!(matches!(again, BenchError::NotFresh(_)), "{again}");
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_bench_measures_a_fresh_namespace_beside_a_script_floor() {
    let server = std::env::var("DOCKET_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let separator = if server.contains('?') { '&' } else { '?' };
    let url = format!("{server}{separator}namespace={}", unique("redis"));
    let _purge = Purge(url.clone());
    let report = bench::run(&url, &tiny()).await.expect("bench runs");
    assert_eq!(report.backend, "redis");
    assert_complete(&report);
    assert_wakeup_lanes(&report, true);
    assert_registry_figure(&report);
    assert!(
        report.floors.iter().any(|f| f.contains("ZPOPMIN")),
        "{:?}",
        report.floors
    );
    let client = redis::Client::open(server.as_str()).expect("client");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let appendonly: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query_async(&mut conn)
        .await
        .expect("CONFIG GET");
    let settings = server_line(&report, "Redis");
    assert!(
        settings.contains(&format!("appendonly {}", appendonly[1])),
        "{settings} (the server says {appendonly:?})"
    );
    let again = bench::run(&url, &tiny())
        .await
        .expect_err("not fresh any more");
    assert!(matches!(again, BenchError::NotFresh(_)), "{again}");
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn an_existing_sqlite_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mine.db");
    std::fs::write(&path, b"precious").expect("written");
    let err = bench::run(&format!("sqlite://{}", path.display()), &tiny())
        .await
        .expect_err("an existing file is not fresh");
    assert!(matches!(err, BenchError::NotFresh(_)), "{err}");
    assert_eq!(std::fs::read(&path).expect("still there"), b"precious");
}

#[tokio::test]
async fn out_of_range_options_are_refused_before_anything_runs() {
    for options in [
        BenchOptions {
            concurrency: 0,
            ..tiny()
        },
        BenchOptions {
            duration: Duration::ZERO,
            ..tiny()
        },
        BenchOptions {
            claim_batch: 1,
            ..tiny()
        },
        BenchOptions {
            claim_pool: 0,
            ..tiny()
        },
        BenchOptions {
            drain_runs: 1_000_001,
            ..tiny()
        },
    ] {
        let err = bench::run("memory://", &options)
            .await
            .expect_err("refused");
        assert!(matches!(err, BenchError::Options(_)), "{err}");
    }
}

/// How [`Faulty`] breaks the memory store.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Every lease `claim_due` grants is handed out twice.
    DoubleLease,
    /// Every 25th claimed commit is acknowledged without being stored.
    LoseCommit,
    /// Only in the scale figure (f): every lease of a large-size pending run is handed out
    /// twice.
    DoubleLeaseAtScale,
    /// Only in the scale figure (g): every 7th claimed commit of a backlog run is
    /// acknowledged without being stored.
    LoseBacklogCommit,
}

/// A broken store.
#[derive(Debug)]
struct Faulty {
    inner: MemoryStore,
    fault: Fault,
    commits: AtomicU64,
}

#[async_trait]
impl StoreLayer for Faulty {
    fn inner(&self) -> &dyn Backend {
        &self.inner
    }

    async fn commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        commit_each(self, commits).await
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let n = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        if matches!(self.fault, Fault::LoseCommit) && n % 25 == 0 {
            return Ok(proposal.run);
        }
        if matches!(self.fault, Fault::LoseBacklogCommit)
            && proposal.run.id.as_str().starts_with("bench-g-")
            && n % 7 == 0
        {
            return Ok(proposal.run);
        }
        self.inner.commit_claimed(scope, proposal, events).await
    }

    async fn claim_due(&self, policy: &ClaimRequest) -> Result<ClaimBatch, StoreError> {
        let mut batch = self.inner.claim_due(policy).await?;
        if matches!(self.fault, Fault::DoubleLease) {
            let again = batch.leases.clone();
            batch.leases.extend(again);
        }
        if matches!(self.fault, Fault::DoubleLeaseAtScale) {
            let again: Vec<_> = batch
                .leases
                .iter()
                .filter(|l| l.run_id.as_str().starts_with("bench-f-large"))
                .cloned()
                .collect();
            batch.leases.extend(again);
        }
        Ok(batch)
    }
}

/// Runs the bench on a store broken by `fault` and returns the verification's problems.
async fn assert_verification_fails(fault: Fault) -> Vec<String> {
    let backend: Arc<dyn Backend> = Arc::new(Layered(Faulty {
        inner: MemoryStore::new(),
        fault,
        commits: AtomicU64::new(0),
    }));
    let err = bench::run_backend("faulty", backend, &tiny())
        .await
        .expect_err("a broken store must not produce figures");
    let BenchError::Verification(problems) = err else {
        panic!("{fault:?}: expected a verification failure, got {err}");
    };
    assert!(!problems.is_empty());
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_leases_a_run_twice_fails_the_verification() {
    assert_verification_fails(Fault::DoubleLease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_acknowledges_a_commit_it_did_not_keep_fails_the_verification() {
    assert_verification_fails(Fault::LoseCommit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_leases_a_pending_run_twice_at_scale_fails_the_claim_latency_figure() {
    let problems = assert_verification_fails(Fault::DoubleLeaseAtScale).await;
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("(f)") && p.contains("leased twice")),
        "{problems:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_loses_backlog_commits_fails_the_backlog_figure() {
    let problems = assert_verification_fails(Fault::LoseBacklogCommit).await;
    assert!(
        problems.iter().all(|p| p.starts_with("(g)")),
        "only the backlog figure is affected: {problems:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_store_is_benched_beside_the_in_process_floor() {
    let backend: Arc<dyn Backend> = Arc::new(MemoryStore::new());
    let report = bench::run_backend("custom", backend, &tiny())
        .await
        .expect("bench runs");
    assert_eq!(report.backend, "custom");
    assert_complete(&report);
    assert_registry_figure(&report);
}

#[test]
fn the_cli_prints_the_table_and_writes_json_lines_and_a_png() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json, chart) = (dir.path().join("b.jsonl"), dir.path().join("b.png"));
    let curve = dir.path().join("curve.png");
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(["bench", "--backend", "memory://", "--concurrency", "2"])
        .args([
            "--seconds",
            "0.3",
            "--claim-pool",
            "30",
            "--claim-batch",
            "3",
            "--drain-runs",
            "20",
            "--fairness-backlog",
            "30",
            "--fairness-runs",
            "5",
            "--scale",
            "smoke",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--chart")
        .arg(&chart)
        .arg("--curve")
        .arg(&curve)
        .env("RUST_LOG", "error")
        .output()
        .expect("the docket binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("(c) end-to-end runs/s"), "{stdout}");
    assert!(stdout.contains("verified:"), "{stdout}");
    let lines = std::fs::read_to_string(&json).expect("JSON lines written");
    assert!(lines.lines().count() >= FIGURES.len(), "{lines}");
    let png = std::fs::read(&chart).expect("chart written");
    assert!(png.starts_with(b"\x89PNG"), "a PNG file");
    let png = std::fs::read(&curve).expect("curve written");
    assert!(png.starts_with(b"\x89PNG"), "a PNG file");
    assert!(
        stdout.contains("(h) wakeup max, push hints off"),
        "{stdout}"
    );
    assert!(stdout.contains("[smoke]"), "{stdout}");
}

#[test]
fn the_cli_refuses_to_bench_without_a_backend() {
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(["bench", "--seconds", "0.1"])
        .env_remove("DOCKET_BACKEND")
        .output()
        .expect("the docket binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--backend"), "{stderr}");
}
