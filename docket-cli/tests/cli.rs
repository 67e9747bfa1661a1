//! The `docket` binary: the demo's summary, start-up refusal of a misconfigured worker, and
//! the administration commands end to end on a SQLite file.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use support::cli::IDLE_WORKER;

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
    // The flags reach the worker's configuration, which refuses an empty batch and no batch
    // slot (were one dropped, the idle worker would exit successfully).
    for (flag, option) in [
        ("--max-commit-batch", "max_commit_batch"),
        ("--commit-batches-in-flight", "commit_batches_in_flight"),
    ] {
        let out = docket(&[
            "worker",
            "--backend",
            "memory://",
            "--until-idle",
            flag,
            "0",
        ]);
        assert!(!out.status.success(), "{flag} 0 was accepted");
        assert!(text(&out.stderr).contains(option), "{}", text(&out.stderr));
    }
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

/// What values a URL option takes, to derive the values it must refuse.
#[derive(Clone, Copy, Debug)]
// Some kinds only occur in the options of backends compiled out of this build.
#[cfg_attr(not(all(feature = "postgres", feature = "redis")), allow(dead_code))]
enum OptionKind {
    /// An integer in `min..=max`.
    Number { min: u64, max: u64 },
    /// `true`/`false`.
    Bool,
    /// One of a few words.
    Choice(&'static str),
    /// A PostgreSQL schema name.
    Schema,
    /// A Redis key namespace.
    Namespace,
    /// A percent-encoded `postgres://` URL.
    ListenUrl,
}

impl OptionKind {
    /// A value the option accepts.
    fn valid(self) -> String {
        match self {
            OptionKind::Number { min, max } => min.max(1).min(max).to_string(),
            OptionKind::Bool => "false".into(),
            OptionKind::Choice(word) => word.into(),
            OptionKind::Schema => "docket_catalogue".into(),
            OptionKind::Namespace => "catalogue".into(),
            OptionKind::ListenUrl => "postgres%3A%2F%2Fpostgres%40127.0.0.1%2Ftest".into(),
        }
    }

