//! The connection threads: one writer connection on its own thread, fed by a channel, and a
//! small pool of reader threads sharing one job queue.
//!
//! rusqlite is synchronous, so every call runs on a thread that owns its connection and the
//! async side awaits a tokio oneshot. A single writer per process means writes of this process
//! never contend for SQLite's write lock among themselves; `BEGIN IMMEDIATE` plus
//! `busy_timeout` handles other processes. In WAL mode readers never block the writer.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use docket_core::store::{Message, StoreError};

use crate::error::permanent;
use crate::options::SqliteOptions;
use crate::schema;

/// Work for a connection thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send + 'static>;

/// The writer and reader threads of one store. Dropping it lets queued jobs finish, then
/// joins every thread, so the file is closed when the drop returns.
pub(crate) struct Workers {
    writer: Option<mpsc::Sender<Job>>,
    readers: Option<mpsc::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    /// Until the store has opened, a drop (a failed or timed-out open) detaches the threads
    /// instead of joining them: a thread may still be waiting for the write lock, and the
    /// caller must not wait for it longer than the connect timeout.
    opened: bool,
}

impl Workers {
    /// Opens the writer (configures WAL and durability, migrates), then the readers, within
    /// `options.connect_timeout`.
    pub(crate) async fn start(path: &Path, options: &SqliteOptions) -> Result<Self, StoreError> {
        let timeout = options.connect_timeout;
        match tokio::time::timeout(timeout, Self::open(path, options)).await {
            Ok(opened) => opened,
            Err(_) => Err(StoreError::retryable(Message(format!(
                "sqlite could not open {} within {} ms (connect_timeout_ms); another process \
                 may hold its write lock",
                path.display(),
                timeout.as_millis()
            )))),
        }
    }

