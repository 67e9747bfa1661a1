//! The orchestrator's command line, and the one command that reproduces a run.

use std::path::PathBuf;
use std::time::Duration;

use crate::process::plan::Budget;

/// Which store the worker processes share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// One SQLite file in the run's directory.
    Sqlite,
    /// A private PostgreSQL cluster behind the reply-dropping proxy.
    Postgres,
    /// A private `redis-server` behind the reply-dropping proxy.
    Redis,
}

impl BackendKind {
    /// Its name on the command line and in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Sqlite => "sqlite",
            BackendKind::Postgres => "postgres",
            BackendKind::Redis => "redis",
        }
    }

    /// Whether it has a server to restart and a connection to cut.
    #[must_use]
    pub fn has_server(self) -> bool {
        self != BackendKind::Sqlite
    }
}

/// A deliberately broken worker (see [`crate::mutant`]); the oracle must fail the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutant {
    /// The store ignores claim tokens (learned across processes through files).
    TokenBlind,
    /// The engine takes an ambiguous commit as landed.
    AssumeLanded,
    /// The engine retries an ambiguous commit blindly.
    BlindRetry,
}

impl Mutant {
    /// `token-blind`, `assume-landed` or `blind-retry`.
    ///
    /// # Errors
    /// Any other name.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "token-blind" => Ok(Mutant::TokenBlind),
            "assume-landed" => Ok(Mutant::AssumeLanded),
            "blind-retry" => Ok(Mutant::BlindRetry),
            other => Err(format!(
                "unknown mutant {other:?} (token-blind, assume-landed, blind-retry)"
            )),
        }
    }

    /// Its name on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mutant::TokenBlind => "token-blind",
            Mutant::AssumeLanded => "assume-landed",
            Mutant::BlindRetry => "blind-retry",
        }
    }
}

/// `--backend <sqlite|postgres|redis> --seed S --runs N --workers W [--duration T] [--out DIR]`.
#[derive(Clone, Debug)]
pub struct Options {
    /// The store.
    pub backend: BackendKind,
    /// The seed every fault derives from.
    pub seed: u64,
    /// Runs to start.
    pub runs: u64,
    /// Worker processes.
    pub workers: usize,
    /// Longest faulted phase (seconds on the command line); the heal phase follows it.
    pub duration: Duration,
    /// Where reports go (`target/chaos` by default); each run's files go in a subdirectory.
    pub out: PathBuf,
    /// The workers' orphan TTL: a frozen worker is held past it.
    pub orphan_ttl_ms: u64,
    /// A deliberately broken worker (`--mutant`, tests of the oracle only).
    pub mutant: Option<Mutant>,
    /// Fault counts overriding the default budget for the runs (`--kills`, `--freezes`,
    /// `--restarts`, `--drops`), each `None` when not given.
    pub overrides: [Option<u64>; 4],
}

/// The usage line.
pub const USAGE: &str = "usage: chaos-orchestrator --backend <sqlite|postgres|redis> --seed S \
                         --runs N --workers W [--duration SECONDS] [--out DIR] [--mutant NAME] [--kills K] [--freezes F] [--restarts R] [--drops D]";

impl Options {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    /// An unknown flag, a missing value, or a value out of range.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Options {
            backend: BackendKind::Sqlite,
            seed: 1,
            runs: 1_000,
            workers: 4,
            duration: Duration::from_secs(600),
            out: PathBuf::from("target/chaos"),
            orphan_ttl_ms: 800,
            mutant: None,
            overrides: [None; 4],
        };
        let mut backend = None;
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it
                .next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{flag} needs a number, got {value:?}"))
            };
            match flag.as_str() {
                "--backend" => {
                    backend = Some(match value.as_str() {
                        "sqlite" => BackendKind::Sqlite,
                        "postgres" => BackendKind::Postgres,
                        "redis" => BackendKind::Redis,
                        other => return Err(format!("unknown backend {other:?}\n{USAGE}")),
                    });
                }
                "--seed" => options.seed = number()?,
                "--runs" => options.runs = number()?.max(8),
                "--workers" => {
                    options.workers = usize::try_from(number()?.clamp(2, 32)).unwrap_or(2);
                }
                "--duration" => options.duration = Duration::from_secs(number()?.max(5)),
                "--out" => options.out = PathBuf::from(value),
                "--mutant" => options.mutant = Some(Mutant::parse(value)?),
                "--kills" => options.overrides[0] = Some(number()?),
                "--freezes" => options.overrides[1] = Some(number()?),
                "--restarts" => options.overrides[2] = Some(number()?),
                "--drops" => options.overrides[3] = Some(number()?),
                other => return Err(format!("unknown flag {other}\n{USAGE}")),
            }
        }
        options.backend = backend.ok_or_else(|| format!("--backend is required\n{USAGE}"))?;
        Ok(options)
    }

    /// The fault budget: the default for the runs and backend, with any overrides.
    #[must_use]
    pub fn budget(&self) -> Budget {
        let default = Budget::for_runs(self.runs, self.backend.has_server());
        let [kills, freezes, restarts, drops] = self.overrides;
        // No server, nothing to restart or cut, whatever was asked.
        let server = |n: u64| if self.backend.has_server() { n } else { 0 };
        Budget {
            kills: kills.unwrap_or(default.kills),
            freezes: freezes.unwrap_or(default.freezes),
            restarts: server(restarts.unwrap_or(default.restarts)),
            drops: server(drops.unwrap_or(default.drops)),
        }
    }

    /// The command that reproduces this run.
    #[must_use]
    pub fn command(&self) -> String {
        let mut mutant = self
            .mutant
            .map(|m| format!(" --mutant {}", m.name()))
            .unwrap_or_default();
        for (flag, value) in ["--kills", "--freezes", "--restarts", "--drops"]
            .iter()
            .zip(self.overrides)
        {
            if let Some(n) = value {
                mutant.push_str(&format!(" {flag} {n}"));
            }
        }
        format!(
            "cargo xtask chaos --backend {} --seed {} --runs {} --workers {} --duration {}{mutant}",
            self.backend.name(),
            self.seed,
            self.runs,
            self.workers,
            self.duration.as_secs()
        )
    }
}