    /// Values the option must refuse (`None`: the bare key without `=`).
    fn refused(self) -> Vec<Option<String>> {
        let long = Some("9".repeat(100_000));
        let mut values = vec![None, Some(String::new()), long];
        match self {
            OptionKind::Number { min, max } => {
                values.extend(
                    [
                        "abc",
                        "-1",
                        "1.5",
                        "1e3",
                        "+5",
                        " 5",
                        "0x10",
                        "18446744073709551616",
                    ]
                    .map(|v| Some(v.to_owned())),
                );
                values.push(Some((max + 1).to_string()));
                if min > 0 {
                    values.push(Some((min - 1).to_string()));
                }
            }
            OptionKind::Bool => values.extend(["maybe", "yes", "2"].map(|v| Some(v.to_owned()))),
            OptionKind::Choice(_) => values.extend(["off", "FULLY"].map(|v| Some(v.to_owned()))),
            OptionKind::Schema => values.extend(
                [
                    "Bad-Name",
                    "a;drop",
                    "1abc",
                    "information_schema",
                    "pg_catalog",
                    "public",
                ]
                .map(|v| Some(v.to_owned())),
            ),
            OptionKind::Namespace => {
                values.extend(["a*b", "{x}", "a b"].map(|v| Some(v.to_owned())));
            }
            OptionKind::ListenUrl => {
                values.extend(["mysql%3A%2F%2Fh%2Fdb", "%FF%FE"].map(|v| Some(v.to_owned())));
            }
        }
        values
    }
}

const MAX_MS: u64 = 3_600_000;

/// Every bad variant of every option of one backend, each refused with a typed error and no
/// panic. `base` ends with `?` or `&`; `catalogue` must name exactly the backend's options.
fn walk_options(
    backend: &str,
    base: &str,
    catalogue: &[(&str, OptionKind)],
    known: &[&str],
) -> usize {
    let mut named: Vec<&str> = catalogue.iter().map(|(name, _)| *name).collect();
    let mut known = known.to_vec();
    named.sort_unstable();
    known.sort_unstable();
    assert_eq!(named, known, "the catalogue walks every {backend} option");
    let mut urls = vec![format!("{base}no_such_option=1")];
    for (name, kind) in catalogue {
        let valid = kind.valid();
        urls.push(format!("{base}{name}={valid}&{name}={valid}"));
        for value in kind.refused() {
            urls.push(match value {
                Some(value) => format!("{base}{name}={value}"),
                None => format!("{base}{name}"),
            });
        }
    }
    for url in &urls {
        let stderr = refused(&["run", "list", "--backend", url]);
        assert!(
            stderr.contains("invalid argument") || stderr.contains("invalid options"),
            "{backend}: {url:.200}: {stderr}"
        );
        assert!(
            stderr.len() < 2_000,
            "{backend}: long values are cut in messages, got {} bytes",
            stderr.len()
        );
    }
    urls.len()
}

#[test]
fn every_url_option_of_every_backend_refuses_bad_values_with_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = format!("{}?", sqlite_url(dir.path(), "catalogue.db"));
    let timeouts = [
        (
            "connect_timeout_ms",
            OptionKind::Number {
                min: 1,
                max: MAX_MS,
            },
        ),
        (
            "statement_timeout_ms",
            OptionKind::Number {
                min: 1,
                max: MAX_MS,
            },
        ),
    ];
    let mut checked = walk_options(
        "sqlite",
        &sqlite,
        &[
            ("synchronous", OptionKind::Choice("full")),
            (
                "busy_timeout_ms",
                OptionKind::Number {
                    min: 0,
                    max: MAX_MS,
                },
            ),
            ("readers", OptionKind::Number { min: 1, max: 64 }),
            (
                "ops_retention",
                OptionKind::Number {
                    min: 1,
                    max: u32::MAX as u64,
                },
            ),
            timeouts[0],
            timeouts[1],
        ],
        docket_sqlite::URL_OPTIONS,
    );
    assert!(
        !dir.path().join("catalogue.db").exists(),
        "every URL was refused before the file was created"
    );
    checked += walk_options("memory", "memory://?", &[], &[]);
    for url in ["memory://x", "memory://?a=1&a=1", "memory://?a"] {
        refused(&["run", "list", "--backend", url]);
    }
    #[cfg(feature = "postgres")]
    {
        let server = std::env::var("DOCKET_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let base = format!("{server}{}", if server.contains('?') { '&' } else { '?' });
        checked += walk_options(
            "postgres",
            &base,
            &[
                ("schema", OptionKind::Schema),
                ("pool_size", OptionKind::Number { min: 1, max: 1_000 }),
                ("poll_only", OptionKind::Bool),
                ("allow_public_schema", OptionKind::Bool),
                ("connect_timeout", OptionKind::Number { min: 1, max: 3_600 }),
                ("pooler", OptionKind::Choice("none")),
                ("listen_url", OptionKind::ListenUrl),
                (
                    "ops_retention",
                    OptionKind::Number {
                        min: 1,
                        max: u32::MAX as u64,
                    },
                ),
                timeouts[0],
                timeouts[1],
            ],
            docket_postgres::URL_OPTIONS,
        );
        refused(&[
            "run",
            "list",
            "--backend",
            &format!("{base}connect_timeout=1&connect_timeout_ms=1000"),
        ]);
        refused(&[
            "run",
            "list",
            "--backend",
            &format!("{base}sslmode=disable&sslmode=disable"),
        ]);
    }
    #[cfg(feature = "redis")]
    {
        let server = std::env::var("DOCKET_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let base = format!("{server}{}", if server.contains('?') { '&' } else { '?' });
        // Unknown parameters go to the Redis client; repeated ones are refused all the same.
        refused(&[
            "run",
            "list",
            "--backend",
            &format!("{base}protocol=resp2&protocol=resp2"),
        ]);
        let walked = walk_options(
            "redis",
            &format!("{base}protocol=resp2&"),
            &[
                ("namespace", OptionKind::Namespace),
                timeouts[0],
                timeouts[1],
                (
                    "ops_retention",
                    OptionKind::Number {
                        min: 1,
                        max: u32::MAX as u64,
                    },
                ),
            ],
            docket_redis::URL_OPTIONS,
        );
        checked += walked;
    }
    assert!(checked > 40, "{checked} URLs checked");
}

fn count_listed(url: &str, status: &str) -> usize {
    let out = docket(&[
        "run",
        "list",
        "--json",
        "--status",
        status,
        "--backend",
        url,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).matches("\"id\":").count()
}

#[test]
fn a_worker_says_at_start_up_how_it_claims_and_batches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "said.db");
    let idle: Vec<&str> = IDLE_WORKER
        .iter()
        .copied()
        .chain(["--backend", url.as_str()])
        .collect();
    for (flags, said) in [
        (
            &[
                "--max-commit-batch",
                "16",
                "--commit-batches-in-flight",
                "3",
            ][..],
            "(claim policy oldest; commits and starts in batches of up to 16, 3 in flight)",
        ),
        (
            &["--max-commit-batch", "1", "--claim-policy", "tenant-fair"][..],
            "(claim policy tenant_fair; every commit and start alone)",
        ),
    ] {
        let args: Vec<&str> = idle.iter().chain(flags).copied().collect();
        let out = docket(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(stderr.contains(said), "{flags:?}: {stderr}");
    }
}

#[test]
fn a_worker_whose_stderr_is_a_full_disk_keeps_draining_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "full.db");
    let demo = docket(&["demo", "--runs", "8", "--no-workers", "--backend", &url]);
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    assert_eq!(count_listed(&url, "running"), 8);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    // Debug logging: every engine task writes log lines, and every write fails.
    let out = support::cli::docket(&[&IDLE_WORKER[..], &["--backend", &url]].concat())
        .env("RUST_LOG", "debug")
        .stderr_to(full)
        .within(Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", out.stdout);
    // Two approval runs wait for a signal; every other run finished.
    assert_eq!(count_listed(&url, "running"), 0);
    assert_eq!(count_listed(&url, "waiting"), 2);
    assert_eq!(count_listed(&url, "done"), 6);
}

/// Makes a file unwritable for this process — by its mode, or, for root (whom modes do not
/// stop), with `chattr +i` — and undoes it on drop.
struct ReadOnlyFile {
    path: std::path::PathBuf,
    immutable: bool,
}

impl ReadOnlyFile {
    fn new(path: &Path) -> ReadOnlyFile {
        use std::os::unix::fs::PermissionsExt;
        let writable = || std::fs::OpenOptions::new().write(true).open(path).is_ok();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444))
            .expect("chmod the file");
        let mut file = ReadOnlyFile {
            path: path.to_owned(),
            immutable: false,
        };
        if writable() {
            let status = Command::new("chattr")
                .arg("+i")
                .arg(path)
                .status()
                .expect("chattr runs (needed to make a file read-only for root)");
            assert!(status.success(), "chattr +i {}", path.display());
            file.immutable = true;
        }
        assert!(!writable(), "{} is still writable", path.display());
        file
    }
}

