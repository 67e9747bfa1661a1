//! `cargo xtask bench [--backend sqlite|postgres|postgres-pgbouncer|redis|all|A,B…]
//! [--smoke|--quick] [--seconds S] [--concurrency N] [--scale off|smoke|quick|full]`: builds the
//! release `docket` binary with every backend and runs `docket bench` once per backend against
//! a store made for it — a new SQLite file under `target/bench/`, a new PostgreSQL schema and a
//! new Redis namespace on the local servers — deleted again after a successful run (`--cleanup`). `postgres-pgbouncer` is the PostgreSQL
//! store (and its floor) through a private PgBouncer in transaction mode (`pooler=transaction`,
//! LISTEN direct through `listen_url`); when both PostgreSQL variants ran, the end-to-end
//! runs/s through PgBouncer are printed beside the direct figure with their ratio. The tables
//! go to stdout; JSON lines and PNG charts to `target/bench/<backend>.jsonl` / `.png`, all
//! JSON lines also to `target/bench/all.jsonl`.
//!
//! `--smoke` runs ≈2.5 s per backend (0.5 s windows, 200-run claim pools, a 200-run drain, a 200-run backlog
//! beside four 10-run tenants in the fairness figure, the scale figures at tiny sizes): enough
//! to prove the machinery and its verification work, not to quote. `--quick` is every figure
//! with the scale figures at their quick sizes in a few minutes per backend: 1 s windows, a
//! 5,000-run drain and a 2,000-run backlog beside the fairness figure's small tenants (flags
//! after it override its choices). `--scale quick` adds the
//! scale figures at sizes that keep a backend within minutes, `--scale full` at the sizes they
//! are defined at (long: by hand only); with a scale, the sweep's curve goes to
//! `target/bench/<backend>-curve.png`. Not part of `ci` (it needs a release build of its own).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::target_dir;
use crate::pgbouncer::PgBouncer;
use crate::{cargo, services, step, Result};

/// The backends `--backend all` runs, in order.
const BACKENDS: [&str; 4] = ["sqlite", "postgres", "postgres-pgbouncer", "redis"];

/// Parsed arguments.
struct Args {
    backends: Vec<&'static str>,
    seconds: String,
    concurrency: String,
    claim_pool: String,
    drain_runs: String,
    fairness_backlog: String,
    fairness_runs: String,
    scale: String,
}

fn parse(args: &[String]) -> Result<Args> {
    let mut parsed = Args {
        backends: BACKENDS.to_vec(),
        seconds: "10".into(),
        concurrency: "10".into(),
        claim_pool: "2000".into(),
        drain_runs: "20000".into(),
        fairness_backlog: "10000".into(),
        fairness_runs: "100".into(),
        scale: "off".into(),
    };
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let mut value = || {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--backend" => {
                let backends = value()?;
                parsed.backends = Vec::new();
                for name in backends.split(',') {
                    if name == "all" {
                        parsed.backends = BACKENDS.to_vec();
                        break;
                    }
                    parsed
                        .backends
                        .push(BACKENDS.into_iter().find(|b| *b == name).ok_or_else(|| {
                            format!(
                                "unknown backend {name:?}: sqlite, postgres, postgres-pgbouncer, \
                                 redis, all, or a comma-separated list"
                            )
                        })?);
                }
            }
            "--seconds" => parsed.seconds = value()?,
            "--concurrency" => parsed.concurrency = value()?,
            "--smoke" => {
                parsed.seconds = "0.5".into();
                parsed.claim_pool = "200".into();
                parsed.drain_runs = "200".into();
                parsed.fairness_backlog = "200".into();
                parsed.fairness_runs = "10".into();
                parsed.scale = "smoke".into();
            }
            "--quick" => {
                parsed.seconds = "1".into();
                parsed.drain_runs = "5000".into();
                parsed.fairness_backlog = "2000".into();
                parsed.scale = "quick".into();
            }
            "--scale" => parsed.scale = value()?,
            other => {
                return Err(format!(
                    "unexpected argument {other:?}; expected [--backend \
                     sqlite|postgres|postgres-pgbouncer|redis|all|A,B…] [--smoke|--quick] \
                     [--seconds S] [--concurrency N] [--scale off|smoke|quick|full]"
                ))
            }
        }
    }
    Ok(parsed)
}