    async fn open(path: &Path, options: &SqliteOptions) -> Result<Self, StoreError> {
        let mut workers = Workers {
            writer: None,
            readers: None,
            threads: Vec::new(),
            opened: false,
        };
        let (writer_tx, writer_rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = oneshot::channel();
        let (p, o) = (path.to_path_buf(), options.clone());
        let handle = std::thread::Builder::new()
            .name("docket-sqlite-writer".into())
            .spawn(move || {
                let conn = match open_writer(&p, &o) {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                serve(conn, o.statement_timeout, || writer_rx.recv().ok());
            })
            .map_err(|e| permanent(format!("cannot start the sqlite writer thread: {e}")))?;
        workers.threads.push(handle);
        await_ready(ready_rx).await?;
        workers.writer = Some(writer_tx);

        let (reader_tx, reader_rx) = mpsc::channel::<Job>();
        let reader_rx = Arc::new(Mutex::new(reader_rx));
        for index in 0..options.readers {
            let (ready_tx, ready_rx) = oneshot::channel();
            let (p, o, queue) = (path.to_path_buf(), options.clone(), Arc::clone(&reader_rx));
            let handle = std::thread::Builder::new()
                .name(format!("docket-sqlite-reader-{index}"))
                .spawn(move || {
                    let conn = match open_reader(&p, &o) {
                        Ok(conn) => {
                            let _ = ready_tx.send(Ok(()));
                            conn
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    // The lock is held only while waiting for the next job, never while
                    // running one, so readers execute concurrently.
                    serve(conn, o.statement_timeout, || {
                        let queue = queue.lock().unwrap_or_else(|p| p.into_inner());
                        queue.recv().ok()
                    });
                })
                .map_err(|e| permanent(format!("cannot start a sqlite reader thread: {e}")))?;
            workers.threads.push(handle);
            await_ready(ready_rx).await?;
        }
        workers.readers = Some(reader_tx);
        workers.opened = true;
        Ok(workers)
    }

    /// Runs `f` on the writer connection.
    ///
    /// Not cancel safe: once queued, the job runs even if this future is dropped.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        submit(self.writer.as_ref(), f, true).await
    }

    /// Runs `f` on a reader connection (`query_only`).
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        submit(self.readers.as_ref(), f, false).await
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Closing the queues ends every thread once it is done with its current job.
        self.writer = None;
        self.readers = None;
        if !self.opened {
            return;
        }
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

async fn submit<T, F>(
    queue: Option<&mpsc::Sender<Job>>,
    f: F,
    is_write: bool,
) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
{
    let queue = queue.ok_or_else(|| permanent("the sqlite store is closed"))?;
    let (reply_tx, reply_rx) = oneshot::channel();
    queue
        .send(Box::new(move |conn: &mut Connection| {
            let _ = reply_tx.send(f(conn));
        }))
        .map_err(|_| permanent("the sqlite connection thread has stopped"))?;
    match reply_rx.await {
        Ok(result) => result,
        // The job was taken but never answered (it panicked): a write may have committed.
        Err(_) if is_write => Err(StoreError::ambiguous(Message(
            "the sqlite writer stopped before answering".into(),
        ))),
        Err(_) => Err(permanent("a sqlite reader stopped before answering")),
    }
}

async fn await_ready(ready: oneshot::Receiver<Result<(), StoreError>>) -> Result<(), StoreError> {
    ready
        .await
        .map_err(|_| permanent("a sqlite connection thread stopped while opening"))?
}

/// Runs jobs until the queue closes. A panicking job drops its reply (the caller sees the
/// failure) and the thread keeps serving; rusqlite rolls back an open transaction on unwind.
///
/// Each job gets `statement_timeout`: SQLite's progress handler (called every
/// [`PROGRESS_OPS`] virtual-machine steps) interrupts a statement still running past the
/// job's deadline, which fails it with `SQLITE_INTERRUPT` (a retryable error).
fn serve(mut conn: Connection, statement_timeout: Duration, mut next: impl FnMut() -> Option<Job>) {
    let deadline: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let watched = Arc::clone(&deadline);
    let installed = conn.progress_handler(
        PROGRESS_OPS,
        Some(move || {
            let deadline = *watched.lock().unwrap_or_else(|p| p.into_inner());
            deadline.is_some_and(|at| Instant::now() >= at)
        }),
    );
    // Only a connection owned by another handle refuses a handler; ours never is.
    debug_assert!(installed.is_ok());
    while let Some(job) = next() {
        *deadline.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Instant::now() + statement_timeout);
        let _ = catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
        *deadline.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Virtual-machine steps between two deadline checks: a few microseconds of work, so a check
/// costs nothing measurable and a runaway statement stops promptly.
const PROGRESS_OPS: std::os::raw::c_int = 10_000;

fn open_writer(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_error(path, e))?;
    schema::configure_writer(&conn, options)?;
    schema::migrate(&mut conn)?;
    Ok(conn)
}

fn open_reader(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_error(path, e))?;
    schema::configure_reader(&conn, options)?;
    Ok(conn)
}

fn open_error(path: &Path, error: rusqlite::Error) -> StoreError {
    permanent(format!(
        "cannot open sqlite database {}: {error}",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SqlResult;

    /// Counts forever: only an interrupt stops it.
    const ENDLESS: &str =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

    #[tokio::test]
    async fn a_statement_past_its_timeout_is_interrupted_and_the_next_job_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = SqliteOptions {
            statement_timeout: Duration::from_millis(150),
            readers: 1,
            ..SqliteOptions::default()
        };
        let workers = Workers::start(&dir.path().join("t.db"), &options)
            .await
            .expect("open");
        let started = Instant::now();
        let endless = |conn: &mut Connection| {
            conn.query_row(ENDLESS, [], |row| row.get::<_, i64>(0))
                .sql()
        };
        let read = tokio::time::timeout(Duration::from_secs(30), workers.read(endless))
            .await
            .expect("the reader answers before the outer deadline");
        let err = read.expect_err("interrupted");
        assert!(err.is_retryable(), "{err}");
        assert!(err.to_string().contains("interrupt"), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let write = tokio::time::timeout(Duration::from_secs(30), workers.write(endless))
            .await
            .expect("the writer answers before the outer deadline");
        assert!(write.expect_err("interrupted").is_retryable());
        // The deadline is per job: quick jobs still run.
        let one = workers
            .read(|conn| {
                conn.query_row("SELECT 1", [], |row| row.get::<_, i64>(0))
                    .sql()
            })
            .await
            .expect("a quick read");
        assert_eq!(one, 1);
    }
}