impl Drop for ReadOnlyFile {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        if self.immutable {
            let _ = Command::new("chattr").arg("-i").arg(&self.path).status();
        }
        let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o644));
    }
}

#[test]
fn a_worker_on_a_read_only_database_exits_non_zero_instead_of_retrying_forever() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "ro.db");
    let demo = docket(&["demo", "--runs", "4", "--no-workers", "--backend", &url]);
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    let _read_only = ReadOnlyFile::new(&dir.path().join("ro.db"));
    let out = support::cli::docket(&[
        "worker",
        "--until-idle",
        "--poll-interval-ms",
        "20",
        "--idle-check-ms",
        "20",
        "--backend",
        &url,
    ])
    .within(Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(out.stderr.contains("worker stopped"), "{}", out.stderr);
    assert!(out.stderr.contains("readonly"), "{}", out.stderr);
}

#[test]
fn an_unbounded_cycle_is_warned_about_at_publication_and_stopped_by_the_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "cycle.db");
    let graph = dir.path().join("endless.json");
    std::fs::write(
        &graph,
        r#"{"schema_version": 1, "id": "endless",
            "fields": {"n": {"schema": {"type": "integer"}, "default": 0}},
            "nodes": {"inc": {"implementation": "std.increment", "config": {"field": "n"}}},
            "edges": {"begin": {"from": "$start", "to": "inc"},
                      "again": {"from": "inc", "to": "inc"}}}"#,
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
    assert!(text(&published.stdout).starts_with("endless@"));
    let warned = text(&published.stderr);
    assert!(warned.contains("unbounded_cycle"), "{warned}");
    let started = docket(&["run", "start", "endless", "--backend", &url]);
    assert!(started.status.success(), "{}", text(&started.stderr));
    let run_id = text(&started.stdout).trim().to_owned();
    let out = support::cli::docket(&[
        "worker",
        "--until-idle",
        "--max-supersteps",
        "30",
        "--poll-interval-ms",
        "50",
        "--idle-check-ms",
        "50",
        "--backend",
        &url,
    ])
    .within(Duration::from_secs(60));
    assert!(out.status.success(), "{}", out.stderr);
    let shown = text(&docket(&["run", "show", &run_id, "--json", "--backend", &url]).stdout);
    assert!(shown.contains("\"status\": \"failed\""), "{shown}");
    assert!(shown.contains("max_supersteps_exceeded"), "{shown}");
    assert!(shown.contains("\"step\": 30"), "{shown}");
}

