//! Connections handed back without sqlx's on-release round trip.
//!
//! sqlx tests every connection that goes back to its pool by sending a lone `Sync` and
//! waiting for the server's answer (`return_to_pool` in sqlx-core 0.8, whatever the pool's
//! options). That is a second round trip for every call that checks out a connection for one
//! statement: on loopback it doubles the sends, receives and wake-ups of both processes. In
//! `docket bench` at 64 vehicles on PostgreSQL, half of everything the client sent was that
//! `Sync` (`strace` of the bench process: 838 of 1,676 `sendto` calls in one second).
//!
//! The test buys nothing a finished call needs. sqlx's connection already waits for the
//! server's `ReadyForQuery` of anything outstanding before it sends the next statement (so a
//! connection whose last answer was not read to the end heals at its next use), and a broken
//! connection shows at its next statement (as an error the caller classifies) just as it does
//! after a `Sync` it passed a moment before breaking. What the test does do is flush a
//! rollback sqlx queued when a transaction was dropped unfinished, which must not wait for
//! the next caller (its locks would stay held until then).
//!
//! So a [`WarmPool`] keeps a short list of connections handed back with
//! [`WarmConnection::reuse`] — only after the caller read its answer, and only when the
//! connection has nothing queued to send and no transaction open — and gives them out again
//! before asking sqlx's pool. A connection merely dropped (an error path, a cancelled call)
//! goes back through sqlx's pool and its test, as before. While any caller waits on sqlx's
//! pool (more callers than connections), handed-back connections go to sqlx's pool too, which
//! serves its waiters in order: no connection sits warm while a caller waits, and under that
//! contention the pool behaves exactly as sqlx's alone. Two designs that served waiting
//! callers from the warm list instead (waking one when a connection came back; handing it
//! straight to the oldest) were measured and not kept: with 64 callers on 10 connections the
//! bench's bare-update floor fell to 3,600–5,200 updates/s in 7 of 11 runs, against
//! 15,700–17,800 in the others, the server idle and waiting for the client meanwhile
//! (`pg_stat_activity`: `ClientRead`) — why, we did not find; the design kept did not fall in
//! six runs (13,800–14,200, which is sqlx's pool alone at that contention). Connections that
//! sat in the list for [`COOL_AFTER`] go back to sqlx's pool, which closes idle ones after its
//! idle timeout; the list holds at most the pool's size less one, so it never holds every
//! connection and a caller of the bare pool ([`WarmPool::pool`]) is never left waiting on it.
//!
//! `should_flush` is a public (if undocumented) method of sqlx's `Connection` trait in 0.8:
//! whether the connection's write buffer holds anything, such as a queued rollback.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool, Postgres};
use sqlx::Connection;

/// How long a connection may sit in the warm list before it goes back to sqlx's pool.
pub const COOL_AFTER: Duration = Duration::from_secs(30);

/// An sqlx pool with a list of warm connections in front of it. Cheap to clone (clones share
/// the pool and the list).
#[derive(Clone, Debug)]
pub struct WarmPool {
    pool: PgPool,
    warm: Arc<WarmList>,
}

#[derive(Debug)]
struct WarmList {
    state: Mutex<WarmState>,
    /// Connections the list may hold: the pool's size less one.
    capacity: usize,
}

#[derive(Debug, Default)]
struct WarmState {
    /// Most recently handed back last, each with the moment it was.
    idle: Vec<(PoolConnection<Postgres>, Instant)>,
    /// Callers waiting on sqlx's pool. While there are any, a connection handed back goes to
    /// sqlx's pool (which serves its waiters in order), never to the warm list: no
    /// connection sits warm while a caller waits for one.
    waiting: usize,
}

impl WarmPool {
    /// `pool` with an empty warm list holding at most `pool_size - 1` connections (the
    /// pool's `max_connections`).
    #[must_use]
    pub fn new(pool: PgPool, pool_size: u32) -> Self {
        let capacity = usize::try_from(pool_size.saturating_sub(1)).unwrap_or(usize::MAX);
        Self {
            pool,
            warm: Arc::new(WarmList {
                state: Mutex::new(WarmState::default()),
                capacity,
            }),
        }
    }

