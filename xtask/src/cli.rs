//! Driving the built `docket` binary from xtask: locating it, running it with a deadline,
//! and reading its JSON output without a JSON parser (xtask is std-only).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{cargo, Result};

/// Builds the `docket` binary with every backend (`postgres` included): the same artifacts
/// `cargo test --workspace --all-features` builds in `ci`, so nothing is compiled twice.
pub fn build_docket() -> Result {
    cargo(&[
        "build",
        "--package",
        "docket-cli",
        "--all-features",
        "--bin",
        "docket",
    ])
}

/// The workspace's target directory (`CARGO_TARGET_DIR` or `<workspace>/target`).
pub fn target_dir() -> Result<PathBuf> {
    Ok(match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask has no parent directory")?
            .join("target"),
    })
}

/// The `docket` binary cargo just built, in the workspace's target dir.
pub fn binary() -> Result<PathBuf> {
    let path = target_dir()?.join("debug").join("docket");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("the docket binary is not at {}", path.display()))
    }
}

/// A child process whose stdout and stderr are drained by threads as it runs (a child that
/// fills a pipe nobody reads would block forever).
pub struct Running {
    what: String,
    child: Child,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
}

fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

impl Running {
    /// Starts `command` with piped output.
    pub fn spawn(command: &mut Command, what: &str) -> Result<Running> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what}: no output pipes"));
        };
        Ok(Running {
            what: what.to_owned(),
            child,
            stdout: drain(out),
            stderr: drain(err),
        })
    }

    /// Waits until `deadline` (then kills it); fails unless it exited successfully.
    pub fn finish(mut self, deadline: Instant) -> Result<Output> {
        let what = self.what;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!("{what} did not finish in time"));
                }
                Err(e) => return Err(format!("{what}: {e}")),
            }
        };
        let output = Output {
            status,
            stdout: self.stdout.join().unwrap_or_default(),
            stderr: self.stderr.join().unwrap_or_default(),
        };
        if output.status.success() {
            Ok(output)
        } else {
            Err(format!(
                "{what} failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }
}

/// Runs `command` to completion within `limit`; fails unless it exits successfully.
pub fn run_with_deadline(command: &mut Command, limit: Duration, what: &str) -> Result<Output> {
    Running::spawn(command, what)?.finish(Instant::now() + limit)
}

/// Runs `docket <args> --backend URL` and returns its stdout.
pub fn docket_out(docket: &Path, url: &str, args: &[&str]) -> Result<String> {
    let output = run_with_deadline(
        Command::new(docket).args(args).args(["--backend", url]),
        Duration::from_secs(30),
        &format!("docket {}", args.join(" ")),
    )?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// How many runs have one of `statuses` (all runs when empty).
pub fn count(docket: &Path, url: &str, statuses: &[&str]) -> Result<usize> {
    let mut args = vec!["run", "list", "--json", "--limit", "100000000"];
    for s in statuses {
        args.extend(["--status", s]);
    }
    Ok(docket_out(docket, url, &args)?.matches("\"id\":").count())
}

/// Resolves every open interrupt of every waiting run with `true`; returns how many.
pub fn resolve_approvals(docket: &Path, url: &str) -> Result<usize> {
    let listing = docket_out(
        docket,
        url,
        &[
            "run",
            "list",
            "--status",
            "waiting",
            "--json",
            "--limit",
            "100000000",
        ],
    )?;
    let mut resolved = 0;
    for run_id in string_values(&listing, "\"id\":") {
        let shown = docket_out(docket, url, &["run", "show", &run_id, "--json"])?;
        for interrupt in list_after(&shown, "\"open_interrupts\":") {
            docket_out(
                docket,
                url,
                &["interrupt", "resolve", &run_id, &interrupt, "true"],
            )?;
            resolved += 1;
        }
    }
    Ok(resolved)
}

/// Every string value following `key` in a JSON text (std-only, for our own output).
pub fn string_values(text: &str, key: &str) -> Vec<String> {
    text.match_indices(key)
        .filter_map(|(i, _)| {
            let rest = text[i + key.len()..].trim_start().strip_prefix('"')?;
            rest.split_once('"').map(|(value, _)| value.to_owned())
        })
        .collect()
}

/// The strings of the JSON array following `key`.
pub fn list_after(text: &str, key: &str) -> Vec<String> {
    let Some(i) = text.find(key) else {
        return Vec::new();
    };
    let rest = &text[i + key.len()..];
    let Some(end) = rest.find(']') else {
        return Vec::new();
    };
    rest[..end]
        .split('"')
        .enumerate()
        .filter(|(n, _)| n % 2 == 1)
        .map(|(_, s)| s.to_owned())
        .collect()
}
