//! The `docket` command-line interface: `docket demo` (the main job), `docket worker`, and
//! administration commands over any backend URL. See `docket --help`.

#[macro_use]
mod cli;

use std::process::ExitCode;

use clap::Parser;

// The engine allocates many small, short-lived values per moment (the run document's maps,
// event payloads, encoded arguments); with glibc's allocator, malloc and free took a fifth of
// the process's CPU samples, a third of its time outside the kernel (`perf record` of `docket
// bench` on Redis, concurrency 10). mimalloc serves them from per-thread pages. Measured with
// `docket bench --seconds 2` (concurrency 10, same hour, two runs each): Redis end to end
// 1,201 / 1,213 → 2,096 / 1,882 runs/s (3-node graph); PostgreSQL and SQLite, bound by their
// server and their disk, were unchanged within run-to-run noise. The library itself sets no
// allocator: an application embedding `docket` chooses its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(args.default_log_filter())),
        )
        .with_writer(std::io::stderr)
        // A log line that cannot be written (stderr on a full disk) is dropped. With internal
        // error logging on, the subscriber would report it with `eprintln!`, which panics on
        // the same full stream — inside whichever engine task was logging.
        .log_internal_errors(false)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            note!("docket: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(cli::run(args)) {
        Ok(code) => code,
        Err(e) => {
            note!("docket: {e}");
            ExitCode::FAILURE
        }
    };
    if cli::output::stdout_failed() {
        note!("docket: the output could not be written to stdout");
        return ExitCode::FAILURE;
    }
    code
}