#[test]
fn run_verify_covers_every_tenant_and_admin_commands_act_as_a_tenant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "tenants.db");
    let graph = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docket/graphs/approval.json"
    );
    let ok = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--backend", &url]);
        let out = docket(&all);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout).trim().to_owned()
    };
    ok(&["graph", "publish", graph]);
    ok(&["graph", "publish", graph, "--tenant", "acme"]);
    let input = r#"{"amount": 7}"#;
    let mine = ok(&["run", "start", "approval", "--input", input]);
    let theirs = ok(&[
        "run", "start", "approval", "--input", input, "--tenant", "acme",
    ]);
    assert!(ok(&["run", "list", "--json"]).contains(&mine));
    assert!(!ok(&["run", "list", "--json"]).contains(&theirs));
    let listed = ok(&["run", "list", "--json", "--tenant", "acme"]);
    assert!(
        listed.contains(&theirs) && !listed.contains(&mine),
        "{listed}"
    );
    let hidden = docket(&["run", "show", &theirs, "--backend", &url]);
    assert_eq!(
        hidden.status.code(),
        Some(1),
        "another owner's run is not found"
    );
    assert!(ok(&["graph", "list", "--json", "--tenant", "acme"]).contains("approval"));
    ok(&IDLE_WORKER);
    ok(&[
        "interrupt",
        "resolve",
        &theirs,
        "approve",
        "true",
        "--tenant",
        "acme",
    ]);
    ok(&IDLE_WORKER);
    assert!(ok(&["run", "show", &theirs, "--json", "--tenant", "acme"]).contains("\"done\""));
    assert!(ok(&["events", &theirs, "--json", "--tenant", "acme"]).contains("interrupt_resolved"));

    // The tenantless run still waits: verification sees it and the tenant's run.
    let verified = docket(&["run", "verify", "--expect-terminal", "--backend", &url]);
    let report = text(&verified.stdout);
    assert_eq!(verified.status.code(), Some(1), "{report}");
    assert!(
        report.contains("verified 2 runs: 1 with violations"),
        "{report}"
    );
    assert!(
        report.contains("tenant acme: 1 runs, 0 with violations"),
        "{report}"
    );
    assert!(
        report.contains("tenantless: 1 runs, 1 with violations"),
        "{report}"
    );
    let json = ok(&["run", "verify", "--json"]);
    assert!(json.contains("\"tenant\": \"acme\""), "{json}");
    ok(&["run", "cancel", &mine]);
    let verified = ok(&["run", "verify", "--expect-terminal"]);
    assert!(
        verified.contains("verified 2 runs: 0 with violations"),
        "{verified}"
    );
}

