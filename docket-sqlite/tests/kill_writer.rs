//! `kill -9` of a writing process (`docs/reliability.md`, “Process and server faults”), for
//! `synchronous=FULL` and `NORMAL`.
//!
//! Own `main` (`harness = false`): the parent re-executes this binary as a child that commits
//! to one run in a loop and reports every acknowledged seq on stdout; after a number of
//! acknowledgements the parent kills it with SIGKILL (likely mid-transaction), reopens the file
//! and checks: `PRAGMA integrity_check` is ok, every acknowledged commit is present (at most
//! one unacknowledged commit may also have landed), its events are all there, and the store
//! accepts the next commit.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use common::*;
use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::{GraphStore, ReleaseWake, RunStore};
use docket_sqlite::testing::SqliteGuard;
use docket_sqlite::{SqliteOptions, SqliteStore, Synchronous};

const ROLE: &str = "DOCKET_SQLITE_KILL_ROLE";
const DB: &str = "DOCKET_SQLITE_KILL_DB";
const ACKS_BEFORE_KILL: u64 = 30;

fn options(sync: Synchronous) -> SqliteOptions {
    SqliteOptions::default().with_synchronous(sync)
}

fn sync_named(name: &str) -> Synchronous {
    if name == "normal" {
        Synchronous::Normal
    } else {
        Synchronous::Full
    }
}

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let outcome = match (std::env::var(ROLE), std::env::var(DB)) {
        (Ok(sync), Ok(db)) => runtime.block_on(child(sync_named(&sync), Path::new(&db))),
        _ => runtime.block_on(parent()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kill_writer: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn parent() -> Result<(), String> {
    println!("\nrunning 2 tests");
    for sync in ["full", "normal"] {
        scenario(sync).await?;
        println!("test kill_9_of_a_writer_loses_no_acknowledged_commit_{sync} ... ok");
    }
    println!("\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
    Ok(())
}

async fn scenario(sync: &str) -> Result<(), String> {
    let guard = SqliteGuard::new().map_err(|e| e.to_string())?;
    let store = SqliteStore::open(options(sync_named(sync)).with_path(guard.path()))
        .await
        .map_err(|e| e.to_string())?;
    let doc = graph_doc("g", "v1");
    let graph = graph_ref_of(&doc);
    store
        .save_graph(&OwnerScope::Tenantless, &graph, &doc, t(0))
        .await
        .map_err(|e| e.to_string())?;
    let run = initial_run("r1", &graph, t(0));
    store
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(&run, t(0), t(0)),
            init_events(&run),
        )
        .await
        .map_err(|e| e.to_string())?;
    drop(store);

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .env(ROLE, sync)
        .env(DB, guard.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let mut last_ack = 0;
    // Keep the pipe open until the kill, so the child dies of SIGKILL and not of a broken pipe.
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let line = line.map_err(|e| e.to_string())?;
        if let Some(seq) = line.strip_prefix("ack ") {
            last_ack = seq.parse::<u64>().map_err(|e| e.to_string())?;
            if last_ack >= ACKS_BEFORE_KILL {
                break;
            }
        }
    }
    child.kill().map_err(|e| e.to_string())?; // SIGKILL
    let status = child.wait().map_err(|e| e.to_string())?;
    drop(lines);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() != Some(9) {
            return Err(format!("the writer was not killed by SIGKILL: {status}"));
        }
    }
    if status.success() {
        return Err("the writer exited on its own before it was killed".into());
    }
    if last_ack < ACKS_BEFORE_KILL {
        return Err(format!(
            "the writer stopped after {last_ack} acknowledgements"
        ));
    }

    let conn = rusqlite::Connection::open(guard.path()).map_err(|e| e.to_string())?;
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    drop(conn);
    if check != "ok" {
        return Err(format!("{sync}: integrity_check: {check}"));
    }
    let store = SqliteStore::open(options(sync_named(sync)).with_path(guard.path()))
        .await
        .map_err(|e| e.to_string())?;
    let stored = store
        .fetch_run(&Scope::System, &run.id)
        .await
        .map_err(|e| e.to_string())?;
    if stored.checkpoint_seq < last_ack || stored.checkpoint_seq > last_ack + 1 {
        return Err(format!(
            "{sync}: acknowledged seq {last_ack}, stored seq {}",
            stored.checkpoint_seq
        ));
    }
    for seq in 1..=stored.event_seq {
        store
            .fetch_event(&Scope::System, &run.id, seq)
            .await
            .map_err(|e| format!("{sync}: event {seq}: {e}"))?;
    }
    let (next, events) = advance(&stored, RunStatus::Running, t(2));
    store
        .commit_unclaimed(
            &Scope::System,
            stored.checkpoint_seq,
            unclaimed(next, ReleaseWake::Immediate, t(2)),
            events,
        )
        .await
        .map_err(|e| format!("{sync}: commit after recovery: {e}"))?;
    Ok(())
}

async fn child(sync: Synchronous, path: &Path) -> Result<(), String> {
    let store = SqliteStore::open(options(sync).with_path(path))
        .await
        .map_err(|e| e.to_string())?;
    let id = rid("r1");
    // Bounded so that an orphaned child cannot run forever; the parent kills it long before.
    for _ in 0..100_000 {
        let current = store
            .fetch_run(&Scope::System, &id)
            .await
            .map_err(|e| e.to_string())?;
        let (next, events) = advance(&current, RunStatus::Running, t(1));
        let seq = next.checkpoint_seq;
        store
            .commit_unclaimed(
                &Scope::System,
                current.checkpoint_seq,
                unclaimed(next, ReleaseWake::Immediate, t(1)),
                events,
            )
            .await
            .map_err(|e| e.to_string())?;
        // Only now is the commit acknowledged to the outside world.
        println!("ack {seq}");
    }
    Ok(())
}
