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
}

impl Workers {
    /// Opens the writer (configures WAL and durability, migrates), then the readers.
    pub(crate) async fn start(path: &Path, options: &SqliteOptions) -> Result<Self, StoreError> {
        let mut workers = Workers {
            writer: None,
            readers: None,
            threads: Vec::new(),
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
                serve(conn, || writer_rx.recv().ok());
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
                    serve(conn, || {
                        let queue = queue.lock().unwrap_or_else(|p| p.into_inner());
                        queue.recv().ok()
                    });
                })
                .map_err(|e| permanent(format!("cannot start a sqlite reader thread: {e}")))?;
            workers.threads.push(handle);
            await_ready(ready_rx).await?;
        }
        workers.readers = Some(reader_tx);
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
        self.writer = None;
        self.readers = None;
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
fn serve(mut conn: Connection, mut next: impl FnMut() -> Option<Job>) {
    while let Some(job) = next() {
        let _ = catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
    }
}

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