#[test]
fn duplicate_json_keys_are_refused_in_graphs_and_run_input_naming_the_key_and_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "dup.db");
    for (document, key, path) in [
        (
            r#"{"schema_version": 1, "id": "A", "id": "B",
                "nodes": {"a": {"implementation": "std.echo"}},
                "edges": {"b": {"from": "$start", "to": "a"}, "e": {"from": "a", "to": "$finish"}}}"#,
            "id",
            "/id",
        ),
        (
            r#"{"schema_version": 1, "id": "twice",
                "nodes": {"a": {"implementation": "std.echo"}, "a": {"implementation": "std.fail_times"}},
                "edges": {"b": {"from": "$start", "to": "a"}, "e": {"from": "a", "to": "$finish"}}}"#,
            "a",
            "/nodes/a",
        ),
    ] {
        let file = dir.path().join("dup.json");
        std::fs::write(&file, document).expect("write graph");
        let stderr = refused(&[
            "graph",
            "publish",
            file.to_str().expect("path"),
            "--backend",
            &url,
        ]);
        assert!(stderr.contains("duplicate_key"), "{stderr}");
        assert!(stderr.contains(&format!("{key:?}")), "{stderr}");
        assert!(stderr.contains(path), "{stderr}");
    }
    let listed = docket(&[
        "graph",
        "list",
        "A",
        "B",
        "twice",
        "--json",
        "--backend",
        &url,
    ]);
    assert_eq!(text(&listed.stdout).trim(), "[]", "nothing was published");

    let graph = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docket/graphs/approval.json"
    );
    assert!(docket(&["graph", "publish", graph, "--backend", &url])
        .status
        .success());
    let stderr = refused(&[
        "run",
        "start",
        "approval",
        "--input",
        r#"{"amount": 1, "amount": 2}"#,
        "--backend",
        &url,
    ]);
    assert!(
        stderr.contains(r#"duplicate key "amount" at /amount"#),
        "{stderr}"
    );
    let listed = docket(&["run", "list", "--json", "--backend", &url]);
    assert_eq!(text(&listed.stdout).trim(), "[]", "no run was started");
}

#[test]
fn long_values_are_cut_in_error_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "long.db");
    let graph = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docket/graphs/approval.json"
    );
    assert!(docket(&["graph", "publish", graph, "--backend", &url])
        .status
        .success());
    let started = docket(&[
        "run",
        "start",
        "approval",
        "--input",
        r#"{"amount": 3}"#,
        "--backend",
        &url,
    ]);
    let run_id = text(&started.stdout).trim().to_owned();
    assert!(started.status.success(), "{}", text(&started.stderr));
    let long = "x".repeat(100_000);
    let long_key_input = format!(r#"{{"{long}": 1}}"#);
    for args in [
        vec!["run", "start", "approval", "--input", &long_key_input],
        vec!["interrupt", "resolve", &run_id, &long, "true"],
        vec!["run", "list", "--status", &long],
        vec!["run", "show", &long],
        vec!["graph", "list", &long],
    ] {
        let mut all = args.clone();
        all.extend(["--backend", &url]);
        let stderr = refused(&all);
        assert!(
            stderr.len() < 1_000,
            "{:?}: {} bytes: {:.300}",
            &args[..2],
            stderr.len(),
            stderr
        );
    }
}

