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

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{cargo, step, Result};

const RUNS: usize = 60;

pub fn run() -> Result {
    let started = Instant::now();
    step("recovery: SIGKILL `docket demo` mid-run, then finish with `docket worker --until-idle`");
    cargo(&[
        "build",
        "--package",
        "docket",
        "--all-features",
        "--bin",
        "docket",
    ])?;
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

/// The binary cargo just built, in the workspace's target dir.
pub(crate) fn binary() -> Result<PathBuf> {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask has no parent directory")?
            .join("target"),
    };
    let path = target.join("debug").join("docket");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("the docket binary is not at {}", path.display()))
    }
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
///
/// Nothing opens the store before the demo has printed its header (its store is created and
/// migrated, its graphs saved): a listing racing the demo's creation of a fresh SQLite file
/// can make the demo's own start-up fail with `database is locked`.
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

/// Runs `command` to completion within `limit`, capturing its output. The pipes are drained
/// while it runs, so a large output (a JSON listing of hundreds of runs) cannot fill a pipe
/// and stall the child.
pub(crate) fn run_with_deadline(
    command: &mut Command,
    limit: Duration,
    what: &str,
) -> Result<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} did not finish within {limit:?}"));
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Reads a pipe to its end on a thread.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Runs `docket <args> --backend URL` and returns its stdout.
pub(crate) fn docket_out(docket: &Path, url: &str, args: &[&str]) -> Result<String> {
    let output = run_with_deadline(
        Command::new(docket).args(args).args(["--backend", url]),
        Duration::from_secs(30),
        &format!("docket {}", args.join(" ")),
    )?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// How many runs have one of `statuses` (all runs when empty).
pub(crate) fn count(docket: &Path, url: &str, statuses: &[&str]) -> Result<usize> {
    let mut args = vec!["run", "list", "--json"];
    for s in statuses {
        args.extend(["--status", s]);
    }
    Ok(docket_out(docket, url, &args)?.matches("\"id\":").count())
}

/// Resolves every open interrupt of every waiting run with `true`; returns how many.
pub(crate) fn resolve_approvals(docket: &Path, url: &str) -> Result<usize> {
    let listing = docket_out(
        docket,
        url,
        &["run", "list", "--status", "waiting", "--json"],
    )?;
    let mut resolved = 0;
    for run_id in string_values(&listing, "\"id\":") {
        let shown = docket_out(docket, url, &["run", "show", &run_id, "--json"])?;
        for interrupt in list_after(&shown, "\"open_interrupts\":") {
            docket_out(
                docket,
                url,
                &["interrupt", "resolve", &run_id, &interrupt, "true"],
            )?;
            resolved += 1;
        }
    }
    Ok(resolved)
}

/// Every string value following `key` in a JSON text (std-only, for our own output).
fn string_values(text: &str, key: &str) -> Vec<String> {
    text.match_indices(key)
        .filter_map(|(i, _)| {
            let rest = text[i + key.len()..].trim_start().strip_prefix('"')?;
            rest.split_once('"').map(|(value, _)| value.to_owned())
        })
        .collect()
}

/// The strings of the JSON array following `key`.
fn list_after(text: &str, key: &str) -> Vec<String> {
    let Some(i) = text.find(key) else {
        return Vec::new();
    };
    let rest = &text[i + key.len()..];
    let Some(end) = rest.find(']') else {
        return Vec::new();
    };
    rest[..end]
        .split('"')
        .enumerate()
        .filter(|(n, _)| n % 2 == 1)
        .map(|(_, s)| s.to_owned())
        .collect()
}
