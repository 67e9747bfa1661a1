//! `docket conformance --backend URL`: the shared conformance suite against any backend URL,
//! printed family by family.
//!
//! The URL chooses the backend and the server; every case still gets its own isolated store,
//! exactly as in the test suites: a temp file per case for `sqlite://` (the URL's options
//! apply, its path does not), a fresh schema per case in the URL's database for `postgres://`
//! (dropped afterwards), a fresh key namespace per case for `redis://` (deleted afterwards), a
//! new store per case for `memory://`. Nothing outside those is read or written.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use docket::connect::BackendUrl;
use docket::DocketError;
use docket_conformance::{run_observed, CaseInfo, Harness, Report};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::CliResult;

/// Options of `docket conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// Run only the cases whose `family__case` name contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Print every case as it finishes instead of a progress bar.
    #[arg(long)]
    verbose: bool,
}

/// Runs the suite against the backend of `url` and prints the per-family report; exits 1
/// when any case failed.
///
/// # Errors
/// An unknown scheme, a backend compiled out, or a malformed URL.
pub async fn run(url: &str, args: ConformanceArgs) -> CliResult {
    let report = match BackendUrl::parse(url)? {
        BackendUrl::Memory => suite(&docket_conformance::memory::MemoryHarness, &args).await,
        BackendUrl::Sqlite(url) => sqlite(&url, &args).await?,
        BackendUrl::Postgres(url) => postgres(&url, &args).await?,
        BackendUrl::Redis(url) => redis(&url, &args).await?,
    };
    out_text!("{report}");
    if report.is_success() {
        if report.skipped() == 0 {
            out!("conformance: all {} cases passed", report.total());
        } else {
            out!(
                "conformance: all {} cases that ran passed; {} skipped (see SKIPPED above)",
                report.total(),
                report.skipped()
            );
        }
        Ok(ExitCode::SUCCESS)
    } else {
        out!(
            "conformance: {} of {} cases failed",
            report.failed(),
            report.total()
        );
        Ok(ExitCode::FAILURE)
    }
}

async fn suite<H: Harness>(harness: &H, args: &ConformanceArgs) -> Report {
    let selected = |case: &CaseInfo| {
        args.filter
            .as_deref()
            .is_none_or(|f| format!("{}__{}", case.family, case.name).contains(f))
    };
    let total = docket_conformance::cases()
        .iter()
        .filter(|c| selected(c))
        .count();
    let bar = ProgressBar::new(total as u64);
    if args.verbose || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = run_observed(harness, selected, |case, outcome| {
        if args.verbose {
            out!("{}__{} ... {}", case.family, case.name, outcome.verdict());
        }
        bar.set_message(format!("{}__{}", case.family, case.name));
        bar.inc(1);
    })
    .await;
    bar.finish_and_clear();
    report
}

#[cfg(feature = "sqlite")]
async fn sqlite(url: &str, args: &ConformanceArgs) -> Result<Report, DocketError> {
    let parsed = docket_sqlite::parse_url(url)?;
    out!(
        "conformance: SQLite with the URL's options; each case uses its own temporary \
         database file (not {})",
        parsed.path.display()
    );
    Ok(suite(&docket_sqlite::testing::SqliteHarness::new(parsed), args).await)
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_url: &str, _args: &ConformanceArgs) -> Result<Report, DocketError> {
    Err(compiled_out("sqlite"))
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str, args: &ConformanceArgs) -> Result<Report, DocketError> {
    // Checked here for a clear error; the harness reads the URL's Docket parameters itself
    // (pooler=transaction, listen_url, poll_only: a whole suite behind a pooler).
    docket_postgres::parse_url(url)?;
    out!(
        "conformance: PostgreSQL; each case uses its own fresh schema in that database \
         (dropped afterwards)"
    );
    let harness = docket_postgres::testing::PostgresHarness::new().url(url);
    Ok(suite(&harness, args).await)
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_url: &str, _args: &ConformanceArgs) -> Result<Report, DocketError> {
    Err(compiled_out("postgres"))
}

#[cfg(feature = "redis")]
async fn redis(url: &str, args: &ConformanceArgs) -> Result<Report, DocketError> {
    out!("conformance: Redis; each case uses its own fresh key namespace (deleted afterwards)");
    let server = url.split_once('?').map_or(url, |(base, _)| base);
    Ok(suite(&docket_redis::testing::RedisHarness::new(server), args).await)
}

#[cfg(not(feature = "redis"))]
async fn redis(_url: &str, _args: &ConformanceArgs) -> Result<Report, DocketError> {
    Err(compiled_out("redis"))
}

#[cfg_attr(
    all(feature = "sqlite", feature = "postgres", feature = "redis"),
    allow(dead_code)
)]
fn compiled_out(feature: &'static str) -> DocketError {
    DocketError::BackendFeatureDisabled {
        scheme: feature.to_owned(),
        feature,
    }
}
