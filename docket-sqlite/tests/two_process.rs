//! Two OS processes write one database file concurrently (`docs/reliability.md`,
//! “Process and server faults”).
//!
//! This target has its own `main` (`harness = false`): run plainly, it is the parent. It
//! prepares a database, re-executes its own binary twice as children (selected by an
//! environment variable), and checks what they report against what is stored:
//!
//! * phase A — optimistic increments of shared counter runs through `commit_unclaimed` (retry on
//!   `StaleCheckpoint`): every seq committed exactly once across both processes, each stored
//!   checkpoint event written by the process that reported that seq;
//! * phase B — both processes drain the same pool of ready runs with `claim_due` +
//!   `commit_claimed`: every run leased and finished exactly once.
//!
//! Any error other than `StaleCheckpoint` in a child — in particular `SQLITE_BUSY` /
//! `BUSY_SNAPSHOT` surfacing as `Unavailable` — fails the test.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use common::*;
use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, GraphStore, ReleaseWake, RunStore, StoreError};
use docket_sqlite::testing::SqliteGuard;
use docket_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

const ROLE: &str = "DOCKET_SQLITE_TWO_PROCESS_ROLE";
const DB: &str = "DOCKET_SQLITE_TWO_PROCESS_DB";
const CHILDREN: [&str; 2] = ["alpha", "beta"];
const COUNTERS: usize = 3;
const INCREMENTS: usize = 40;
const JOBS: usize = 60;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let outcome = match (std::env::var(ROLE), std::env::var(DB)) {
        (Ok(role), Ok(db)) => runtime.block_on(child(&role, Path::new(&db))),
        _ => runtime.block_on(parent()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("two_process: {message}");
            ExitCode::FAILURE
        }
    }
}

fn options() -> SqliteOptions {
    // Generous: contention between the two processes must wait, never fail.
    SqliteOptions::default().with_busy_timeout(Duration::from_secs(60))
}

fn counter(i: usize) -> String {
    format!("counter-{i}")
}

fn far() -> docket_core::model::Timestamp {
    t(1_000_000_000)
}

