//! `cargo xtask redis-restart [--runs N]`: the Redis restart check of issue 6.
//!
//! 1. Build the `docket` binary (debug, all features, so `redis://` is wired).
//! 2. Start a private `redis-server` (free port from 6391, temp dir, `appendonly yes`,
//!    `appendfsync always`, no RDB) and start N example runs there with
//!    `docket demo --no-workers`.
//! 3. Start `docket worker --until-idle` processes; once some runs have finished (polled with
//!    a deadline), restart the server: `SHUTDOWN`, stay down for 2.5 s (past the workers'
//!    2 s orphan TTL), start it again on the same directory. The data survives (AOF), the
//!    script cache does not, and every connection drops.
//! 4. The same worker processes must reconnect, reload their scripts (`NOSCRIPT`) and carry
//!    on: progress must resume and they must reach idle on their own.
//! 5. Resolve the approvals, finish with `docket worker --until-idle` rounds, and
//!    `docket run verify --expect-terminal`: every run done, every history sound.
//!
//! The private server is stopped at the end, whatever happened.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{binary, build_docket, count, resolve_approvals, run_with_deadline};
use crate::redis_server::RedisServer;
use crate::{step, Result};

/// Runs started when `--runs` is not given.
const DEFAULT_RUNS: usize = 200;
/// Worker processes riding out the restart.
const WORKERS: usize = 2;
/// The first port tried for the private server.
const FIRST_PORT: u16 = 6391;
/// How long the server stays down: long enough that the workers' claim polls, commits and
/// idle checks fail with refused connections (not only reset ones), and longer than the
/// orphan TTL, so the claims held across the outage are only recovered by stealing them.
const DOWN_FOR: Duration = Duration::from_millis(2_500);
/// Flags of every worker: a short orphan TTL (a claim granted just before the restart whose
/// reply was lost is recovered in seconds) with a drain budget and attempt ceiling below it.
const WORKER_FLAGS: [&str; 13] = [
    "--until-idle",
    "--concurrency",
    "4",
    "--orphan-ttl-ms",
    "2000",
    "--drain-max-elapsed-ms",
    "1500",
    "--max-attempt-elapsed-ms",
    "1000",
    "--poll-interval-ms",
    "200",
    "--idle-check-ms",
    "200",
];

/// `cargo xtask redis-restart [--runs N]`.
pub fn run(args: &[String]) -> Result {
    let runs = parse_runs(args)?;
    let started = Instant::now();
    step(&format!(
        "redis-restart: {runs} runs, {WORKERS} `docket worker` processes, restart the Redis server mid-way"
    ));
    build_docket()?;
    let docket = binary()?;
    let dir = std::env::temp_dir().join(format!("docket-redis-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let result = RedisServer::start(FIRST_PORT, &dir)
        .and_then(|mut server| scenario(&docket, &dir, &mut server, runs));
    match result {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&dir);
            eprintln!("redis-restart: passed in {:.1?}", started.elapsed());
            Ok(())
        }
        Err(e) => Err(format!(
            "{e}\n(server and worker logs kept in {})",
            dir.display()
        )),
    }
}

fn parse_runs(args: &[String]) -> Result<usize> {
    match args {
        [] => Ok(DEFAULT_RUNS),
        [flag, n] if flag == "--runs" => match n.parse::<usize>() {
            Ok(n) if n >= 8 => Ok(n),
            _ => Err(format!("--runs needs a number ≥ 8, got {n:?}")),
        },
        _ => Err("usage: cargo xtask redis-restart [--runs N]".into()),
    }
}

/// Worker processes, killed if still running when dropped (a failed check must not leave
/// them behind).
struct Workers {
    children: Vec<Child>,
    logs: Vec<PathBuf>,
}