#[test]
fn run_input_comes_from_a_file_or_stdin_and_bad_input_shows_the_parser_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "input.db");
    publish_text_graph(dir.path(), &url);
    // 5 MB: far beyond what a command line carries.
    let big = "y".repeat(5 * 1024 * 1024);
    let input = dir.path().join("input.json");
    std::fs::write(&input, format!(r#"{{"text": "{big}"}}"#)).expect("write input");
    let from_file = support::cli::docket(&[
        "run",
        "start",
        "text",
        "--input-file",
        input.to_str().expect("path"),
        "--backend",
        &url,
    ])
    .within(Duration::from_secs(60));
    assert!(from_file.status.success(), "{}", from_file.stderr);
    let from_stdin =
        support::cli::docket(&["run", "start", "text", "--input", "-", "--backend", &url])
            .stdin_from(std::fs::File::open(&input).expect("open input"))
            .within(Duration::from_secs(60));
    assert!(from_stdin.status.success(), "{}", from_stdin.stderr);
    for run_id in [from_file.stdout.trim(), from_stdin.stdout.trim()] {
        let shown = docket(&["run", "show", run_id, "--json", "--backend", &url]);
        assert!(
            text(&shown.stdout).contains(&big),
            "the whole input was stored"
        );
    }
    let stderr = refused(&[
        "run",
        "start",
        "text",
        "--input",
        r#"{"text": }"#,
        "--backend",
        &url,
    ]);
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    assert!(stderr.contains("line 1 column"), "{stderr}");
    let stderr = refused(&["run", "start", "text", "--input", "[1]", "--backend", &url]);
    assert!(
        stderr.contains("must be a JSON object, got an array"),
        "{stderr}"
    );
    let missing = dir.path().join("missing.json");
    let stderr = refused(&[
        "run",
        "start",
        "text",
        "--input-file",
        missing.to_str().expect("path"),
        "--backend",
        &url,
    ]);
    assert!(stderr.contains("cannot read --input-file"), "{stderr}");
}

#[test]
fn a_sqlite_commit_refused_for_a_full_disk_is_reported_as_not_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mount point");
    let db = format!("sqlite://{}/full.db", small.display());
    let docket_bin = env!("CARGO_BIN_EXE_docket");
    // A 600 KB disk in a private mount namespace: the demo's runs fill it mid-commit.
    let script = format!(
        "mount -t tmpfs -o size=600k tmpfs {small} || exit 90; \
         {docket_bin} demo --runs 300 --no-workers --backend {db}; echo \"demo-exit=$?\"; \
         exec {docket_bin} run verify --backend {db}",
        small = small.display()
    );
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .env("RUST_LOG", "error")
        .output()
        .expect("unshare runs (a private mount namespace holds the tiny disk)");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_ne!(
        out.status.code(),
        Some(90),
        "cannot mount a tmpfs: {stderr}"
    );
    assert!(
        stdout.contains("demo-exit=1"),
        "the disk filled up: {stdout}\n{stderr}"
    );
    assert!(stderr.contains("DiskFull"), "{stderr}");
    assert!(
        !stderr.contains("ambiguous"),
        "SQLite rolled it back: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains(": 0 with violations"), "{stdout}\n{stderr}");
}

#[test]
fn the_ops_commands_show_what_a_session_registered_through_the_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    support::ops::check_the_ops_commands(&sqlite_url(dir.path(), "ops.db"));
}

/// Publishes the `text` graph (one optional string input `text`) on `url`.
fn publish_text_graph(dir: &Path, url: &str) {
    let graph = dir.join("text.json");
    std::fs::write(
        &graph,
        r#"{"schema_version": 1, "id": "text",
            "inputs": {"text": {"schema": {"type": "string"}}},
            "nodes": {"a": {"implementation": "std.echo"}},
            "edges": {"b": {"from": "$start", "to": "a"}, "e": {"from": "a", "to": "$finish"}}}"#,
    )
    .expect("write graph");
    let published = docket(&[
        "graph",
        "publish",
        graph.to_str().expect("path"),
        "--backend",
        url,
    ]);
    assert!(published.status.success(), "{}", text(&published.stderr));
}

