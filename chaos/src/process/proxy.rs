//! The reply-dropping TCP proxy between the worker processes and a private server.
//!
//! It forwards bytes both ways unchanged until the harness *arms* a drop. The next request
//! that commits something then meets the cut, in one of two seeded ways:
//!
//! * **after forwarding** — the request goes to the server, the proxy waits for the server's
//!   reply, throws it away and closes both sides: the write landed, the worker hears a broken
//!   connection after sending, which its store reports as `Ambiguous`;
//! * **before forwarding** — the proxy closes both sides without sending the request: nothing
//!   landed, and the worker, which had written its request, hears the same `Ambiguous`.
//!
//! Which request "commits": for PostgreSQL, the `COMMIT` of a transaction that carried a large
//! statement (a moment's document and events; claims and reads are small); for Redis, a large
//! request (a commit script's arguments). A cut elsewhere would only make a retryable read
//! error or an ambiguous claim, which prove less.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A client→server chunk at least this long carries a document (a commit, a start).
const LARGE_REQUEST: usize = 1024;
/// How long a cut after forwarding waits for the server's reply before closing anyway.
const REPLY_WAIT: Duration = Duration::from_secs(2);

/// The wire protocol behind the proxy (decides which request is a commit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// PostgreSQL: cut at a `COMMIT` after a large statement.
    Postgres,
    /// Redis: cut at a large request.
    Redis,
}

/// Cuts made so far, by kind.
#[derive(Debug, Default)]
pub struct Cuts {
    /// Requests forwarded whose reply was dropped.
    pub after_forward: AtomicU64,
    /// Requests dropped before forwarding.
    pub before_forward: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    upstream: u16,
    protocol: Protocol,
    seed: u64,
    armed: AtomicU64,
    healed: AtomicBool,
    cuts: Cuts,
}

/// A running proxy; it stops when the runtime does.
#[derive(Debug, Clone)]
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on a free port and forwards to `127.0.0.1:upstream`.
    ///
    /// # Errors
    /// No port to listen on.
    pub async fn start(upstream: u16, protocol: Protocol, seed: u64) -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("proxy: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let shared = Arc::new(Shared {
            upstream,
            protocol,
            seed,
            armed: AtomicU64::new(0),
            healed: AtomicBool::new(false),
            cuts: Cuts::default(),
        });
        let accepting = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let shared = Arc::clone(&accepting);
                tokio::spawn(async move {
                    // A refused upstream (the server is restarting) just closes the client.
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", shared.upstream)).await {
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        pipe(client, server, &shared).await;
                    }
                });
            }
        });
        Ok(Proxy { port, shared })
    }

    /// The port workers connect to.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Arms one drop: the next commit request through the proxy is cut.
    pub fn arm(&self) {
        self.shared.armed.fetch_add(1, Ordering::SeqCst);
    }

    /// Disarms every pending drop and arms no more.
    pub fn heal(&self) {
        self.shared.healed.store(true, Ordering::SeqCst);
        self.shared.armed.store(0, Ordering::SeqCst);
    }

    /// Cuts made: (after forwarding, before forwarding).
    #[must_use]
    pub fn cuts(&self) -> (u64, u64) {
        (
            self.shared.cuts.after_forward.load(Ordering::SeqCst),
            self.shared.cuts.before_forward.load(Ordering::SeqCst),
        )
    }
}

impl Shared {
    /// Takes one armed drop, if any.
    fn take_armed(&self) -> bool {
        !self.healed.load(Ordering::SeqCst)
            && self
                .armed
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
    }

