//! The `docket` command-line interface: `docket demo` (the main job), `docket worker`, and
//! administration commands over any backend URL. See `docket --help`.

#[macro_use]
mod cli;

use std::process::ExitCode;

use clap::Parser;

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
