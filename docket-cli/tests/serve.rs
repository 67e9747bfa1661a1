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