impl Workers {
    fn start(docket: &Path, url: &str, dir: &Path) -> Result<Workers> {
        let mut workers = Workers {
            children: Vec::new(),
            logs: Vec::new(),
        };
        for i in 1..=WORKERS {
            let log_path = dir.join(format!("worker-{i}.log"));
            let log = File::create(&log_path).map_err(|e| e.to_string())?;
            let log_err = log.try_clone().map_err(|e| e.to_string())?;
            let child = Command::new(docket)
                .args(["worker", "--backend", url])
                .args(WORKER_FLAGS)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log_err)
                .spawn()
                .map_err(|e| format!("cannot start docket worker: {e}"))?;
            workers.children.push(child);
            workers.logs.push(log_path);
        }
        Ok(workers)
    }

    /// Fails if a worker has already exited.
    fn all_running(&mut self) -> Result {
        for (i, child) in self.children.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "worker {} exited ({status}) before the restart:\n{}",
                    i + 1,
                    tail(&self.logs[i])
                ));
            }
        }
        Ok(())
    }

    /// Waits until every worker exits on its own; each must succeed.
    fn wait(&mut self, limit: Duration) -> Result {
        let deadline = Instant::now() + limit;
        for (i, child) in self.children.iter_mut().enumerate() {
            loop {
                match child.try_wait() {
                    Ok(Some(status)) if status.success() => break,
                    Ok(Some(status)) => {
                        return Err(format!(
                            "worker {} failed after the restart ({status}):\n{}",
                            i + 1,
                            tail(&self.logs[i])
                        ))
                    }
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Ok(None) => {
                        return Err(format!(
                            "worker {} did not reach idle within {limit:?} after the restart:\n{}",
                            i + 1,
                            tail(&self.logs[i])
                        ))
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        Ok(())
    }

    /// The end of every worker's log.
    fn tails(&self) -> String {
        self.logs
            .iter()
            .map(|l| tail(l))
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    /// The last line of every worker's log (its final stats line).
    fn summaries(&self) -> Vec<String> {
        self.logs
            .iter()
            .map(|log| tail(log).lines().last().unwrap_or_default().to_owned())
            .collect()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// The last 20 lines of a log.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn finished(docket: &Path, url: &str) -> Result<usize> {
    count(docket, url, &["done", "failed", "cancelled"])
}

fn scenario(docket: &Path, dir: &Path, server: &mut RedisServer, runs: usize) -> Result {
    let url = format!("redis://127.0.0.1:{}/?namespace=restart", server.port());
    eprintln!(
        "redis-restart: private redis-server on port {} (AOF, appendfsync always) in {}",
        server.port(),
        dir.display()
    );
    run_with_deadline(
        Command::new(docket)
            .args(["demo", "--backend", &url, "--no-workers", "--runs"])
            .arg(runs.to_string()),
        Duration::from_secs(60),
        "docket demo --no-workers",
    )?;
    let started = Instant::now();
    let mut workers = Workers::start(docket, &url, dir)?;

    // Mid-way: a tenth of the runs finished, the rest still in the workers' hands.
    let threshold = (runs / 10).max(1);
    let deadline = Instant::now() + Duration::from_secs(60);
    let before = loop {
        workers.all_running()?;
        let done = finished(docket, &url)?;
        if done >= threshold {
            break done;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "only {done} of {runs} runs finished within 60 s of starting the workers"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    workers.all_running()?;
    let running = count(docket, &url, &["running"])?;
    if running == 0 {
        return Err("no run was left for the workers before the restart: nothing to test".into());
    }
    let scripts_before = cached_scripts(server)?;
    let down_for = server.restart(DOWN_FOR)?;
    let back_at = Instant::now();
    let scripts_after_restart = cached_scripts(server)?;
    eprintln!(
        "redis-restart: {before} of {runs} runs finished, {running} running at {:.1?}; restarted the server (down {down_for:.1?}; cached scripts {scripts_before} → {scripts_after_restart})",
        started.elapsed()
    );

    // Recovery, on the same worker processes: first a script runs to completion again (the
    // server's command statistics restart with it, and only the workers run scripts), then
    // runs finish again.
    let deadline = back_at + Duration::from_secs(60);
    let at_restart = finished(docket, &url)?;
    let scripts_resumed = loop {
        if successful_script_calls(server)? > 0 {
            break back_at.elapsed();
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no worker ran a script within 60 s of the restart:\n{}",
                workers.tails()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let runs_resumed = loop {
        let done = finished(docket, &url)?;
        if done > at_restart {
            break back_at.elapsed();
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no run finished within 60 s of the restart ({done} of {runs} finished):\n{}",
                workers.tails()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    workers.wait(Duration::from_secs(120))?;
    // Only the workers run scripts after the restart (the CLI listings are plain reads).
    let reloaded = cached_scripts(server)?;
    eprintln!(
        "redis-restart: after the server was back, the workers ran a script again within {scripts_resumed:.1?} and finished a run within {runs_resumed:.1?}; they reloaded {reloaded} scripts and reached idle at {:.1?}",
        started.elapsed()
    );
    for line in workers.summaries() {
        eprintln!("  {line}");
    }
    if reloaded == 0 {
        return Err("the server's script cache is empty after the workers resumed".into());
    }

    finish(docket, &url, runs)?;
    eprintln!(
        "redis-restart: {runs} runs, server down {down_for:.1?}, workers back at work {scripts_resumed:.1?} after it returned, all done and verified in {:.1?}",
        started.elapsed()
    );
    Ok(())
}

/// `EVALSHA` calls that completed without an error since the server started (a `NOSCRIPT`
/// reply counts as failed).
fn successful_script_calls(server: &RedisServer) -> Result<u64> {
    let Some(stats) = server.info_field("commandstats", "cmdstat_evalsha")? else {
        return Ok(0);
    };
    let field = |name: &str| {
        stats
            .split(',')
            .find_map(|kv| {
                kv.strip_prefix(name)?
                    .strip_prefix('=')?
                    .parse::<u64>()
                    .ok()
            })
            .ok_or_else(|| format!("cmdstat_evalsha lacks {name}: {stats}"))
    };
    Ok(field("calls")?.saturating_sub(field("failed_calls")?))
}

fn cached_scripts(server: &RedisServer) -> Result<usize> {
    server
        .info_field("memory", "number_of_cached_scripts")?
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "INFO memory lacks number_of_cached_scripts".to_owned())
}

/// Resolves approvals and runs `docket worker --until-idle` until every run is terminal, then
/// verifies every history.
fn finish(docket: &Path, url: &str, runs: usize) -> Result {
    for _ in 0..5 {
        let unfinished = count(docket, url, &["running", "waiting"])?;
        if unfinished == 0 {
            break;
        }
        let resolved = resolve_approvals(docket, url)?;
        run_with_deadline(
            Command::new(docket)
                .args(["worker", "--backend", url])
                .args(WORKER_FLAGS),
            Duration::from_secs(60),
            "docket worker --until-idle",
        )?;
        eprintln!(
            "redis-restart: resolved {resolved} approvals; {} runs still unfinished",
            count(docket, url, &["running", "waiting"])?
        );
    }
    let verify = run_with_deadline(
        Command::new(docket).args(["run", "verify", "--expect-terminal", "--backend", url]),
        Duration::from_secs(60),
        "docket run verify",
    )?;
    eprint!("{}", String::from_utf8_lossy(&verify.stdout));
    let total = count(docket, url, &[])?;
    let done = count(docket, url, &["done"])?;
    if total != runs || done != runs {
        return Err(format!(
            "expected {runs} runs all done, found {done} done of {total}"
        ));
    }
    Ok(())
}