    /// The sqlx pool behind the list.
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Callers of [`WarmPool::acquire`] waiting on sqlx's pool right now.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.warm.lock().waiting
    }

    /// A connection: the most recently handed back one, else one from sqlx's pool.
    ///
    /// Cancel-safe: a cancelled call holds nothing.
    ///
    /// # Errors
    /// The pool's: no connection within its acquire timeout, or the server unreachable.
    pub async fn acquire(&self) -> Result<WarmConnection, sqlx::Error> {
        {
            let mut state = self.warm.lock();
            if let Some(conn) = self.warm.take(&mut state) {
                return Ok(self.wrap(conn));
            }
            state.waiting += 1;
        }
        let waiting = Waiting(&self.warm);
        let acquired = self.pool.acquire().await;
        drop(waiting);
        acquired.map(|conn| self.wrap(conn))
    }

    /// Gives every warm connection back to sqlx's pool, then closes the pool
    /// ([`PgPool::close`]: waits for the connections in use to come back, and closes all).
    pub async fn close(&self) {
        let idle = std::mem::take(&mut self.warm.lock().idle);
        drop(idle);
        self.pool.close().await;
    }

    fn wrap(&self, conn: PoolConnection<Postgres>) -> WarmConnection {
        WarmConnection {
            conn: Some(conn),
            warm: Arc::clone(&self.warm),
        }
    }
}

impl WarmList {
    fn lock(&self) -> std::sync::MutexGuard<'_, WarmState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The most recently handed back connection; those that cooled off go back to sqlx's
    /// pool on the way.
    fn take(&self, state: &mut WarmState) -> Option<PoolConnection<Postgres>> {
        let cooled = state
            .idle
            .iter()
            .take_while(|(_, since)| since.elapsed() >= COOL_AFTER)
            .count();
        state.idle.drain(..cooled);
        state.idle.pop().map(|(conn, _)| conn)
    }

    /// Keeps `conn` warm, unless a caller is waiting on sqlx's pool or the list is full:
    /// then it goes back to sqlx's pool.
    fn put(&self, conn: PoolConnection<Postgres>) {
        let mut state = self.lock();
        if state.waiting == 0 && state.idle.len() < self.capacity {
            state.idle.push((conn, Instant::now()));
        } else {
            drop(state);
            drop(conn);
        }
    }
}

/// One caller counted as waiting on sqlx's pool, until it has its connection or gives up.
struct Waiting<'a>(&'a WarmList);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.lock().waiting -= 1;
    }
}

impl Drop for WarmList {
    fn drop(&mut self) {
        let state = std::mem::take(
            self.state
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (conn, _) in state.idle {
            if tokio::runtime::Handle::try_current().is_ok() {
                // Back to sqlx's pool (which spawns its test on this runtime).
                drop(conn);
            } else {
                // No runtime to return it on: close it with the pool's count released.
                drop(conn.detach());
            }
        }
    }
}

/// A connection from a [`WarmPool`]. Dropped, it goes back to sqlx's pool (with its test);
/// handed back with [`WarmConnection::reuse`], to the warm list.
#[derive(Debug)]
pub struct WarmConnection {
    /// `None` only after `reuse` took it.
    conn: Option<PoolConnection<Postgres>>,
    warm: Arc<WarmList>,
}

impl WarmConnection {
    /// Hands the connection back for the next caller without a round trip. Call it only once
    /// the last statement's answer has been read; a connection with a transaction open or
    /// anything queued to send (a rollback sqlx queued for a dropped transaction) goes back
    /// through sqlx's pool instead.
    pub fn reuse(mut self) {
        if let Some(conn) = self.conn.take() {
            if conn.is_in_transaction() || conn.should_flush() {
                drop(conn);
            } else {
                self.warm.put(conn);
            }
        }
    }
}

impl Deref for WarmConnection {
    type Target = PgConnection;

    fn deref(&self) -> &Self::Target {
        self.conn
            .as_deref()
            .expect("a warm connection is only emptied by `reuse`, which consumes it")
    }
}

impl DerefMut for WarmConnection {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.conn
            .as_deref_mut()
            .expect("a warm connection is only emptied by `reuse`, which consumes it")
    }
}
