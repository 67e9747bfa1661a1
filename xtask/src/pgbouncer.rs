//! A private PgBouncer in transaction mode in front of the local PostgreSQL, for the checks
//! that run Docket behind a pooler: the conformance suite, `pg-workers --pgbouncer`, the demo
//! and the bench.
//!
//! Never the system service: its own process on the first free port from 6432, with its
//! configuration, user list and log under `target/pgbouncer/` (`pool_mode = transaction`,
//! `auth_type = trust` towards the local server's trust authentication, no
//! `ignore_startup_parameters`: Docket's pooler mode needs none). It is started once it
//! answers, and killed when the value is dropped. PgBouncer refuses to run as root; as root it
//! gets `-u postgres`, which makes it drop to that user after reading its configuration (its
//! log goes to a file xtask opened, so that user needs no access to the directory).

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::target_dir;
use crate::postgres::server_url;
use crate::{step, Result};

/// The first port tried (PgBouncer's usual one).
const FIRST_PORT: u16 = 6432;

/// A running private PgBouncer; dropping it stops it.
pub struct PgBouncer {
    child: Child,
    port: u16,
    log: PathBuf,
    upstream: Upstream,
}

/// What xtask needs of the server URL (std-only: no URL parser).
struct Upstream {
    user: String,
    host: String,
    port: String,
    database: String,
}

impl Upstream {
    /// `postgres://user[:password]@host[:port]/database[?…]`.
    fn parse(url: &str) -> Result<Upstream> {
        let bad = || format!("cannot read user, host and database from {url:?}");
        let rest = url
            .split_once("://")
            .map(|(_, rest)| rest)
            .ok_or_else(bad)?;
        let rest = rest.split(['?', '#']).next().unwrap_or(rest);
        let (auth, rest) = rest.rsplit_once('@').ok_or_else(bad)?;
        let user = auth.split(':').next().unwrap_or(auth).to_owned();
        let (host_port, database) = rest.split_once('/').ok_or_else(bad)?;
        let (host, port) = host_port.rsplit_once(':').unwrap_or((host_port, "5432"));
        if user.is_empty() || host.is_empty() || database.is_empty() {
            return Err(bad());
        }
        Ok(Upstream {
            user,
            host: host.to_owned(),
            port: port.to_owned(),
            database: database.to_owned(),
        })
    }
}

impl PgBouncer {
    /// Starts one in front of `DOCKET_TEST_POSTGRES_URL`'s server and waits until it answers.
    pub fn start() -> Result<PgBouncer> {
        let upstream = Upstream::parse(&server_url())?;
        let binary = binary()?;
        let dir = target_dir()?.join("pgbouncer");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let port = free_port()?;
        step(&format!(
            "pgbouncer: a private PgBouncer (transaction mode) on 127.0.0.1:{port} in front of \
             {}:{}",
            upstream.host, upstream.port
        ));
        let ini = dir.join("pgbouncer.ini");
        write(&ini, &config(&dir, port, &upstream))?;
        write(
            &dir.join("users.txt"),
            &format!("\"{}\" \"\"\n", upstream.user),
        )?;
        let log = dir.join("pgbouncer.log");
        let log_file =
            File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut command = Command::new(&binary);
        if running_as_root() {
            command.args(["-u", "postgres"]);
        }
        let child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut bouncer = PgBouncer {
            child,
            port,
            log,
            upstream,
        };
        bouncer.wait_until_answering()?;
        eprintln!(
            "pgbouncer: answering on 127.0.0.1:{port} (config and log in {})",
            dir.display()
        );
        Ok(bouncer)
    }

    /// The server's database through this PgBouncer, with Docket's pooler options: statements
    /// through the pooler (`pooler=transaction`), LISTEN direct (`listen_url`).
    pub fn docket_url(&self) -> String {
        let u = &self.upstream;
        format!(
            "postgres://{}@127.0.0.1:{}/{}?pooler=transaction&listen_url={}",
            u.user,
            self.port,
            u.database,
            percent_encode(&server_url())
        )
    }

    /// Waits until this pgbouncer's own log says it is up and its port answers: a port found
    /// free may be taken by another process before pgbouncer binds it, and then the port
    /// answers for that process while this pgbouncer exits.
    fn wait_until_answering(&mut self) -> Result {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("pgbouncer exited ({status}):\n{}", self.log_text()));
            }
            if self.log_text().contains("process up")
                && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "pgbouncer did not answer on {addr} within 20 s:\n{}",
                    self.log_text()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian installs it in /usr/sbin, which is not on every user's PATH.
fn binary() -> Result<PathBuf> {
    let debian = Path::new("/usr/sbin/pgbouncer");
    if debian.is_file() {
        return Ok(debian.to_owned());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("pgbouncer"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            "pgbouncer is not installed; install it with `apt-get install -y pgbouncer`".into()
        })
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

/// The first port from 6432 nothing listens on.
fn free_port() -> Result<u16> {
    (FIRST_PORT..FIRST_PORT + 100)
        .find(|&port| TcpListener::bind(("127.0.0.1", port)).is_ok())
        .ok_or_else(|| format!("no free port in {FIRST_PORT}..{}", FIRST_PORT + 100))
}

fn write(path: &Path, text: &str) -> Result {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The configuration: one database entry for the server's database, transaction pooling, and
/// enough client slots for the suite, the demo's workers and the bench at once (server
/// connections stay at `default_pool_size`, well under the server's `max_connections`).
fn config(dir: &Path, port: u16, upstream: &Upstream) -> String {
    format!(
        "[databases]
{database} = host={host} port={upstream_port} dbname={database}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {users}
pool_mode = transaction
default_pool_size = 20
max_client_conn = 1000
log_connections = 0
log_disconnections = 0
",
        database = upstream.database,
        host = upstream.host,
        upstream_port = upstream.port,
        users = dir.join("users.txt").display(),
    )
}

/// Percent-encodes everything but unreserved characters (a URL inside a URL parameter).
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_is_read_from_the_server_url() {
        let u = Upstream::parse("postgres://postgres:pw@127.0.0.1:5433/test?sslmode=disable")
            .expect("url");
        assert_eq!(
            (&*u.user, &*u.host, &*u.port, &*u.database),
            ("postgres", "127.0.0.1", "5433", "test")
        );
        let u = Upstream::parse("postgresql://me@db/app").expect("url");
        assert_eq!((&*u.host, &*u.port), ("db", "5432"));
        assert!(Upstream::parse("postgres://127.0.0.1/test").is_err());
        assert_eq!(
            percent_encode("postgres://a@b:1/c"),
            "postgres%3A%2F%2Fa%40b%3A1%2Fc"
        );
    }
}
