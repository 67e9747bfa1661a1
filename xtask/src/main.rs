//! `cargo xtask`: project automation. Std-only, so it compiles in seconds.
//!
//! * `cargo xtask ci` — fmt check, clippy `-D warnings`, every test of every crate against the
//!   local PostgreSQL and Redis (started if installed but down; a missing server fails the run).
//!   `ci` also builds the documentation with rustdoc warnings denied, runs every example of
//!   the `docket` crate (`switch_backend` on SQLite, PostgreSQL and Redis) and packages every
//!   published crate (`library.rs`).
//! * `cargo xtask examples`, `cargo xtask package`, `cargo xtask docs` — those three checks
//!   alone.
//! * `cargo xtask layout` — the workspace's shape: the `docket` library has no CLI, bench or
//!   test dependency, and every store crate (the backends and `examples/custom-store`) has
//!   the same role files (also run by `ci`).
//! * `cargo xtask services` — make sure PostgreSQL and Redis answer, starting them if needed.
//! * `cargo xtask recovery` — the crash-recovery check: SIGKILL `docket demo` mid-run, then
//!   `docket worker --until-idle` on the same SQLite file must finish every run with a sound
//!   history (also run by `ci`).
//! * `cargo xtask redis-restart [--runs N]` — restart a private Redis server while
//!   `docket worker` processes drive N runs on it: they must reconnect, reload their scripts
//!   and finish every run with a sound history (run by `ci` with 60 runs).
//! * `cargo xtask pg-workers [--runs N] [--pgbouncer]` — two `docket worker` processes drain N
//!   demo runs (default 1,000) on one PostgreSQL schema; every history is checked and the split
//!   of the work printed (`ci` runs 150, directly and through PgBouncer). `--pgbouncer` sends
//!   every statement through a private PgBouncer in transaction mode (`pgbouncer.rs`).
//! * `cargo xtask ci` also runs the whole PostgreSQL conformance suite and the demo through
//!   that PgBouncer.
//! * `cargo xtask chaos --backend <sqlite|postgres|redis> --seed S --runs N --workers W
//!   [--duration T]` — the process-level chaos run (`chaos.rs`): W `chaos-worker` processes on
//!   the store (a private PostgreSQL or Redis behind a reply-dropping proxy), seeded SIGKILLs,
//!   SIGSTOPs past the orphan TTL, server crash-restarts and dropped replies, then the oracle;
//!   report under `target/chaos/`, non-zero exit on any loss, duplicate, stale acceptance or
//!   stuck run. `ci` runs a 60-run smoke per backend (alone: `cargo xtask chaos --smoke`).
//! * `cargo xtask pg-plan [--runs N]` — prints the plan of the claim statement over N pending
//!   runs (default 100,000, also in `ci`) and fails on a sequential scan of the runs table.

mod bench;
mod chaos;
mod cli;
mod layout;
mod library;
mod pgbouncer;
mod postgres;
mod recovery;
mod redis_restart;
mod redis_server;

use std::env;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("services") => services(),
        Some("recovery") => recovery::run(),
        Some("redis-restart") => redis_restart::run(rest),
        Some("pg-workers") => {
            postgres::workers_args(rest, PG_WORKERS_RUNS).and_then(|(runs, pooled)| {
                services()?;
                if pooled {
                    let bouncer = pgbouncer::PgBouncer::start()?;
                    postgres::workers(runs, Some(&bouncer))
                } else {
                    postgres::workers(runs, None)
                }
            })
        }
        Some("bench") => bench::run(rest),
        Some("chaos") => chaos::run(rest),
        Some("examples") => services().and_then(|()| library::examples()),
        Some("package") => library::package(),
        Some("docs") => library::quick_start_matches().and_then(|()| library::docs()),
        Some("layout") => {
            layout::library_is_only_a_library().and_then(|()| layout::stores_share_one_skeleton())
        }
        Some("pg-plan") => postgres::runs_arg(rest, PG_PLAN_RUNS)
            .and_then(|runs| services().and_then(|()| postgres::plan(runs))),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|layout|services|recovery|redis-restart [--runs N]|\
                 pg-workers [--runs N] [--pgbouncer]|pg-plan [--runs N]|\
                 chaos --backend B --seed S --runs N --workers W [--duration T]|chaos --smoke|\
                 bench [--backend sqlite|postgres|redis|all] [--smoke]|examples|package|docs>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

type Result<T = ()> = std::result::Result<T, String>;

/// Demo runs of `cargo xtask pg-workers` (issue 5: two worker processes drain 1,000 runs).
const PG_WORKERS_RUNS: usize = 1_000;
/// The smaller drain `ci` runs.
const CI_PG_WORKERS_RUNS: usize = 150;
/// Pending runs of `cargo xtask pg-plan`, in `ci` too (issue 5: 100,000).
const PG_PLAN_RUNS: usize = 100_000;

