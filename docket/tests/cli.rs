//! The `docket` binary: the demo's summary, start-up refusal of a misconfigured worker, and
//! the administration commands end to end on a SQLite file.

use std::path::Path;
use std::process::{Command, Output};

fn docket(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .expect("the docket binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sqlite_url(dir: &Path, file: &str) -> String {
    format!("sqlite://{}", dir.join(file).display())
}

#[test]
fn the_demo_finishes_every_run_and_recovers_the_killed_workers_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "d.db");
    let out = docket(&["demo", "--runs", "20", "--backend", &url]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("result: OK"), "{stdout}");
    assert!(
        !stdout.contains('✗'),
        "every graph has its expected status:\n{stdout}"
    );
    for graph in ["approval", "retry", "fanout", "cycle"] {
        assert!(stdout.contains(graph), "{graph} row missing:\n{stdout}");
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with("recovery: "))
        .unwrap_or_else(|| panic!("no recovery line:\n{stdout}"));
    let recovered: usize = line
        .trim_start_matches("recovery: ")
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("malformed recovery line {line:?}"));
    assert!(recovered >= 1, "{line}");
}

#[test]
fn a_misconfigured_worker_is_refused_at_start_up_naming_the_options() {
    let out = docket(&[
        "worker",
        "--backend",
        "memory://",
        "--orphan-ttl-ms",
        "1000",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("orphan_ttl_ms"), "{stderr}");
    assert!(stderr.contains("drain_budget.max_elapsed_ms"), "{stderr}");
    let out = docket(&[
        "worker",
        "--backend",
        "memory://",
        "--max-attempt-elapsed-ms",
        "5000",
    ]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("max_attempt_elapsed_ms"));
}

/// Only without the `postgres` feature: with it, the URL is a real backend (`tests/postgres.rs`).
#[cfg(not(feature = "postgres"))]
#[test]
fn a_backend_url_that_is_not_available_names_what_to_do() {
    let out = docket(&["run", "list", "--backend", "postgres://127.0.0.1/test"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("postgres"), "{stderr}");
    assert!(stderr.contains("feature"), "{stderr}");
}

#[test]
fn publish_start_work_inspect_verify_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "admin.db");
    let graph = dir.path().join("gate.json");
    std::fs::write(
        &graph,
        r#"{"schema_version": 1, "id": "gate",
            "fields": {"approved": {"schema": {"type": "boolean"}}},
            "outputs": {"approved": {}},
            "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
            "edges": {"b": {"from": "$start", "to": "approve"}, "e": {"from": "approve", "to": "$finish"}}}"#,
    )
    .expect("write graph");
    let published = docket(&[
        "graph",
        "publish",
        graph.to_str().expect("path"),
        "--backend",
        &url,
    ]);
    assert!(published.status.success(), "{}", text(&published.stderr));
    assert!(text(&published.stdout).starts_with("gate@"));
    let started = docket(&["run", "start", "gate", "--backend", &url]);
    assert!(started.status.success(), "{}", text(&started.stderr));
    let run_id = text(&started.stdout).trim().to_owned();
    let idle = [
        "worker",
        "--backend",
        &url,
        "--until-idle",
        "--poll-interval-ms",
        "50",
        "--idle-check-ms",
        "50",
    ];
    assert!(docket(&idle).status.success());
    let shown = text(&docket(&["run", "show", &run_id, "--json", "--backend", &url]).stdout);
    assert!(shown.contains("\"status\": \"waiting\""), "{shown}");
    assert!(shown.contains("\"approve\""), "{shown}");
    let resolved = docket(&[
        "interrupt",
        "resolve",
        &run_id,
        "approve",
        "true",
        "--backend",
        &url,
    ]);
    assert!(resolved.status.success(), "{}", text(&resolved.stderr));
    assert!(docket(&idle).status.success());
    let listed = text(
        &docket(&[
            "run",
            "list",
            "--status",
            "done",
            "--json",
            "--backend",
            &url,
        ])
        .stdout,
    );
    assert!(listed.contains(&run_id), "{listed}");
    let events = text(&docket(&["events", &run_id, "--json", "--backend", &url]).stdout);
    assert!(events.contains("interrupt_resolved"), "{events}");
    let verified = docket(&["run", "verify", "--expect-terminal", "--backend", &url]);
    assert!(verified.status.success(), "{}", text(&verified.stdout));
    assert!(text(&verified.stdout).contains("verified 1 runs: 0 with violations"));
}

#[test]
#[cfg(feature = "conformance")]
fn the_conformance_command_reports_each_family_of_the_suite() {
    let out = docket(&[
        "conformance",
        "--backend",
        "memory://",
        "--filter",
        "transitions__",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.starts_with("transitions"))
        .expect("a transitions row");
    let passed: usize = row
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a passed count");
    assert!(passed > 50, "{row}");
    assert!(
        stdout.contains(&format!("all {passed} cases passed")),
        "{stdout}"
    );
    assert!(
        !stdout.lines().any(|l| l.starts_with("claims")),
        "the filter selects one family: {stdout}"
    );
}

/// The exit status and stderr of a command that must be refused with a typed error: exit 1,
/// never the 101 of a panic.
fn refused(args: &[&str]) -> String {
    let out = docket(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

#[test]
fn a_huge_sqlite_busy_timeout_is_refused_with_its_range_instead_of_panicking() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!(
        "{}?busy_timeout_ms=3000000000",
        sqlite_url(dir.path(), "t.db")
    );
    let stderr = refused(&["run", "list", "--backend", &url]);
    assert!(stderr.contains("busy_timeout_ms"), "{stderr}");
    assert!(stderr.contains("0..=3600000"), "{stderr}");
    assert!(
        !dir.path().join("t.db").exists(),
        "refused before the file is created"
    );
}
