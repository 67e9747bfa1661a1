//! The `docket` command on PostgreSQL (feature `postgres`): the demo and the admin commands
//! end to end, a server that never answers, and passwords never printed. Each test uses its
//! own schema, dropped at the end. The server is `DOCKET_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`); without one the tests fail.
#![cfg(feature = "postgres")]

mod support;

use std::process::Command;
use std::time::Duration;

fn server_url() -> String {
    std::env::var("DOCKET_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A fresh schema's URL; the schema is dropped when the guard is.
struct Schema {
    url: String,
}

impl Schema {
    fn fresh(tag: &str) -> Schema {
        let unique = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Schema {
            url: format!(
                "{}?schema=docket_t_{tag}_{}_{unique}",
                server_url(),
                std::process::id()
            ),
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let url = self.url.clone();
        // `Drop` cannot await: drop the schema on a helper thread with its own runtime.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?
                .block_on(docket_postgres::PostgresStore::drop_schema(&url))
                .map_err(|e| e.to_string())
        })
        .join();
        if !matches!(dropped, Ok(Ok(_))) {
            eprintln!("could not drop the test schema of {}", self.url);
        }
    }
}

#[test]
fn the_demo_and_the_admin_commands_run_on_postgres() {
    let schema = Schema::fresh("cli");
    let docket = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_docket"))
            .args(args)
            .args(["--backend", &schema.url])
            .env("RUST_LOG", "error")
            .output()
            .expect("the docket binary runs")
    };
    let out = docket(&["demo", "--runs", "12"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("result: OK"), "{stdout}");
    let verify = docket(&["run", "verify", "--expect-terminal"]);
    let verified = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "{verified}");
    assert!(
        verified.contains("verified 12 runs: 0 with violations"),
        "{verified}"
    );
    // A second demo on the same URL starts from an empty schema.
    let out = docket(&["demo", "--runs", "4", "--no-workers"]);
    assert!(out.status.success());
    let listed = docket(&["run", "list", "--json"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout)
            .matches("\"id\":")
            .count(),
        4
    );
}

/// A local port that accepts TCP connections and never answers them.
pub fn silent_listener() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let addr = listener.local_addr().expect("local address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept() {
            held.push(socket);
        }
    });
    addr
}

#[test]
fn a_server_that_never_answers_fails_the_command_at_the_connect_timeout() {
    let addr = silent_listener();
    for (query, at_least) in [
        ("", Duration::from_secs(10)),
        ("?connect_timeout=1", Duration::from_secs(1)),
    ] {
        let url = format!("postgres://postgres@{addr}/test{query}");
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

#[test]
fn no_command_prints_the_password_of_a_postgres_url() {
    // The test server trusts local connections, so any password is accepted.
    const SECRET: &str = "pg-Secret-7b1f";
    let schema = Schema::fresh("redact");
    let with_password = |url: &str| url.replacen("postgres@", &format!("postgres:{SECRET}@"), 1);
    let url = with_password(&schema.url);
    assert!(
        url.contains(SECRET),
        "the test server URL names user postgres: {url}"
    );
    let unreachable = with_password("postgres://postgres@127.0.0.1:1/test?connect_timeout_ms=2000");
    let printed =
        support::cli::everything_printed(&url, &format!("{url}&pool_size=0"), &unreachable);
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

#[test]
fn the_ops_commands_show_what_a_session_registered_through_the_library_on_postgres() {
    let schema = Schema::fresh("ops");
    support::ops::check_the_ops_commands(&schema.url);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_of_two_holds_across_four_worker_processes_on_postgres() {
    let schema = Schema::fresh("caps");
    support::caps::a_cap_of_two_holds_across_four_worker_processes(&schema.url).await;
}
