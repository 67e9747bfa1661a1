//! `docket serve` as a process: it binds loopback, serves the API with a bearer token from the
//! environment, and prints neither the token nor the backend path; a read token cannot act.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ADMIN: &str = "serve-admin-token-0123456789";
const READ: &str = "serve-read-token-0123456789";

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request with `Connection: close`; the status and the whole answer.
fn request(addr: &str, method: &str, path: &str, token: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    (status, answer)
}

#[test]
fn serve_answers_the_api_on_loopback_and_never_prints_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("serve.db");
    let url = format!("sqlite://{}", db.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(["serve", "--listen", "127.0.0.1:0", "--backend", &url])
        .env("DOCKET_CONSOLE_ADMIN_TOKEN", ADMIN)
        .env("DOCKET_CONSOLE_READ_TOKEN", READ)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docket serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("a first line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{line}");
    assert!(line.contains("sqlite backend"), "{line}");

    // The address is printed after the listener is bound, so it accepts at once.
    let (status, answer) = request(&addr, "GET", "/api/v1/runs", READ);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"runs\":[]"), "{answer}");
    let (status, answer) = request(&addr, "GET", "/api/v1/runs", "wrong-token-0123456789");
    assert_eq!(status, 401, "{answer}");
    let (status, answer) = request(&addr, "POST", "/api/v1/runs/nope/cancel", READ);
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = request(&addr, "POST", "/api/v1/runs/nope/cancel", ADMIN);
    assert_eq!(status, 404, "{answer}");
    assert!(answer.contains("run_not_found"), "{answer}");

    drop(server);
    let mut logged = String::new();
    let _ = BufReader::new(stderr).read_to_string(&mut logged);
    for secret in [ADMIN, READ, url.as_str(), &db.display().to_string()] {
        assert!(
            !line.contains(secret) && !logged.contains(secret),
            "printed a secret: {line}{logged}"
        );
    }
}

/// Reads `docket ... ` stdout/stderr until a line holds `http://ADDR`; returns ADDR.
fn address_in(reader: impl std::io::Read) -> String {
    for line in BufReader::new(reader).lines() {
        let line = line.expect("a line");
        if let Some(rest) = line.split("http://").nth(1) {
            return rest
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .expect("an address")
                .to_owned();
        }
    }
    panic!("no address printed");
}

/// The Prometheus lines of `answer` for metric `name`.
fn samples<'a>(answer: &'a str, name: &str) -> Vec<&'a str> {
    answer
        .lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .collect()
}

#[test]
fn metrics_only_and_a_workers_metrics_listener_serve_prometheus_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("metrics.db").display());

    // A worker with a metrics listener on a free port (printed on stderr).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args([
            "worker",
            "--metrics-listen",
            &format!("127.0.0.1:{port}"),
            "--backend",
            &url,
        ])
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docket worker starts");
    let stderr = child.stderr.take().expect("stderr");
    let worker = Server(child);
    let addr = address_in(stderr);
    let (status, answer) = request(&addr, "GET", "/metrics", "");
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("text/plain; version=0.0.4"), "{answer}");
    assert_eq!(
        samples(&answer, "docket_commits_total"),
        vec!["docket_commits_total 0"]
    );
    assert_eq!(
        samples(&answer, "docket_runs{status=\"done\"}"),
        vec!["docket_runs{status=\"done\"} 0"]
    );
    drop(worker);

    // `serve --metrics-only` with a token: 401 without it, only /metrics with it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args([
            "serve",
            "--metrics-only",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            &url,
        ])
        .env("DOCKET_CONSOLE_READ_TOKEN", READ)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("docket serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let addr = address_in(stdout);
    assert_eq!(request(&addr, "GET", "/metrics", "").0, 401);
    let (status, answer) = request(&addr, "GET", "/metrics", READ);
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains("docket_commit_duration_seconds_bucket{le=\"+Inf\"} 0"),
        "{answer}"
    );
    assert_eq!(request(&addr, "GET", "/api/v1/runs", READ).0, 404);
    drop(server);
}
