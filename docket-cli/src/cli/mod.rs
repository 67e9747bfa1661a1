//! Command-line definitions (clap derive) and dispatch.

#[macro_use]
pub mod output;

mod admin;
mod bench;
mod bulk_start;
mod conformance;
mod demo;
mod json;
mod ops;
mod serve;
mod tenant;
mod verify;
mod worker;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use docket::connect::{redact, DEFAULT_URL};
use docket::{Docket, DocketError};

/// Durable, graph-shaped workflow runs with pluggable storage.
#[derive(Debug, Parser)]
#[command(name = "docket", version, about)]
pub struct Cli {
    /// Backend URL: sqlite://PATH, memory://, postgres://…[?schema=NAME] or
    /// redis://…[?namespace=NAME] [default: sqlite://docket.db; for `demo`:
    /// sqlite://docket-demo.db; a demo URL without schema= / namespace= uses (and empties)
    /// schema docket_demo / namespace docket-demo]
    #[arg(long, global = true, env = "DOCKET_BACKEND")]
    backend: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Publish the bundled example graphs, run them on an in-process worker pool, crash and
    /// recover a worker, resolve approvals, and print a summary (the main job).
    Demo(demo::DemoArgs),
    /// Run a worker pool until Ctrl-C (or, with --until-idle, until nothing is due).
    Worker(worker::WorkerArgs),
    /// Publish and list graphs.
    #[command(subcommand)]
    Graph(admin::GraphCommand),
    /// Start, inspect, cancel, retry and verify runs.
    #[command(subcommand)]
    Run(admin::RunCommand),
    /// Print the events of a run.
    Events(admin::EventsArgs),
    /// Resolve interrupts.
    #[command(subcommand)]
    Interrupt(admin::InterruptCommand),
    /// Show the operations a session holds in the store's operation registry.
    #[command(subcommand)]
    Ops(ops::OpsCommand),
    /// Set and show the weights and caps of tenant-fair claiming.
    #[command(subcommand)]
    Tenant(tenant::TenantCommand),
    /// Serve the operator console: a JSON API, pages and Prometheus metrics over the
    /// backend (`docs/console.md`).
    Serve(serve::ServeArgs),
    /// Create or upgrade the backend's schema.
    Migrate,
    /// Run the shared conformance suite against the backend of --backend (each case in its
    /// own temp file, schema or key namespace) and print the report per family.
    Conformance(conformance::ConformanceArgs),
    /// Measure throughput and latency beside raw floors on a fresh store (`BENCHMARKS.md`,
    /// “The figures”).
    Bench(bench::BenchArgs),
}

/// Options shared by commands that print data.
#[derive(Debug, Args, Clone, Copy)]
pub struct Format {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// An error to print, with the process exit status already decided.
pub type CliResult = Result<ExitCode, DocketError>;

impl Cli {
    /// The log filter used when `RUST_LOG` is unset: warnings, except for `conformance`, whose
    /// cases provoke poisonings and fence losses on purpose (their warnings would be noise).
    #[must_use]
    pub fn default_log_filter(&self) -> &'static str {
        match self.command {
            Command::Conformance(_) => "error",
            _ => "warn",
        }
    }
}

/// Runs one parsed command line.
///
/// # Errors
/// Whatever the command fails with (printed by `main`).
pub async fn run(cli: Cli) -> CliResult {
    let url = cli.backend.clone();
    match cli.command {
        Command::Demo(args) => {
            demo::run(url.as_deref().unwrap_or(demo::DEFAULT_DEMO_URL), args).await
        }
        Command::Worker(args) => worker::run(&backend_url(url.as_deref()), args).await,
        Command::Graph(cmd) => admin::graph(&connect(url.as_deref()).await?, cmd).await,
        Command::Run(cmd) => admin::run_command(&connect(url.as_deref()).await?, cmd).await,
        Command::Events(args) => admin::events(&connect(url.as_deref()).await?, args).await,
        Command::Interrupt(cmd) => admin::interrupt(&connect(url.as_deref()).await?, cmd).await,
        Command::Ops(cmd) => ops::ops(&connect(url.as_deref()).await?, cmd).await,
        Command::Tenant(cmd) => tenant::tenant(&connect(url.as_deref()).await?, cmd).await,
        Command::Conformance(args) => conformance::run(&backend_url(url.as_deref()), args).await,
        Command::Bench(args) => bench::run(url.as_deref(), args).await,
        Command::Serve(args) => serve::run(&backend_url(url.as_deref()), args).await,
        Command::Migrate => {
            let url = backend_url(url.as_deref());
            connect(Some(&url)).await?;
            out!("{}: schema is current", redact(&url));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn backend_url(url: Option<&str>) -> String {
    url.unwrap_or(DEFAULT_URL).to_owned()
}

async fn connect(url: Option<&str>) -> Result<Docket, DocketError> {
    Docket::connect(&backend_url(url)).await
}
