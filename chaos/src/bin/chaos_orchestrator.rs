//! `chaos-orchestrator --backend <sqlite|postgres|redis> --seed S --runs N --workers W
//! [--duration SECONDS] [--out DIR]`: one process-level chaos run (what `cargo xtask chaos`
//! builds and executes). Prints the command that reproduces it, the headline and the
//! ambiguous-commit counts, writes the table and JSON into `--out`, and exits 1 when any
//! safety figure is non-zero or a run is stuck (2 on a harness failure).

use std::process::ExitCode;

use docket_chaos::process::options::Options;
use docket_chaos::process::orchestrate;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match Options::parse(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("chaos: {e}");
            return ExitCode::from(2);
        }
    };
    eprintln!("chaos: reproduce with: {}", options.command());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("chaos: no runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Ctrl-C or SIGTERM drops the run: the private server is stopped and the workers killed
    // by their owners' `Drop`, never left behind.
    let outcome = runtime.block_on(async {
        let run = orchestrate::run(&options);
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                outcome = run => Some(outcome),
                _ = tokio::signal::ctrl_c() => None,
                _ = term.recv() => None,
            },
            Err(_) => tokio::select! {
                outcome = run => Some(outcome),
                _ = tokio::signal::ctrl_c() => None,
            },
        }
    });
    drop(runtime);
    let Some(outcome) = outcome else {
        eprintln!("chaos: interrupted; reproduce with: {}", options.command());
        return ExitCode::from(2);
    };
    let report = match outcome {
        Ok(report) => report,
        Err(e) => {
            eprintln!(
                "chaos: the harness failed: {e}\nreproduce with: {}",
                options.command()
            );
            return ExitCode::from(2);
        }
    };
    let written = report.write(&options.out);
    println!("{}", report.table());
    println!("{}", report.headline());
    println!("{}", report.ambiguous_line());
    println!("reproduce: {}", report.command);
    match written {
        Ok(path) => println!("report: {}", path.display()),
        Err(e) => eprintln!("chaos: cannot write the report: {e}"),
    }
    if report.is_safe() {
        ExitCode::SUCCESS
    } else {
        eprintln!("chaos: UNSAFE — reproduce with: {}", report.command);
        ExitCode::from(1)
    }
}
