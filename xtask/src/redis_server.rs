//! A private `redis-server` for xtask scenarios: its own port and data directory, durable
//! (`appendonly yes`, `appendfsync always`, no RDB snapshots), stopped when dropped.
//!
//! Commands are sent in RESP over a plain `TcpStream` (std-only, no `redis-cli` needed).

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Result;

/// How long the server may take to answer after a start.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// How long a shutdown may take (the AOF is fsynced first).
const STOP_DEADLINE: Duration = Duration::from_secs(20);

/// A running private server; dropping it shuts it down (and kills it if it does not exit).
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts `redis-server` on the first free port from `first_port` with data in `dir`.
    pub fn start(first_port: u16, dir: &Path) -> Result<RedisServer> {
        let port = free_port(first_port)?;
        let mut server = RedisServer {
            port,
            dir: dir.to_owned(),
            child: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn spawn(&mut self) -> Result {
        let log = self.dir.join("redis.log");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .args(["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
            .args(["--daemonize", "no", "--maxmemory-policy", "noeviction"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot start redis-server (install it with `apt-get install -y redis-server`): {e}")
            })?;
        self.child = Some(child);
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if self.command(&["PING"]).is_ok_and(|r| r == "+PONG") {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "redis-server on port {} exited at start ({status}); see {}",
                        self.port,
                        log.display()
                    ));
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "redis-server on port {} does not answer within {START_DEADLINE:?}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `SHUTDOWN` (which fsyncs the AOF), stays down for `pause`, then starts the server again
    /// on the same port and directory: the data survives, the script cache does not. Returns
    /// how long the server was away (from the shutdown until it answered again).
    pub fn restart(&mut self, pause: Duration) -> Result<Duration> {
        let started = Instant::now();
        self.stop()?;
        std::thread::sleep(pause);
        self.spawn()?;
        Ok(started.elapsed())
    }

    fn stop(&mut self) -> Result {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // The server closes the connection instead of replying when it shuts down.
        let _ = self.command(&["SHUTDOWN"]);
        let deadline = Instant::now() + STOP_DEADLINE;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "redis-server on port {} did not shut down within {STOP_DEADLINE:?}",
                        self.port
                    ));
                }
            }
        }
    }

    /// One command; the first line of the reply (`+PONG`, `:42`, `$n`, `-ERR ...`).
    pub fn command(&self, args: &[&str]) -> Result<String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))
            .map_err(|e| format!("port {}: {e}", self.port))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.is_empty() {
            return Err("connection closed without a reply".into());
        }
        let first = line.trim_end().to_owned();
        // A bulk string: return its body instead of its length.
        if let Some(len) = first
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
        {
            let mut body = vec![0u8; len + 2];
            std::io::Read::read_exact(&mut reader, &mut body).map_err(|e| e.to_string())?;
            body.truncate(len);
            return Ok(String::from_utf8_lossy(&body).into_owned());
        }
        Ok(first)
    }

    /// A field of `INFO section` (`None` when absent).
    pub fn info_field(&self, section: &str, field: &str) -> Result<Option<String>> {
        let info = self.command(&["INFO", section])?;
        Ok(info.lines().find_map(|l| {
            l.strip_prefix(field)
                .and_then(|rest| rest.strip_prefix(':'))
                .map(|v| v.trim().to_owned())
        }))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("xtask: {e}");
        }
    }
}

/// The first port from `first` (up to 100 further) that nothing listens on.
fn free_port(first: u16) -> Result<u16> {
    (first..first.saturating_add(100))
        .find(|&port| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok())
        .ok_or_else(|| format!("no free port in {first}..{}", first.saturating_add(100)))
}
