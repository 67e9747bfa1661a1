//! The `docket` command on Redis (feature `redis`): the demo and a worker process on a fresh
//! namespace, a server that never answers, and passwords never printed. Each test uses its own
//! namespace on the server named by `DOCKET_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`). A missing server fails these tests.
#![cfg(feature = "redis")]

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const URL_VAR: &str = "DOCKET_TEST_REDIS_URL";

/// A fresh namespace on the test server; dropping it deletes its keys.
struct Namespace {
    url: String,
}

impl Namespace {
    fn fresh() -> Namespace {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "docket-facade-test-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Namespace {
            url: with_namespace(&server_url(), &name),
        }
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Drop cannot await and may run inside a runtime: purge on a thread of its own.
        let url = self.url.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let store = docket::connect::connect_redis(&url).await.ok()?;
                store.purge_namespace().await.ok()
            })
        })
        .join();
    }
}

fn server_url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

fn with_namespace(url: &str, namespace: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}namespace={namespace}")
}

fn cli(args: &[&str], url: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(args)
        .args(["--backend", url])
        .env("RUST_LOG", "error")
        .output()
        .expect("the docket binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "docket {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn listed(url: &str, status: &str) -> usize {
    cli(&["run", "list", "--json", "--status", status], url)
        .matches("\"id\":")
        .count()
}

#[test]
fn the_cli_demo_and_worker_run_on_redis_from_a_fresh_namespace() {
    let ns = Namespace::fresh();
    let demo = cli(
        &["demo", "--runs", "8", "--workers", "2", "--no-kill"],
        &ns.url,
    );
    assert!(demo.contains("result: OK"), "{demo}");
    assert_eq!(listed(&ns.url, "done"), 8);

    // A second demo starts from an empty namespace: only its own 4 runs exist.
    cli(&["demo", "--runs", "4", "--no-workers"], &ns.url);
    assert_eq!(listed(&ns.url, "done"), 0);
    assert_eq!(listed(&ns.url, "running"), 4);
    cli(
        &[
            "worker",
            "--until-idle",
            "--poll-interval-ms",
            "100",
            "--idle-check-ms",
            "100",
        ],
        &ns.url,
    );
    // One run of each example graph: the approval run waits for its resolution.
    assert_eq!(listed(&ns.url, "done"), 3);
    assert_eq!(listed(&ns.url, "waiting"), 1);
    let verify = cli(&["run", "verify"], &ns.url);
    assert!(verify.contains("0 with violations"), "{verify}");
}

#[test]
fn a_server_that_never_answers_fails_the_command_at_the_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let addr = listener.local_addr().expect("local address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept() {
            held.push(socket);
        }
    });
    for (query, at_least) in [
        ("", Duration::from_secs(10)),
        ("?connect_timeout_ms=700", Duration::from_millis(700)),
    ] {
        let url = format!("redis://{addr}{query}");
        let out = support::cli::docket(&["run", "list", "--backend", &url])
            .within(Duration::from_secs(120));
        assert_eq!(out.status.code(), Some(1), "{url}: {}", out.stderr);
        assert!(out.stderr.contains("unavailable"), "{}", out.stderr);
        assert!(out.stderr.contains("connect_timeout_ms"), "{}", out.stderr);
        assert!(out.elapsed >= at_least, "{url}: {:?}", out.elapsed);
        assert!(
            out.elapsed < at_least + Duration::from_secs(10),
            "{url}: {:?}",
            out.elapsed
        );
    }
}

/// A throwaway ACL user with a password on the test server, deleted on drop.
struct AclUser {
    name: String,
}

impl AclUser {
    fn create(password: &str) -> AclUser {
        let name = format!("docket-redact-{}-{}", std::process::id(), unique_suffix());
        let client = redis::Client::open(server_url()).expect("server url");
        let mut conn = client
            .get_connection()
            .unwrap_or_else(|e| panic!("the Redis test server must be reachable ({URL_VAR}): {e}"));
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg(&name)
            .arg("on")
            .arg(format!(">{password}"))
            .arg("~*")
            .arg("&*")
            .arg("+@all")
            .query::<()>(&mut conn)
            .expect("ACL SETUSER");
        AclUser { name }
    }
}

impl Drop for AclUser {
    fn drop(&mut self) {
        if let Ok(client) = redis::Client::open(server_url()) {
            if let Ok(mut conn) = client.get_connection() {
                let _ = redis::cmd("ACL")
                    .arg("DELUSER")
                    .arg(&self.name)
                    .query::<()>(&mut conn);
            }
        }
    }
}

fn unique_suffix() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

#[test]
fn no_command_prints_the_password_of_a_redis_url() {
    const SECRET: &str = "redis-Secret-4c2e";
    let user = AclUser::create(SECRET);
    let ns = Namespace::fresh();
    let (scheme, rest) = ns.url.split_once("://").expect("scheme");
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let url = format!("{scheme}://{}:{SECRET}@{host}", user.name);
    let unreachable = format!(
        "redis://{}:{SECRET}@127.0.0.1:1?connect_timeout_ms=2000",
        user.name
    );
    let printed = support::cli::everything_printed(
        &url,
        &format!("{url}&connect_timeout_ms=0"),
        &unreachable,
    );
    assert!(
        printed.contains(":***@"),
        "the URL is shown, redacted:\n{printed:.3000}"
    );
    let leaks: Vec<&str> = printed.lines().filter(|l| l.contains(SECRET)).collect();
    assert!(
        leaks.is_empty(),
        "the password was printed:\n{}",
        leaks.join("\n")
    );
}
