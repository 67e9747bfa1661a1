//! The orchestrator's command line, and the one command that reproduces a run.

use std::path::PathBuf;
use std::time::Duration;

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
}

/// The usage line.
pub const USAGE: &str = "usage: chaos-orchestrator --backend <sqlite|postgres|redis> --seed S \
                         --runs N --workers W [--duration SECONDS] [--out DIR]";

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
                other => return Err(format!("unknown flag {other}\n{USAGE}")),
            }
        }
        options.backend = backend.ok_or_else(|| format!("--backend is required\n{USAGE}"))?;
        Ok(options)
    }

    /// The command that reproduces this run.
    #[must_use]
    pub fn command(&self) -> String {
        format!(
            "cargo xtask chaos --backend {} --seed {} --runs {} --workers {} --duration {}",
            self.backend.name(),
            self.seed,
            self.runs,
            self.workers,
            self.duration.as_secs()
        )
    }
}