/// `cargo xtask bench`.
pub fn run(args: &[String]) -> Result {
    let args = parse(args)?;
    if args.backends.iter().any(|b| *b != "sqlite") {
        services()?;
    }
    step("bench: building the release docket binary with every backend");
    cargo(&[
        "build",
        "--release",
        "--package",
        "docket-cli",
        "--all-features",
        "--bin",
        "docket",
    ])?;
    let target = target_dir()?;
    let docket = target.join("release").join("docket");
    let out = target.join("bench");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let commit = git_commit();
    let tag = std::process::id();
    let bouncer = if args.backends.contains(&"postgres-pgbouncer") {
        Some(PgBouncer::start()?)
    } else {
        None
    };
    let mut all = String::new();
    for backend in &args.backends {
        step(&format!("bench: {backend}"));
        let url = store_url(backend, &out, tag, bouncer.as_ref())?;
        let jsonl = out.join(format!("{backend}.jsonl"));
        let chart = out.join(format!("{backend}.png"));
        let mut command = Command::new(&docket);
        command
            .args(["bench", "--backend", &url])
            .args(["--seconds", &args.seconds])
            .args(["--concurrency", &args.concurrency])
            .args(["--claim-pool", &args.claim_pool])
            .args(["--drain-runs", &args.drain_runs])
            .args(["--fairness-backlog", &args.fairness_backlog])
            .args(["--fairness-runs", &args.fairness_runs])
            .args(["--scale", &args.scale])
            .arg("--json")
            .arg(&jsonl)
            .arg("--chart")
            .arg(&chart)
            .arg("--cleanup")
            .env("RUST_LOG", "error");
        if args.scale != "off" {
            command
                .arg("--curve")
                .arg(out.join(format!("{backend}-curve.png")));
        }
        if let Some(commit) = &commit {
            command.args(["--git-commit", commit]);
        }
        // The full scale figures take long (a million runs to seed, 10,000 wakeups at a 1 s poll).
        let limit = match args.scale.as_str() {
            "full" => Duration::from_secs(8 * 3_600),
            "quick" => Duration::from_secs(1_800),
            _ => Duration::from_secs(900),
        };
        run_bounded(&mut command, limit, backend)?;
        all.push_str(
            &std::fs::read_to_string(&jsonl)
                .map_err(|e| format!("cannot read {}: {e}", jsonl.display()))?,
        );
    }
    let combined = out.join("all.jsonl");
    std::fs::write(&combined, &all)
        .map_err(|e| format!("cannot write {}: {e}", combined.display()))?;
    if let (Some(direct), Some(pooled)) = (
        figure(&all, "postgres", "e2e_throughput"),
        figure(&all, "postgres-pooled", "e2e_throughput"),
    ) {
        println!(
            "\nPostgreSQL (c) end-to-end runs/s: direct {direct:.0} /s; through PgBouncer \
             (transaction mode) {pooled:.0} /s: {:.2}× the direct figure",
            pooled / direct.max(f64::MIN_POSITIVE)
        );
    }
    eprintln!(
        "\nxtask bench: figures in {} (per backend: .jsonl, .png; every line: all.jsonl)",
        out.display()
    );
    Ok(())
}

/// The `value` of `figure` in the JSON lines of `backend` (std-only: our own output).
fn figure(jsonl: &str, backend: &str, figure: &str) -> Option<f64> {
    let line = jsonl.lines().find(|line| {
        line.contains(&format!("\"backend\":\"{backend}\""))
            && line.contains(&format!("\"figure\":\"{figure}\""))
    })?;
    let value = line.split_once("\"value\":")?.1;
    let end = value.find([',', '}']).unwrap_or(value.len());
    value[..end].trim().parse().ok()
}

/// A store that does not exist yet on `backend`'s local server.
fn store_url(backend: &str, out: &Path, tag: u32, bouncer: Option<&PgBouncer>) -> Result<String> {
    Ok(match backend {
        "sqlite" => {
            let file: PathBuf = out.join(format!("bench-{tag}.db"));
            for suffix in ["", "-wal", "-shm"] {
                let mut stale = file.clone().into_os_string();
                stale.push(suffix);
                let _ = std::fs::remove_file(stale);
            }
            format!("sqlite://{}", file.display())
        }
        "postgres" => {
            let base = std::env::var("DOCKET_TEST_POSTGRES_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
            let separator = if base.contains('?') { '&' } else { '?' };
            format!("{base}{separator}schema=docket_bench_{tag}")
        }
        "postgres-pgbouncer" => {
            let bouncer = bouncer.ok_or("postgres-pgbouncer needs the private PgBouncer")?;
            format!("{}&schema=docket_bench_{tag}_pooled", bouncer.docket_url())
        }
        "redis" => {
            let base = std::env::var("DOCKET_TEST_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
            let separator = if base.contains('?') { '&' } else { '?' };
            format!("{base}{separator}namespace=docket-bench-{tag}")
        }
        other => return Err(format!("unknown backend {other}")),
    })
}

/// `git rev-parse --short HEAD`, with `-dirty` when the work tree has changes.
fn git_commit() -> Option<String> {
    let output = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = output(&["rev-parse", "--short", "HEAD"]).filter(|c| !c.is_empty())?;
    let dirty = output(&["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    })
}

/// Runs `command` with inherited output; kills it after `limit`.
fn run_bounded(command: &mut Command, limit: Duration, backend: &str) -> Result {
    let mut child = command
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start docket bench: {e}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("docket bench on {backend} failed ({status})")),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "docket bench on {backend} did not finish within {limit:?}"
                ));
            }
            Err(e) => return Err(format!("docket bench on {backend}: {e}")),
        }
    }
}
