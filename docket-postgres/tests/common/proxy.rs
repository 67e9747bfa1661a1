//! A loopback TCP proxy in front of the test server that reads the client side of the
//! PostgreSQL wire protocol. It counts *work round trips* — batches of extended-protocol
//! messages closed by `Sync`, and simple `Query` messages — and can cut the connection right
//! after a statement was sent, before its answer comes back.
//!
//! A lone `Sync` (sqlx's liveness test when a connection goes back to its pool) carries no
//! work and is not counted as one; it is counted apart ([`Proxy::pings`]). Only plain-text
//! connections are supported (`sslmode=disable`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
pub struct Counters {
    round_trips: AtomicU64,
    /// Lone `Sync` messages: a round trip that carries no work.
    pings: AtomicU64,
    /// Statement-executing batches still to deliver before the cut; 0: no cut armed.
    cut_countdown: AtomicU64,
    /// The proxy's local port on the server side of every connection cut so far: the
    /// `client_port` under which the server lists that connection's session.
    cut_ports: Mutex<Vec<u16>>,
}

pub struct Proxy {
    pub addr: SocketAddr,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy to `upstream` (host:port).
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let counters = Arc::new(Counters::default());
        let shared = counters.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let Ok(local) = server.local_addr() else {
                    continue;
                };
                tokio::spawn(relay(client, server, local.port(), shared.clone()));
            }
        });
        Proxy {
            addr,
            counters,
            task,
        }
    }

    /// Work round trips seen so far, over every connection.
    pub fn round_trips(&self) -> u64 {
        self.counters.round_trips.load(Ordering::SeqCst)
    }

    /// The next batch that executes a statement is delivered to the server, then both sides
    /// of that connection are closed before any answer is relayed.
    pub fn cut_after_next_execute(&self) {
        self.cut_after_executes(1);
    }

    /// The server-side ports of the connections cut so far, oldest first. A cut connection's
    /// session stays on the server (running what it was sent) until it reads the close.
    pub fn cut_ports(&self) -> Vec<u16> {
        self.counters
            .cut_ports
            .lock()
            .expect("cut ports lock")
            .clone()
    }

    /// Lone `Sync` messages seen so far, over every connection.
    pub fn pings(&self) -> u64 {
        self.counters.pings.load(Ordering::SeqCst)
    }

    /// As [`Proxy::cut_after_next_execute`], for the `n`-th batch from now that executes a
    /// statement (`BEGIN` and `COMMIT`, sent as simple queries, count too).
    pub fn cut_after_executes(&self, n: u64) {
        self.counters.cut_countdown.store(n, Ordering::SeqCst);
    }
}

async fn relay(client: TcpStream, server: TcpStream, port: u16, counters: Arc<Counters>) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let cut = Arc::new(AtomicBool::new(false));
    let back = tokio::spawn(server_to_client(server_read, client_write, cut.clone()));
    client_to_server(client_read, server_write, port, counters, cut).await;
    back.abort();
}

async fn server_to_client(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, cut: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if cut.load(Ordering::SeqCst) || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

async fn read_exact(from: &mut OwnedReadHalf, n: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; n];
    from.read_exact(&mut buf).await.ok()?;
    Some(buf)
}

fn len_of(bytes: &[u8]) -> usize {
    let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    usize::try_from(len).unwrap_or(usize::MAX)
}

async fn client_to_server(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    port: u16,
    counters: Arc<Counters>,
    cut: Arc<AtomicBool>,
) {
    // Startup phase: untyped messages (length, then a code); SSL/GSS requests repeat it.
    loop {
        let Some(head) = read_exact(&mut from, 8).await else {
            return;
        };
        let Some(rest) = read_exact(&mut from, len_of(&head).saturating_sub(8)).await else {
            return;
        };
        if to.write_all(&head).await.is_err() || to.write_all(&rest).await.is_err() {
            return;
        }
        let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if code != 80_877_103 && code != 80_877_104 {
            break;
        }
    }
    let mut batch: Vec<u8> = Vec::new();
    let mut has_work = false;
    let mut has_execute = false;
    loop {
        let Some(head) = read_exact(&mut from, 5).await else {
            return;
        };
        let Some(body) = read_exact(&mut from, len_of(&head[1..]).saturating_sub(4)).await else {
            return;
        };
        batch.extend_from_slice(&head);
        batch.extend_from_slice(&body);
        let kind = head[0];
        match kind {
            b'S' | b'Q' => {
                if has_work || kind == b'Q' {
                    counters.round_trips.fetch_add(1, Ordering::SeqCst);
                } else {
                    counters.pings.fetch_add(1, Ordering::SeqCst);
                }
                let cutting = (has_execute || kind == b'Q')
                    && counters.cut_countdown.fetch_update(
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                        |n| n.checked_sub(1),
                    ) == Ok(1);
                if cutting {
                    cut.store(true, Ordering::SeqCst);
                    // Recorded before the client can see the close, so a caller that got
                    // its error back always finds the port here.
                    counters
                        .cut_ports
                        .lock()
                        .expect("cut ports lock")
                        .push(port);
                }
                if to.write_all(&batch).await.is_err() {
                    return;
                }
                batch.clear();
                has_work = false;
                has_execute = false;
                if cutting {
                    // Dropping both halves closes the client's socket; the server has the
                    // whole batch and runs it, but its answer is never relayed.
                    return;
                }
            }
            b'X' => {
                let _ = to.write_all(&batch).await;
                return;
            }
            b'E' => {
                has_work = true;
                has_execute = true;
            }
            _ => has_work = true,
        }
    }
}
