//! A private PgBouncer in front of the test server, for tests of transaction-pooler mode.
//!
//! Each [`PgBouncer`] is its own process on its own free port, with its configuration, user
//! list and log in a fresh temporary directory, in `pool_mode = transaction` unless told
//! otherwise; dropping it kills the process and removes the directory. The binary is
//! `DOCKET_PGBOUNCER`, else `/usr/sbin/pgbouncer` (Debian's package), else `pgbouncer` on the
//! `PATH`; a missing binary fails the test with the command that installs it.
//!
//! PgBouncer refuses to run as root: as root it is started with `-u postgres`, which makes it
//! drop to that user after reading its configuration (its log goes to a file this process
//! opened, so the user needs no access to the directory).

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;

use super::test_url;

/// How long a starting PgBouncer may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// A running private PgBouncer (see the module docs).
#[derive(Debug)]
pub struct PgBouncer {
    child: Child,
    port: u16,
    dir: PathBuf,
    user: String,
    database: String,
}

impl PgBouncer {
    /// Starts a PgBouncer in transaction mode in front of the server of [`test_url`], with
    /// `settings` added to (or replacing) its `[pgbouncer]` section, e.g.
    /// `("ignore_startup_parameters", "extra_float_digits")` or `("default_pool_size", "1")`.
    ///
    /// # Errors
    /// A test URL that cannot be parsed, a missing binary (naming the install command), or a
    /// PgBouncer that does not accept connections within 20 seconds (with its log).
    pub fn start(settings: &[(&str, &str)]) -> Result<PgBouncer, String> {
        let mut last_error = String::new();
        // A port found free can be taken before PgBouncer binds it: try a few.
        for _ in 0..3 {
            match Self::start_on(free_port()?, settings) {
                Ok(bouncer) => return Ok(bouncer),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// [`PgBouncer::start`] on `port`, once: fails, with PgBouncer's log, when it cannot
    /// listen there (the port is taken) or does not come up within 20 seconds.
    ///
    /// # Errors
    /// As [`PgBouncer::start`].
    pub fn start_on(port: u16, settings: &[(&str, &str)]) -> Result<PgBouncer, String> {
        let upstream = PgConnectOptions::from_str(&test_url())
            .map_err(|e| format!("DOCKET_TEST_POSTGRES_URL: {e}"))?;
        let binary = binary()?;
        let user = upstream.get_username().to_owned();
        let database = upstream
            .get_database()
            .unwrap_or(upstream.get_username())
            .to_owned();
        let dir = std::env::temp_dir().join(format!(
            "docket-pgbouncer-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let spawn = || -> Result<Child, String> {
            let config = config(&dir, port, &upstream, &database, settings);
            write(&dir.join("pgbouncer.ini"), &config)?;
            write(&dir.join("users.txt"), &format!("\"{user}\" \"\"\n"))?;
            let log = File::create(dir.join("pgbouncer.log"))
                .map_err(|e| format!("cannot create the PgBouncer log: {e}"))?;
            let mut command = Command::new(&binary);
            if running_as_root() {
                command.args(["-u", "postgres"]);
            }
            command
                .arg(dir.join("pgbouncer.ini"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", binary.display()))
        };
        let child = spawn().inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&dir);
        })?;
        // Dropped on failure: the process is killed and the directory removed.
        let mut bouncer = PgBouncer {
            child,
            port,
            dir,
            user,
            database,
        };
        bouncer.wait_until_listening()?;
        Ok(bouncer)
    }

    /// The port it listens on (127.0.0.1).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://<user>@127.0.0.1:<port>/<database>`: the test server's database through
    /// this PgBouncer, with no Docket parameters.
    #[must_use]
    pub fn url(&self) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{}",
            self.user, self.port, self.database
        )
    }

    /// [`PgBouncer::url`] with `?pooler=transaction&listen_url=<the test server>`: a Docket
    /// URL whose statements go through this PgBouncer and whose LISTEN goes direct.
    #[must_use]
    pub fn docket_url(&self) -> String {
        let direct: String =
            percent_encoding::utf8_percent_encode(&test_url(), percent_encoding::NON_ALPHANUMERIC)
                .collect();
        format!("{}?pooler=transaction&listen_url={direct}", self.url())
    }

    /// What PgBouncer logged so far.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }

    /// Waits until *this* PgBouncer accepts connections: its own log says it is up (it has
    /// bound its port) and the port answers. The port answering alone is not enough: a port
    /// found free may have been taken by another PgBouncer started at the same moment (tests
    /// run side by side), and then this one logs `cannot listen … Address already in use`
    /// and exits while the port answers for the other — which is killed when its test ends,
    /// refusing every connection of this one's test from then on.
    fn wait_until_listening(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("PgBouncer exited ({status}):\n{}", self.log()));
            }
            if self.log().contains("process up")
                && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "PgBouncer did not listen on {addr} within {START_DEADLINE:?}:\n{}",
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("DOCKET_PGBOUNCER") {
        return Ok(PathBuf::from(path));
    }
    let debian = Path::new("/usr/sbin/pgbouncer");
    if debian.is_file() {
        return Ok(debian.to_owned());
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("pgbouncer"))
        .find(|candidate| candidate.is_file());
    on_path.ok_or_else(|| {
        "pgbouncer is not installed (apt-get install -y pgbouncer), or set DOCKET_PGBOUNCER"
            .to_owned()
    })
}

/// Whether this process runs as root (PgBouncer then needs `-u`).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn config(
    dir: &Path,
    port: u16,
    upstream: &PgConnectOptions,
    database: &str,
    settings: &[(&str, &str)],
) -> String {
    let mut section: Vec<(String, String)> = [
        ("listen_addr", "127.0.0.1".to_owned()),
        ("listen_port", port.to_string()),
        ("unix_socket_dir", String::new()),
        ("auth_type", "trust".to_owned()),
        ("auth_file", dir.join("users.txt").display().to_string()),
        ("pool_mode", "transaction".to_owned()),
        ("default_pool_size", "4".to_owned()),
        ("max_client_conn", "500".to_owned()),
        ("log_connections", "0".to_owned()),
        ("log_disconnections", "0".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for (key, value) in settings {
        match section.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = (*value).to_owned(),
            None => section.push(((*key).to_owned(), (*value).to_owned())),
        }
    }
    let mut text = format!(
        "[databases]\n{database} = host={} port={} dbname={database}\n\n[pgbouncer]\n",
        upstream.get_host(),
        upstream.get_port()
    );
    for (key, value) in section {
        text.push_str(&format!("{key} = {value}\n"));
    }
    text
}
