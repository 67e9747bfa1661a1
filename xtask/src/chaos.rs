//! `cargo xtask chaos --backend <sqlite|postgres|redis> --seed S --runs N --workers W
//! [--duration T]`: the process-level chaos run of issue 14.
//!
//! xtask stays std-only: it builds the `docket-chaos` binaries (`chaos-orchestrator`, the
//! tokio side: private servers, the reply-dropping proxy, the oracle; and `chaos-worker`, one
//! engine per process) and executes the orchestrator with the same arguments plus
//! `--out <target>/chaos`. The orchestrator starts W worker processes on the chosen store
//! (PostgreSQL and Redis: a private server it starts, crash-restarts and stops itself, behind
//! its proxy; never the shared services), starts N runs, fires the seeded kills, freezes past
//! the orphan TTL, restarts and dropped replies as the runs settle, heals, and has the oracle
//! read the store and every worker's journal. It prints the command that reproduces the run,
//! a table, the headline and the ambiguous-commit counts, writes `<backend>-seed<S>.json`
//! and `.txt` under `target/chaos/`, and exits non-zero when anything was lost, duplicated
//! or accepted stale, or a run is stuck.
//!
//! `cargo xtask chaos --smoke` runs what `ci` runs: seed 1, 60 runs, two workers, on each
//! backend in turn.
//!
//! The binaries are built in the dev profile: the workspace's dev profile already optimises
//! every dependency (`opt-level = 1`), and `ci` has built those artifacts, so a release build
//! would only add minutes of compiling for no change in what the run proves.

use std::process::Command;
use std::time::Instant;

use crate::cli::target_dir;
use crate::{cargo, step, Result};

/// The `ci` smoke: runs per backend (with two workers, a handful of each fault).
const CI_RUNS: &str = "60";

/// `cargo xtask chaos …`.
pub fn run(args: &[String]) -> Result {
    if args == ["--smoke"] {
        return smoke();
    }
    if !args.iter().any(|a| a == "--backend") {
        return Err(
            "usage: cargo xtask chaos --backend <sqlite|postgres|redis> --seed S --runs N \
             --workers W [--duration SECONDS] | cargo xtask chaos --smoke"
                .into(),
        );
    }
    build()?;
    orchestrate(args)
}

fn build() -> Result {
    cargo(&[
        "build",
        "--package",
        "docket-chaos",
        "--bin",
        "chaos-orchestrator",
        "--bin",
        "chaos-worker",
    ])
}

fn orchestrate(args: &[String]) -> Result {
    let target = target_dir()?;
    let binary = target.join("debug").join("chaos-orchestrator");
    step(&format!("chaos {}", args.join(" ")));
    let started = Instant::now();
    let status = Command::new(&binary)
        .args(args)
        .arg("--out")
        .arg(target.join("chaos"))
        .status()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if status.success() {
        eprintln!("chaos: passed in {:.1?}", started.elapsed());
        Ok(())
    } else {
        Err(format!(
            "chaos {} failed ({status}); the report is under {}",
            args.join(" "),
            target.join("chaos").display()
        ))
    }
}

/// The fixed-seed smoke `ci` runs: 60 runs on two worker processes with 8 kills, 3 freezes,
/// 2 server restarts and 8 armed drops, on SQLite, then a private PostgreSQL, then a private
/// Redis (a missing server binary fails it).
pub fn smoke() -> Result {
    build()?;
    for backend in ["sqlite", "postgres", "redis"] {
        let args: Vec<String> = [
            "--backend",
            backend,
            "--seed",
            "1",
            "--runs",
            CI_RUNS,
            "--workers",
            "2",
            "--duration",
            "120",
            // More faults than the default budget for 60 runs: a handful of each kind.
            "--kills",
            "8",
            "--freezes",
            "3",
            "--restarts",
            "2",
            "--drops",
            "8",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        orchestrate(&args)?;
    }
    Ok(())
}