pub(crate) fn cargo(args: &[&str]) -> Result {
    cargo_with_env(args, &[])
}

/// `cargo args…` with extra environment variables.
pub(crate) fn cargo_with_env(args: &[&str], vars: &[(&str, &str)]) -> Result {
    step(&format!("cargo {}", args.join(" ")));
    for (name, value) in vars {
        eprintln!("    with {name}={value}");
    }
    let status = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .envs(vars.iter().copied())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

pub(crate) fn step(what: &str) {
    eprintln!("\n==> {what}");
}

/// Random histories of each model test in the conformance run through PgBouncer.
const POOLED_MODEL_CASES: &str = "32";

/// Runs of the Redis restart check in `ci`: enough to restart mid-way, small enough for seconds.
const CI_RESTART_RUNS: &str = "60";

fn ci() -> Result {
    let started = Instant::now();
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ])?;
    layout::library_is_only_a_library()?;
    layout::stores_share_one_skeleton()?;
    library::quick_start_matches()?;
    let docs = Instant::now();
    library::docs()?;
    let docs = docs.elapsed();
    services()?;
    cargo(&["test", "--workspace", "--all-features"])?;
    let library = Instant::now();
    library::examples()?;
    library::package()?;
    let library = library.elapsed();
    recovery::run()?;
    let redis = Instant::now();
    redis_restart::run(&["--runs".to_owned(), CI_RESTART_RUNS.to_owned()])?;
    let redis = redis.elapsed();
    let postgres = Instant::now();
    postgres::workers(CI_PG_WORKERS_RUNS, None)?;
    postgres::plan(PG_PLAN_RUNS)?;
    let postgres = postgres.elapsed();
    let pooled = Instant::now();
    behind_pgbouncer()?;
    let pooled = pooled.elapsed();
    let chaos = Instant::now();
    chaos::smoke()?;
    let chaos = chaos.elapsed();
    eprintln!(
        "\nxtask ci: all green in {:.0?} (docs: {docs:.1?}; examples and packaging: \
         {library:.1?}; Redis restart: {redis:.1?}; PostgreSQL checks: {postgres:.1?}; \
         through PgBouncer: {pooled:.1?}; process-level chaos smoke: {chaos:.1?})",
        started.elapsed(),
    );
    Ok(())
}

/// Everything PostgreSQL-facing again through a private PgBouncer in transaction mode: the
/// whole conformance suite (the test binary `cargo test --workspace --all-features` built;
/// only its `postgres::` cases run), the two-worker drain and the demo.
///
/// The two model tests replay [`POOLED_MODEL_CASES`] random histories here instead of their
/// default 256: the direct run above already compared all 256 with the memory store, and
/// through the pooler every statement is a transaction of its own with its settings in front
/// (`docket-postgres/src/pooler.rs`), so the full count made this phase about half of CI.
/// What the pooler can break (statements, settings, prepared names) every case still meets.
fn behind_pgbouncer() -> Result {
    let bouncer = pgbouncer::PgBouncer::start()?;
    let url = bouncer.docket_url();
    let suite = Instant::now();
    cargo_with_env(
        &[
            "test",
            "--workspace",
            "--all-features",
            "--test",
            "conformance",
            "--",
            "postgres::",
        ],
        &[
            ("DOCKET_TEST_POSTGRES_URL", &url),
            ("DOCKET_CONFORMANCE_CASES", POOLED_MODEL_CASES),
        ],
    )?;
    eprintln!(
        "pgbouncer: the PostgreSQL conformance suite passed through PgBouncer in {:.1?}",
        suite.elapsed()
    );
    postgres::workers(CI_PG_WORKERS_RUNS, Some(&bouncer))?;
    postgres::demo_through(&bouncer)
}

fn services() -> Result {
    step("services: PostgreSQL 127.0.0.1:5432 and Redis 127.0.0.1:6379");
    ensure_service(
        "PostgreSQL",
        "127.0.0.1:5432",
        "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
        "apt-get install -y postgresql",
    )?;
    ensure_service(
        "Redis",
        "127.0.0.1:6379",
        "redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save '' --appendonly no",
        "apt-get install -y redis-server",
    )
}

fn reachable(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .ok()
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_millis(500)).is_ok())
}

fn ensure_service(name: &str, addr: &str, start: &str, install: &str) -> Result {
    if reachable(addr) {
        eprintln!("{name} answers on {addr}");
        return Ok(());
    }
    eprintln!("{name} is not answering on {addr}; starting it: {start}");
    let status = Command::new("sh").arg("-c").arg(start).status();
    if !status.is_ok_and(|s| s.success()) {
        return Err(format!(
            "{name} is not running and could not be started; install it with `{install}`"
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if reachable(addr) {
            eprintln!("{name} answers on {addr}");
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("{name} was started but does not answer on {addr}"))
}
