//! The PostgreSQL checks of issue 5, driven through binaries (xtask itself has no driver).
//!
//! * `cargo xtask pg-workers [--runs N] [--pgbouncer]` (default 1,000; `ci` runs 150, once
//!   directly and once through PgBouncer): `docket demo --no-workers` starts N demo runs in a
//!   fresh schema; two `docket worker --until-idle` processes drain them concurrently
//!   (approvals are resolved through the CLI between rounds, as in `recovery`); `docket run
//!   verify --expect-terminal` then proves every run terminal with checkpoint seqs exactly
//!   1..n (no gap, no repeat). Prints how the moments were split between the two workers and
//!   fails unless both did work. With `--pgbouncer` every statement goes through a private
//!   PgBouncer in transaction mode (LISTEN direct, through `listen_url`), and the workers must
//!   have received push wake hints.
//! * The demo through PgBouncer (`ci`): `docket demo` with its defaults (200 runs, four
//!   workers, one killed mid-drain) on a pooler URL must end `result: OK` with wake hints
//!   pushed by the store.
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
use crate::pgbouncer::PgBouncer;
use crate::{cargo, step, Result};

/// The server every check uses.
pub fn server_url() -> String {
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

/// Parses `[--runs N] [--pgbouncer]` (pg-workers).
pub fn workers_args(args: &[String], default: usize) -> Result<(usize, bool)> {
    let pgbouncer = args.iter().any(|a| a == "--pgbouncer");
    let rest: Vec<String> = args
        .iter()
        .filter(|a| *a != "--pgbouncer")
        .cloned()
        .collect();
    Ok((runs_arg(&rest, default)?, pgbouncer))
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

/// `cargo xtask pg-workers`: directly, or through `pgbouncer`.
pub fn workers(runs: usize, pgbouncer: Option<&PgBouncer>) -> Result {
    let started = Instant::now();
    let route = if pgbouncer.is_some() {
        " through PgBouncer (transaction mode)"
    } else {
        ""
    };
    step(&format!(
        "pg-workers: two `docket worker` processes drain {runs} demo runs on one PostgreSQL \
         schema{route}"
    ));
    build_docket()?;
    let docket = binary()?;
    let pg_checks = build_pg_checks()?;
    let schema = format!(
        "docket_xtask_workers_{}{}",
        std::process::id(),
        if pgbouncer.is_some() { "_pooled" } else { "" }
    );
    let url = with_schema(&base_url(pgbouncer), &schema);
    let result = scenario(&docket, &url, runs, pgbouncer.is_some());
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

/// The URL of the server, or of the server through `pgbouncer`.
fn base_url(pgbouncer: Option<&PgBouncer>) -> String {
    pgbouncer.map_or_else(server_url, PgBouncer::docket_url)
}

fn with_schema(base: &str, schema: &str) -> String {
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}schema={schema}")
}

/// The number before `what` on the worker's exit line (`committed N moments, …, M wake
/// hints`).
fn reported(stderr: &str, what: &str) -> Result<u64> {
    stderr
        .lines()
        .filter(|line| line.starts_with("docket worker: committed "))
        .find_map(|line| {
            let before = line.split_once(what)?.0;
            before.split_whitespace().last()?.parse().ok()
        })
        .ok_or_else(|| format!("no `N {what}` on the worker's exit line:\n{stderr}"))
}

/// What one `docket worker` process reported at exit: moments it committed.
fn committed_moments(stderr: &str) -> Result<u64> {
    reported(stderr, " moments")
}

/// `cargo xtask ci`'s demo through `pgbouncer`: every run ends as its graph dictates, and
/// the store pushed wake hints (LISTEN through `listen_url`).
pub fn demo_through(pgbouncer: &PgBouncer) -> Result {
    let started = Instant::now();
    step("pg-demo: `docket demo` (200 runs, 4 workers, one killed) through PgBouncer");
    build_docket()?;
    let docket = binary()?;
    let pg_checks = build_pg_checks()?;
    let url = with_schema(
        &pgbouncer.docket_url(),
        &format!("docket_xtask_demo_{}_pooled", std::process::id()),
    );
    let demo = run_with_deadline(
        Command::new(&docket).args(["demo", "--backend", &url]),
        Duration::from_secs(600),
        "docket demo through PgBouncer",
    );
    let dropped = run_with_deadline(
        Command::new(&pg_checks).args(["drop-schema", &url]),
        Duration::from_secs(60),
        "pg_checks drop-schema",
    );
    let stdout = String::from_utf8_lossy(&demo?.stdout).into_owned();
    dropped?;
    let result = stdout
        .lines()
        .find(|line| line.starts_with("result: "))
        .unwrap_or("no result line");
    let hints = stdout
        .lines()
        .find(|line| line.contains("wake hints"))
        .unwrap_or("no wake hints line");
    eprintln!("pg-demo: {result}\npg-demo: {}", hints.trim());
    if !result.starts_with("result: OK") {
        return Err(format!("the demo through PgBouncer failed:\n{stdout}"));
    }
    if !hints.contains("pushed by the store") {
        return Err(format!(
            "the demo through PgBouncer received no wake hints (listen_url):\n{stdout}"
        ));
    }
    eprintln!("pg-demo: passed in {:.1?}", started.elapsed());
    Ok(())
}

fn worker_command(docket: &Path, url: &str) -> Command {
    let mut command = Command::new(docket);
    command
        .args(["worker", "--backend", url, "--until-idle"])
        .args(["--poll-interval-ms", "200", "--idle-check-ms", "200"]);
    command
}

fn scenario(docket: &Path, url: &str, runs: usize, pooled: bool) -> Result {
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
    let mut hints = 0;
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
            let stderr = String::from_utf8_lossy(&output?.stderr).into_owned();
            round_moments[i] = committed_moments(&stderr)?;
            moments[i] += round_moments[i];
            hints += reported(&stderr, " wake hints")?;
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
    eprintln!("pg-workers: the workers received {hints} wake hints from the store");
    if moments.contains(&0) {
        return Err("one worker process did no work: the load was not shared".into());
    }
    if pooled && hints == 0 {
        return Err("no wake hints through the pooler: LISTEN on listen_url did not work".into());
    }
    Ok(())
}

fn percent(part: u64, all: u64) -> f64 {
    // Moment counts are far below 2^52: the conversions are exact.
    #[allow(clippy::cast_precision_loss)]
    let ratio = part as f64 / all as f64;
    ratio * 100.0
}
