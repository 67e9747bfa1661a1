//! Private database servers the process-level harness starts, crashes and restarts itself:
//! a temporary PostgreSQL cluster (`initdb` + `pg_ctl`) and a private `redis-server`, each on
//! a free port with its data under the run's directory. The shared local services are never
//! touched.
//!
//! A restart is a crash: `pg_ctl stop -m immediate` (no checkpoint; the WAL replays at start)
//! or SIGKILL of `redis-server` (the AOF with `appendfsync always` was written before every
//! reply), a short outage, then a start on the same data.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer after a start.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A free TCP port on 127.0.0.1 (bound once by the OS, then released for the server).
///
/// # Errors
/// No port could be bound.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(
        &(Ipv4Addr::LOCALHOST, port).into(),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// Polls until something accepts connections on `port`, or the deadline passes.
fn wait_for_port(port: u16, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + START_DEADLINE;
    while !answers(port) {
        if Instant::now() >= deadline {
            return Err(format!("{what} does not answer on port {port}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// A temporary PostgreSQL cluster; stopped (immediately) when dropped.
#[derive(Debug)]
pub struct PrivatePostgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    /// PostgreSQL refuses to run as root: as root, every command runs as `postgres`.
    as_postgres: bool,
}

impl PrivatePostgres {
    /// `initdb` (trust authentication, fsync on) in `dir/data`, then starts it on a free port.
    ///
    /// # Errors
    /// No PostgreSQL binaries under `/usr/lib/postgresql/*/bin`, or `initdb`/`pg_ctl` failed.
    pub fn start(dir: &Path) -> Result<Self, String> {
        let bin = postgres_bin()?;
        let data = dir.join("pgdata");
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let as_postgres = running_as_root();
        if as_postgres {
            run(
                Command::new("chown").arg("-R").arg("postgres").arg(dir),
                "chown postgres",
            )?;
        }
        let port = free_port()?;
        let server = PrivatePostgres {
            bin,
            data,
            port,
            as_postgres,
        };
        server.run_tool(
            "initdb",
            &[
                "-D",
                &server.data.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        )?;
        let conf = format!(
            "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             max_connections = 200\nfsync = on\nsynchronous_commit = on\nshared_buffers = 32MB\n",
            server.data.display()
        );
        let path = server.data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        text.push_str(&conf);
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        server.pg_start()?;
        Ok(server)
    }

    /// The port it listens on.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A Docket URL for this server on `port` (the server's own, or a proxy's in front).
    #[must_use]
    pub fn url_via(&self, port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    }

    fn run_tool(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let path = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        run(command.args(args), tool)
    }

    fn pg_start(&self) -> Result<(), String> {
        let log = self.data.join("server.log").display().to_string();
        let data = self.data.display().to_string();
        self.run_tool(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-t", "60", "start"],
        )?;
        wait_for_port(self.port, "the private PostgreSQL")
    }

    /// Crashes the server (`-m immediate`), keeps it down for `down`, starts it again.
    ///
    /// # Errors
    /// `pg_ctl` failed.
    pub fn restart(&self, down: Duration) -> Result<(), String> {
        let data = self.data.display().to_string();
        self.run_tool("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])?;
        std::thread::sleep(down);
        self.pg_start()
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = self.run_tool("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` holding `pg_ctl`.
fn postgres_bin() -> Result<PathBuf, String> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no PostgreSQL under /usr/lib/postgresql ({e}); install postgresql"))?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("pg_ctl").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no pg_ctl under /usr/lib/postgresql/*/bin".to_owned())
}

/// A private `redis-server` (AOF, `appendfsync always`, no RDB, no eviction); killed when
/// dropped.
#[derive(Debug)]
pub struct PrivateRedis {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl PrivateRedis {
    /// Starts one on a free port with its data in `dir`.
    ///
    /// # Errors
    /// `redis-server` is missing or does not answer.
    pub fn start(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut server = PrivateRedis {
            dir: dir.to_owned(),
            port: free_port()?,
            child: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// The port it listens on.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A Docket URL for this server on `port` (the server's own, or a proxy's in front).
    #[must_use]
    pub fn url_via(&self, port: u16) -> String {
        format!("redis://127.0.0.1:{port}/?namespace=chaos")
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .args(["--daemonize", "no", "--maxmemory-policy", "noeviction"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server (install redis-server): {e}"))?;
        self.child = Some(child);
        wait_for_port(self.port, "the private redis-server")
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server (SIGKILL), keeps it down for `down`, starts it again on its AOF.
    ///
    /// # Errors
    /// It does not come back.
    pub fn restart(&mut self, down: Duration) -> Result<(), String> {
        self.kill();
        std::thread::sleep(down);
        self.spawn()
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