    /// Whether the `n`th cut forwards its request first (seeded; about half do).
    fn forwards(&self, n: u64) -> bool {
        let digest = Sha256::digest(format!("{}/cut/{n}", self.seed).as_bytes());
        digest[0] & 1 == 0
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What the proxy knows of a PostgreSQL connection's explicit transaction.
#[derive(Debug, Default)]
struct Transaction {
    /// A `BEGIN` went through and no `COMMIT`/`ROLLBACK` yet.
    open: bool,
    /// The open transaction carried a large statement.
    large: bool,
}

/// The Sync message that ends an extended-protocol request.
const SYNC: &[u8] = b"S\0\0\0\x04";

/// Whether `chunk` (one client write) commits a document on PostgreSQL: inside an explicit
/// transaction that carried a large statement, its `COMMIT`; outside one, a large Bind …
/// Execute … Sync request (a single statement commits, implicitly, at its Sync). A large
/// Parse prepares a statement and commits nothing.
fn postgres_commit(chunk: &[u8], tx: &mut Transaction) -> bool {
    if chunk.first() == Some(&b'Q') && contains(chunk, b"BEGIN") {
        *tx = Transaction {
            open: true,
            large: false,
        };
    }
    if tx.open {
        if chunk.len() >= LARGE_REQUEST {
            tx.large = true;
        }
        let ends = contains(chunk, b"COMMIT\0") || contains(chunk, b"ROLLBACK\0");
        let commit = tx.large && contains(chunk, b"COMMIT\0");
        if ends {
            *tx = Transaction::default();
        }
        return commit;
    }
    chunk.len() >= LARGE_REQUEST && chunk.first() == Some(&b'B') && chunk.ends_with(SYNC)
}

/// Forwards both ways until either side closes or a cut ends the connection.
async fn pipe(mut client: TcpStream, mut server: TcpStream, shared: &Shared) {
    let (mut client_r, mut client_w) = client.split();
    let (mut server_r, mut server_w) = server.split();
    let mut up = vec![0u8; 64 * 1024];
    let mut down = vec![0u8; 64 * 1024];
    let mut transaction = Transaction::default();
    loop {
        tokio::select! {
            read = client_r.read(&mut up) => {
                let Ok(n) = read else { return };
                if n == 0 {
                    return;
                }
                let chunk = &up[..n];
                let commit = match shared.protocol {
                    Protocol::Redis => n >= LARGE_REQUEST,
                    Protocol::Postgres => postgres_commit(chunk, &mut transaction),
                };
                if commit && shared.take_armed() {
                    let total = shared.cuts.after_forward.load(Ordering::SeqCst)
                        + shared.cuts.before_forward.load(Ordering::SeqCst);
                    if shared.forwards(total) {
                        if server_w.write_all(chunk).await.is_err() {
                            return;
                        }
                        // The reply (or its first bytes) arrives and is thrown away.
                        let _ = tokio::time::timeout(REPLY_WAIT, server_r.read(&mut down)).await;
                        shared.cuts.after_forward.fetch_add(1, Ordering::SeqCst);
                    } else {
                        shared.cuts.before_forward.fetch_add(1, Ordering::SeqCst);
                    }
                    return;
                }
                if server_w.write_all(chunk).await.is_err() {
                    return;
                }
            }
            read = server_r.read(&mut down) => {
                let Ok(n) = read else { return };
                if n == 0 || client_w.write_all(&down[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(len: usize) -> Vec<u8> {
        let mut chunk = vec![b'B'; len - SYNC.len()];
        chunk.extend_from_slice(SYNC);
        chunk
    }

    #[test]
    fn a_large_single_statement_or_the_commit_of_a_large_transaction_commits() {
        let mut tx = Transaction::default();
        assert!(
            postgres_commit(&bind(2_000), &mut tx),
            "a large Bind … Sync"
        );
        assert!(!postgres_commit(&bind(80), &mut tx), "a claim or a read");
        let mut parse = bind(2_000);
        parse[0] = b'P';
        assert!(!postgres_commit(&parse, &mut tx), "a Parse prepares only");
        assert!(!postgres_commit(SYNC, &mut tx));

        assert!(!postgres_commit(b"Q\0\0\0\x0bBEGIN\0", &mut tx));
        assert!(
            !postgres_commit(&bind(2_000), &mut tx),
            "inside a transaction only its COMMIT commits"
        );
        assert!(postgres_commit(b"Q\0\0\0\x0cCOMMIT\0", &mut tx));
        assert!(!tx.open);

        assert!(!postgres_commit(b"Q\0\0\0\x0bBEGIN\0", &mut tx));
        assert!(
            !postgres_commit(b"Q\0\0\0\x0cCOMMIT\0", &mut tx),
            "a transaction that carried nothing large"
        );
    }

    #[tokio::test]
    async fn an_armed_drop_cuts_one_large_request_and_the_proxy_forwards_the_rest() {
        // An echo server stands in for the database.
        let upstream = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let upstream_port = upstream.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = upstream.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 || socket.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let proxy = Proxy::start(upstream_port, Protocol::Redis, 7)
            .await
            .expect("proxy");
        let mut client = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .expect("connect");
        let large = vec![b'x'; 2 * LARGE_REQUEST];
        client.write_all(&large).await.expect("write");
        let mut echoed = vec![0u8; large.len()];
        client.read_exact(&mut echoed).await.expect("echo");
        assert_eq!(echoed, large, "unarmed, everything is forwarded");

        proxy.arm();
        client.write_all(b"small").await.expect("write");
        let mut small = [0u8; 5];
        client
            .read_exact(&mut small)
            .await
            .expect("small requests pass");
        client.write_all(&large).await.expect("write");
        let mut rest = Vec::new();
        let read = client.read_to_end(&mut rest).await;
        assert!(
            read.is_err() || rest.is_empty(),
            "the cut connection returns no reply"
        );
        let (after, before) = proxy.cuts();
        assert_eq!(after + before, 1);
    }
}
