//! `cargo xtask recovery`: the crash-recovery check of issue 3.
//!
//! 1. Build the `docket` binary (debug, all features: the same artifacts `cargo test
//!    --workspace --all-features` already built in `ci`).
//! 2. Start `docket demo --no-kill` on a fresh SQLite file and wait (with a deadline) until
//!    the file shows progress: every run started and some finished.
//! 3. `kill -9` the demo while runs are still unfinished (some claimed by vehicles mid-drain).
//! 4. Resolve open approvals through the CLI and run `docket worker --until-idle` on the same
//!    file (short orphan TTL, so the dead demo's claims are stolen in seconds); repeat while
//!    runs remain unfinished (a run may reach its approval only after recovery).
//! 5. `docket run verify --expect-terminal`: every run terminal, every history sound
//!    (checkpoint seqs exactly 1..n, no repeat, contiguous events); and no run failed.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{binary, build_docket, count, resolve_approvals, run_with_deadline};
use crate::{step, Result};

const RUNS: usize = 60;

pub fn run() -> Result {
    let started = Instant::now();
    step("recovery: SIGKILL `docket demo` mid-run, then finish with `docket worker --until-idle`");
    build_docket()?;
    let docket = binary()?;
    let dir = std::env::temp_dir().join(format!("docket-recovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let result = scenario(&docket, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    eprintln!("recovery: passed in {:.1?}", started.elapsed());
    Ok(())
}

fn scenario(docket: &Path, dir: &Path) -> Result {
    let url = format!("sqlite://{}", dir.join("recovery.db").display());
    let log = std::fs::File::create(dir.join("demo.log")).map_err(|e| e.to_string())?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    let mut demo = Command::new(docket)
        .args(["demo", "--backend", &url, "--runs", &RUNS.to_string()])
        .args(["--workers", "2", "--concurrency", "4", "--no-kill"])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("cannot start docket demo: {e}"))?;
    let progress = wait_for_progress(docket, &url, &dir.join("demo.log"), &mut demo);
    // SIGKILL, whatever happened: a demo must never outlive the check.
    let _ = demo.kill();
    let _ = demo.wait();
    let finished_at_kill = progress.map_err(|e| {
        let log = std::fs::read_to_string(dir.join("demo.log")).unwrap_or_default();
        format!("{e}; the demo printed:\n{log}")
    })?;
    let unfinished = count(docket, &url, &["running", "waiting"])?;
    eprintln!(
        "recovery: killed the demo with SIGKILL after {finished_at_kill} of {RUNS} runs finished; {unfinished} unfinished"
    );
    if unfinished == 0 {
        return Err("the demo finished every run before it was killed: nothing to recover".into());
    }
    for round in 1..=5 {
        let resolved = resolve_approvals(docket, &url)?;
        let started = Instant::now();
        let worker = run_with_deadline(
            Command::new(docket)
                .args(["worker", "--backend", &url, "--until-idle"])
                .args([
                    "--orphan-ttl-ms",
                    "2000",
                    "--drain-max-elapsed-ms",
                    "1500",
                    "--max-attempt-elapsed-ms",
                    "1000",
                    "--poll-interval-ms",
                    "200",
                    "--idle-check-ms",
                    "200",
                ]),
            Duration::from_secs(60),
            "docket worker --until-idle",
        )?;
        eprint!("{}", String::from_utf8_lossy(&worker.stderr));
        let left = count(docket, &url, &["running", "waiting"])?;
        eprintln!(
            "recovery: round {round}: resolved {resolved} approvals, worker idle after {:.1?}, {left} runs unfinished",
            started.elapsed()
        );
        if left == 0 {
            break;
        }
    }
    let verify = run_with_deadline(
        Command::new(docket).args(["run", "verify", "--expect-terminal", "--backend", &url]),
        Duration::from_secs(60),
        "docket run verify",
    )?;
    eprint!("{}", String::from_utf8_lossy(&verify.stdout));
    let total = count(docket, &url, &[])?;
    let done = count(docket, &url, &["done"])?;
    if total != RUNS || done != RUNS {
        return Err(format!(
            "expected {RUNS} runs all done, found {done} done of {total}"
        ));
    }
    Ok(())
}

/// Waits until every run exists and some have finished; returns how many finished.
fn wait_for_progress(docket: &Path, url: &str, log: &Path, demo: &mut Child) -> Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = demo.try_wait() {
            return Err(format!(
                "docket demo exited ({status}) before it could be killed"
            ));
        }
        let started = std::fs::read_to_string(log).is_ok_and(|l| l.contains("docket demo:"));
        if started {
            // The demo may hold the write lock: a failed listing is retried.
            if let (Ok(total), Ok(done)) = (count(docket, url, &[]), count(docket, url, &["done"]))
            {
                if total == RUNS && done >= 5 {
                    return Ok(done);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err("docket demo showed no progress within 60 s".into())
}
