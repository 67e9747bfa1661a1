//! The PostgreSQL checks of issue 5, driven through binaries (xtask itself has no driver).
//!
//! * `cargo xtask pg-workers [--runs N]` (default 1,000; `ci` runs 150): `docket demo
//!   --no-workers` starts N demo runs in a fresh schema; two `docket worker --until-idle`
//!   processes drain them concurrently (approvals are resolved through the CLI between
//!   rounds, as in `recovery`); `docket run verify --expect-terminal` then proves every run
//!   terminal with checkpoint seqs exactly 1..n (no gap, no repeat). Prints how the moments
//!   were split between the two workers and fails unless both did work.
//! * `cargo xtask pg-plan [--runs N]` (default and `ci`: 100,000): `pg_checks plan` (an
//!   example of `docket-postgres`) fills a fresh schema with N pending runs, prints the
//!   `EXPLAIN` of the real claim statement (custom and generic plan) and fails on a
//!   sequential scan of the runs table or a missing partial index.
//!
//! The server is `DOCKET_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{
    binary, build_docket, count, resolve_approvals, run_with_deadline, target_dir, Running,
};
use crate::{cargo, step, Result};

/// The server both checks use.
fn server_url() -> String {
    std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Builds `pg_checks` with the feature set `cargo test --workspace --all-features` uses.
fn build_pg_checks() -> Result<PathBuf> {
    cargo(&[
        "build",
        "--package",
        "docket-postgres",
        "--all-features",
        "--example",
        "pg_checks",
    ])?;
    let path = target_dir()?
        .join("debug")
        .join("examples")
        .join("pg_checks");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("pg_checks is not at {}", path.display()))
    }
}

/// Parses `[--runs N]`.
pub fn runs_arg(args: &[String], default: usize) -> Result<usize> {
    match args {
        [] => Ok(default),
        [flag, n] if flag == "--runs" => n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("--runs {n:?} is not a positive number")),
        _ => Err(format!(
            "unexpected arguments {args:?}; expected [--runs N]"
        )),
    }
}

/// `cargo xtask pg-plan`.
pub fn plan(runs: usize) -> Result {
    let started = Instant::now();
    step(&format!(
        "pg-plan: the claim statement's plan with {runs} pending runs"
    ));
    let pg_checks = build_pg_checks()?;
    let mut child = Command::new(&pg_checks)
        .args(["plan", "--runs", &runs.to_string()])
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start pg_checks: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("pg_checks plan did not finish within 300 s".into());
            }
            Err(e) => return Err(format!("pg_checks plan: {e}")),
        }
    };
    if !status.success() {
        return Err(format!("pg-plan failed ({status})"));
    }
    eprintln!("pg-plan: passed in {:.1?}", started.elapsed());
    Ok(())
}

/// `cargo xtask pg-workers`.
pub fn workers(runs: usize) -> Result {
    let started = Instant::now();
    step(&format!(
        "pg-workers: two `docket worker` processes drain {runs} demo runs on one PostgreSQL schema"
    ));
    build_docket()?;
    let docket = binary()?;
    let pg_checks = build_pg_checks()?;
    let schema = format!("docket_xtask_workers_{}", std::process::id());
    let base = server_url();
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}schema={schema}");
    let result = scenario(&docket, &url, runs);
    // The demo recreated the schema; remove it whatever happened.
    let dropped = run_with_deadline(
        Command::new(&pg_checks).args(["drop-schema", &url]),
        Duration::from_secs(60),
        "pg_checks drop-schema",
    );
    result?;
    dropped?;
    eprintln!("pg-workers: passed in {:.1?}", started.elapsed());
    Ok(())
}

/// What one `docket worker` process reported at exit: moments it committed.
fn committed_moments(stderr: &str) -> Result<u64> {
    stderr
        .lines()
        .find_map(|line| {
            let rest = line.split_once("committed ")?.1;
            rest.split_whitespace().next()?.parse().ok()
        })
        .ok_or_else(|| format!("no `committed N moments` line in the worker's output:\n{stderr}"))
}

fn worker_command(docket: &Path, url: &str) -> Command {
    let mut command = Command::new(docket);
    command
        .args(["worker", "--backend", url, "--until-idle"])
        .args(["--poll-interval-ms", "200", "--idle-check-ms", "200"]);
    command
}

fn scenario(docket: &Path, url: &str, runs: usize) -> Result {
    let begun = Instant::now();
    run_with_deadline(
        Command::new(docket)
            .args(["demo", "--backend", url, "--no-workers"])
            .args(["--runs", &runs.to_string()]),
        Duration::from_secs(600),
        "docket demo --no-workers",
    )?;
    eprintln!(
        "pg-workers: started {runs} demo runs in {:.1?} ({url})",
        begun.elapsed()
    );
    let mut moments = [0_u64; 2];
    let drain_started = Instant::now();
    for round in 1..=5 {
        let resolved = resolve_approvals(docket, url)?;
        let round_started = Instant::now();
        let deadline = round_started + Duration::from_secs(600);
        let pair = [
            Running::spawn(&mut worker_command(docket, url), "docket worker #1")?,
            Running::spawn(&mut worker_command(docket, url), "docket worker #2")?,
        ];
        // Wait for both before judging either, so a failing one never leaves the other running.
        let outputs: Vec<Result<_>> = pair.into_iter().map(|w| w.finish(deadline)).collect();
        let mut round_moments = [0_u64; 2];
        for (i, output) in outputs.into_iter().enumerate() {
            round_moments[i] = committed_moments(&String::from_utf8_lossy(&output?.stderr))?;
            moments[i] += round_moments[i];
        }
        let left = count(docket, url, &["running", "waiting"])?;
        eprintln!(
            "pg-workers: round {round}: resolved {resolved} approvals; both workers idle after \
             {:.1?} (moments: #1 {}, #2 {}); {left} runs unfinished",
            round_started.elapsed(),
            round_moments[0],
            round_moments[1]
        );
        if left == 0 {
            break;
        }
    }
    let drained_in = drain_started.elapsed();
    let verify = run_with_deadline(
        Command::new(docket).args(["run", "verify", "--expect-terminal", "--backend", url]),
        Duration::from_secs(600),
        "docket run verify --expect-terminal",
    )?;
    eprint!("pg-workers: {}", String::from_utf8_lossy(&verify.stdout));
    let total = count(docket, url, &[])?;
    let done = count(docket, url, &["done"])?;
    if total != runs || done != runs {
        return Err(format!(
            "expected {runs} runs all done, found {done} done of {total}"
        ));
    }
    let all = (moments[0] + moments[1]).max(1);
    eprintln!(
        "pg-workers: split of {} committed moments over {drained_in:.1?}: worker #1 {} ({:.0}%), \
         worker #2 {} ({:.0}%)",
        moments[0] + moments[1],
        moments[0],
        percent(moments[0], all),
        moments[1],
        percent(moments[1], all)
    );
    if moments.contains(&0) {
        return Err("one worker process did no work: the load was not shared".into());
    }
    Ok(())
}

fn percent(part: u64, all: u64) -> f64 {
    // Moment counts are far below 2^52: the conversions are exact.
    #[allow(clippy::cast_precision_loss)]
    let ratio = part as f64 / all as f64;
    ratio * 100.0
}