#[test]
fn run_start_from_a_jsonl_file_reports_each_line_and_a_bad_line_fails_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "bulk.db");
    publish_text_graph(dir.path(), &url);
    let lines = dir.path().join("runs.jsonl");
    std::fs::write(
        &lines,
        [
            r#"{"input": {"text": "first"}, "run_id": "bulk-a"}"#,
            r"this is not JSON",
            r#"{"input": {"text": 5}}"#,
            "",
            r#"{"input": {"text": "second"}, "run_id": "bulk-a"}"#,
            r#"{"input": {"text": "third"}}"#,
            r#"{"run_id": "bulk-b", "inptu": {}}"#,
        ]
        .join("\n"),
    )
    .expect("write lines");
    let out = docket(&[
        "run",
        "start",
        "text",
        "--from",
        lines.to_str().expect("path"),
        "--backend",
        &url,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed line fails the command: {stdout}"
    );
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(printed.len(), 7, "six lines and a summary: {stdout}");
    assert_eq!(printed[0], "line 1: bulk-a");
    assert!(
        printed[1].starts_with("line 2: error (invalid_json)"),
        "{stdout}"
    );
    assert!(
        printed[2].starts_with("line 3: error (invalid_input)"),
        "{stdout}"
    );
    assert!(
        printed[3].starts_with("line 5: error (storage)"),
        "{stdout}"
    );
    assert!(printed[3].contains("conflict"), "{stdout}");
    let generated = printed[4].strip_prefix("line 6: ").expect("line 6 started");
    assert!(
        printed[5].starts_with("line 7: error (invalid_options)"),
        "{stdout}"
    );
    assert!(
        printed[5].contains("inptu"),
        "the unknown key is named: {stdout}"
    );
    assert_eq!(printed[6], "2 started, 4 failed, 6 lines");
    // The first `bulk-a` kept its input; the repeated id changed nothing.
    let shown = text(&docket(&["run", "show", "bulk-a", "--json", "--backend", &url]).stdout);
    assert!(
        shown.contains("first") && !shown.contains("second"),
        "{shown}"
    );
    let shown = text(&docket(&["run", "show", generated, "--json", "--backend", &url]).stdout);
    assert!(shown.contains("third"), "{shown}");
    assert_eq!(count_listed(&url, "running"), 2);
}

#[test]
fn run_start_from_a_jsonl_file_starts_more_runs_than_one_batch_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = sqlite_url(dir.path(), "bulk-json.db");
    publish_text_graph(dir.path(), &url);
    // More than two batches of `START_BATCH_LIMIT` (500).
    let count = 1_203;
    let lines = dir.path().join("many.jsonl");
    let body: Vec<String> = (0..count)
        .map(|i| format!(r#"{{"input": {{"text": "t{i}"}}, "run_id": "many-{i}"}}"#))
        .collect();
    std::fs::write(&lines, body.join("\n")).expect("write lines");
    let out = docket(&[
        "run",
        "start",
        "text",
        "--from",
        lines.to_str().expect("path"),
        "--json",
        "--backend",
        &url,
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("every printed line is JSON"))
        .collect();
    assert_eq!(printed.len(), count + 1);
    for (i, line) in printed[..count].iter().enumerate() {
        assert_eq!(line["line"], i + 1, "{line}");
        assert_eq!(line["run_id"], format!("many-{i}"), "{line}");
    }
    assert_eq!(
        printed[count],
        serde_json::json!({"summary": {"started": count, "failed": 0}})
    );
    let listed = docket(&[
        "run",
        "list",
        "--json",
        "--limit",
        "5000",
        "--backend",
        &url,
    ]);
    assert_eq!(text(&listed.stdout).matches("\"id\":").count(), count);
    // A single start answers in the same shape.
    let single = docket(&[
        "run",
        "start",
        "text",
        "--run-id",
        "single",
        "--json",
        "--backend",
        &url,
    ]);
    assert!(single.status.success(), "{}", text(&single.stderr));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text(&single.stdout)).expect("JSON"),
        serde_json::json!({"run_id": "single"})
    );
}