async fn parent() -> Result<(), String> {
    println!("\nrunning 1 test");
    let guard = SqliteGuard::new().map_err(|e| e.to_string())?;
    {
        let store = SqliteStore::open(options().with_path(guard.path()))
            .await
            .map_err(|e| e.to_string())?;
        let doc = graph_doc("g", "v1");
        let graph = graph_ref_of(&doc);
        store
            .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(0))
            .await
            .map_err(|e| e.to_string())?;
        let mut ids: Vec<(String, _)> = (0..COUNTERS).map(|i| (counter(i), far())).collect();
        ids.extend((0..JOBS).map(|i| (format!("job-{i:03}"), t(0))));
        for (id, wake) in ids {
            let run = initial_run(&id, &graph, t(0));
            store
                .initialize(
                    &OwnerScope::Tenantless,
                    init_proposal(&run, wake, t(0)),
                    init_events(&run),
                )
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let children: Vec<_> = CHILDREN
        .iter()
        .map(|role| {
            Command::new(&exe)
                .env(ROLE, role)
                .env(DB, guard.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map(|child| (*role, child))
                .map_err(|e| format!("cannot spawn child {role}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut commits: BTreeMap<(String, u64), String> = BTreeMap::new();
    let mut leases: BTreeMap<String, String> = BTreeMap::new();
    for (role, child) in children {
        let output = child.wait_with_output().map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(format!(
                "child {role} failed: {}\n{stdout}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        for line in stdout.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["commit", run, seq] => {
                    let seq = seq.parse::<u64>().map_err(|e| e.to_string())?;
                    if let Some(other) = commits.insert(((*run).to_owned(), seq), role.to_owned()) {
                        return Err(format!("{run} seq {seq} committed by {other} and {role}"));
                    }
                }
                ["lease", run] => {
                    if let Some(other) = leases.insert((*run).to_owned(), role.to_owned()) {
                        return Err(format!("{run} leased by {other} and {role}"));
                    }
                }
                _ => {}
            }
        }
    }
    verify(guard.path(), &commits, &leases).await?;
    println!("test two_processes_share_one_file_without_lost_or_duplicated_commits ... ok");
    println!("\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
    Ok(())
}

async fn verify(
    path: &Path,
    commits: &BTreeMap<(String, u64), String>,
    leases: &BTreeMap<String, String>,
) -> Result<(), String> {
    let store = SqliteStore::open(options().with_path(path))
        .await
        .map_err(|e| e.to_string())?;
    let writers: BTreeSet<&String> = commits.values().collect();
    if writers.len() != CHILDREN.len() {
        return Err(format!(
            "only {writers:?} committed; the processes did not both write"
        ));
    }
    for i in 0..COUNTERS {
        let id = counter(i);
        let run = store
            .fetch_run(&Scope::System, &rid(&id))
            .await
            .map_err(|e| e.to_string())?;
        let seqs: Vec<u64> = commits
            .keys()
            .filter(|(run, _)| *run == id)
            .map(|(_, seq)| *seq)
            .collect();
        let expected: Vec<u64> = (2..=run.checkpoint_seq).collect();
        if seqs != expected {
            return Err(format!(
                "{id}: reported seqs {seqs:?}, stored up to {}",
                run.checkpoint_seq
            ));
        }
        for seq in seqs {
            let event = store
                .fetch_event(&Scope::System, &rid(&id), seq + 1)
                .await
                .map_err(|e| e.to_string())?;
            let writer = &commits[&(id.clone(), seq)];
            if event.payload.get("writer") != Some(&json!(writer)) {
                return Err(format!(
                    "{id} seq {seq}: event by {:?}, reported by {writer}",
                    event.payload.get("writer")
                ));
            }
        }
    }
    let total: usize = commits.len();
    if total != CHILDREN.len() * INCREMENTS {
        return Err(format!(
            "{total} commits reported, expected {}",
            CHILDREN.len() * INCREMENTS
        ));
    }
    if leases.len() != JOBS {
        return Err(format!("{} jobs leased, expected {JOBS}", leases.len()));
    }
    for job in leases.keys() {
        let run = store
            .fetch_run(&Scope::System, &rid(job))
            .await
            .map_err(|e| e.to_string())?;
        if run.status != RunStatus::Done || run.checkpoint_seq != 2 {
            return Err(format!(
                "{job}: {} at seq {}",
                run.status, run.checkpoint_seq
            ));
        }
    }
    drop(store);
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if check != "ok" {
        return Err(format!("integrity_check: {check}"));
    }
    Ok(())
}

/// Waits (bounded) until every child has announced itself, so the phases overlap.
fn barrier(dir: &Path, role: &str) -> Result<(), String> {
    std::fs::write(dir.join(format!("ready-{role}")), b"").map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !CHILDREN
        .iter()
        .all(|r| dir.join(format!("ready-{r}")).exists())
    {
        if Instant::now() > deadline {
            return Err("the other child never started".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

async fn child(role: &str, path: &Path) -> Result<(), String> {
    let store = SqliteStore::open(options().with_path(path))
        .await
        .map_err(|e| format!("open: {e}"))?;
    let dir: PathBuf = path.parent().map(Path::to_path_buf).unwrap_or_default();
    barrier(&dir, role)?;
    let offset = CHILDREN.iter().position(|r| *r == role).unwrap_or(0);
    // Phase A: optimistic increments of shared counters.
    for i in 0..INCREMENTS {
        let id = rid(&counter((i + offset) % COUNTERS));
        loop {
            let current = store
                .fetch_run(&Scope::System, &id)
                .await
                .map_err(|e| format!("fetch: {e}"))?;
            let (next, mut events) = advance(&current, RunStatus::Running, t(1));
            events[0].payload.insert("writer".into(), json!(role));
            let seq = next.checkpoint_seq;
            match store
                .commit_unclaimed(
                    &Scope::System,
                    current.checkpoint_seq,
                    unclaimed(next, ReleaseWake::At(far()), t(1)),
                    events,
                )
                .await
            {
                Ok(_) => {
                    println!("commit {id} {seq}");
                    break;
                }
                Err(StoreError::StaleCheckpoint) => {}
                Err(other) => return Err(format!("commit {id}: {other}")),
            }
        }
    }
    // Phase B: drain the shared pool of ready jobs.
    loop {
        let batch = store
            .claim_due(&policy(t(2), 2))
            .await
            .map_err(|e| format!("claim: {e}"))?;
        if batch.outcome_count() == 0 {
            break;
        }
        for lease in batch.leases {
            let current = store
                .fetch_run(&Scope::System, &lease.run_id)
                .await
                .map_err(|e| format!("fetch: {e}"))?;
            let (next, mut events) = advance(&current, RunStatus::Done, t(3));
            events[0].payload.insert("writer".into(), json!(role));
            store
                .commit_claimed(
                    &Scope::System,
                    claimed(
                        next,
                        lease.checkpoint_seq,
                        &lease.claim_token,
                        ClaimedSchedule::Release(ReleaseWake::Terminal),
                        t(3),
                    ),
                    events,
                )
                .await
                .map_err(|e| format!("commit {}: {e}", lease.run_id))?;
            println!("lease {}", lease.run_id);
        }
    }
    Ok(())
}
