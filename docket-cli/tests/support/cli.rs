//! Running the `docket` binary from tests with a deadline: a command that hangs fails its test
//! (the process is killed and its output shown) instead of blocking the suite.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a finished command printed, and how long it took.
#[derive(Debug)]
pub struct Finished {
    /// The exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error (empty when it was redirected).
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

/// One invocation of the `docket` binary.
pub struct Invocation {
    command: Command,
    stderr_redirected: bool,
}

/// `docket ARGS` with `RUST_LOG=error`, stdout and stderr captured.
pub fn docket(args: &[&str]) -> Invocation {
    let mut command = Command::new(env!("CARGO_BIN_EXE_docket"));
    command
        .args(args)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Invocation {
        command,
        stderr_redirected: false,
    }
}

impl Invocation {
    /// Sets an environment variable of the child.
    #[must_use]
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.command.env(key, value);
        self
    }

    /// Sends the child's standard error to `target` instead of capturing it.
    #[must_use]
    pub fn stderr_to(mut self, target: impl Into<Stdio>) -> Self {
        self.command.stderr(target);
        self.stderr_redirected = true;
        self
    }

    /// Feeds `file` to the child's standard input.
    #[must_use]
    pub fn stdin_from(mut self, file: std::fs::File) -> Self {
        self.command.stdin(file);
        self
    }

    /// Runs to completion, or panics (after killing the child) once `deadline` has passed.
    pub fn within(mut self, deadline: Duration) -> Finished {
        let started = Instant::now();
        let mut child = self.command.spawn().expect("the docket binary runs");
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let status = wait(&mut child, started + deadline);
        let elapsed = started.elapsed();
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        let Some(status) = status else {
            panic!(
                "docket did not exit within {deadline:?}\nstdout:\n{stdout}\nstderr:\n{}",
                if self.stderr_redirected {
                    "(redirected)"
                } else {
                    &stderr
                }
            );
        };
        Finished {
            status,
            stdout,
            stderr,
            elapsed,
        }
    }
}

/// Polls the child until it exits or `deadline` passes (then kills it and returns `None`).
fn wait(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().expect("wait for docket") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads a pipe to its end on a thread of its own, so a chatty child never blocks on a full
/// pipe while we wait for it.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// `docket worker` draining until the store is idle, polling and checking idleness every
/// 50 ms (add `--backend URL` and any other flags).
pub const IDLE_WORKER: [&str; 6] = [
    "worker",
    "--until-idle",
    "--poll-interval-ms",
    "50",
    "--idle-check-ms",
    "50",
];

/// Runs every command of the CLI at least once against `url` (with `RUST_LOG=debug`, so the
/// engine's and drivers' log lines are included) — successes, refusals and a connection
/// failure — and returns everything they printed on stdout and stderr. `broken` is the same
/// store's URL with an option that must be refused.
pub fn everything_printed(url: &str, broken: &str, unreachable: &str) -> String {
    let graph = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docket/graphs/approval.json"
    );
    let deadline = Duration::from_secs(120);
    let mut printed = String::new();
    let mut run = |args: &[&str], backend: &str| -> Finished {
        let mut all = args.to_vec();
        all.extend(["--backend", backend]);
        let out = docket(&all).env("RUST_LOG", "debug").within(deadline);
        printed.push_str(&out.stdout);
        printed.push_str(&out.stderr);
        out
    };
    let ok = |out: &Finished, what: &str| {
        assert!(out.status.success(), "{what}: {}{}", out.stdout, out.stderr);
    };
    ok(&run(&["demo", "--runs", "4", "--no-workers"], url), "demo");
    ok(&run(&["migrate"], url), "migrate");
    ok(&run(&["graph", "publish", graph], url), "publish");
    ok(&run(&["graph", "list", "--json"], url), "graph list");
    let started = run(
        &["run", "start", "approval", "--input", r#"{"amount": 5}"#],
        url,
    );
    ok(&started, "run start");
    let run_id = started.stdout.trim().to_owned();
    ok(&run(&IDLE_WORKER, url), "worker");
    ok(&run(&["run", "list", "--json"], url), "run list");
    ok(&run(&["run", "show", &run_id, "--json"], url), "run show");
    ok(
        &run(&["interrupt", "resolve", &run_id, "approve", "true"], url),
        "resolve",
    );
    ok(&run(&IDLE_WORKER, url), "worker");
    ok(&run(&["events", &run_id, "--json"], url), "events");
    ok(&run(&["run", "verify", "--json"], url), "verify");
    ok(&run(&["run", "verify"], url), "verify");
    for (args, backend) in [
        (&["run", "show", "run_missing", "--json"][..], url),
        (&["run", "start", "no_such_graph"][..], url),
        (&["run", "cancel", &run_id][..], url),
        (&["run", "retry", &run_id][..], url),
        (&["run", "list", "--json"][..], broken),
        (&["worker", "--until-idle"][..], broken),
        (&["migrate"][..], broken),
        (&["run", "list"][..], unreachable),
        (&["worker", "--until-idle"][..], unreachable),
        (&["migrate"][..], unreachable),
    ] {
        let out = run(args, backend);
        assert!(!out.status.success(), "{args:?} must fail: {}", out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.stderr);
    }
    printed
}
