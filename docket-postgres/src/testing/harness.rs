//! The conformance harness: one fresh schema per case, dropped in the background.
//!
//! Creating and dropping a schema costs tens of milliseconds of catalog work and file syncs,
//! and the property test opens one per generated history. Drops therefore go to one dropper
//! thread per harness (its own runtime and connection) instead of blocking the case that
//! dropped its guard; the last handle to the harness (the harness itself or a guard) waits for
//! every queued drop, so no schema outlives its test.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use async_trait::async_trait;
use docket_conformance::{Capabilities, Harness};
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::store::{Backend, Message, StoreError};
use sqlx::{Connection, PgConnection};

use crate::options::PostgresOptions;
use crate::store::PostgresStore;

/// The test server used when `DOCKET_TEST_POSTGRES_URL` is unset.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The test server URL: `DOCKET_TEST_POSTGRES_URL` or [`DEFAULT_TEST_URL`].
///
/// It may carry Docket's own URL parameters: with
/// `?pooler=transaction&listen_url=<direct URL>` every harness store (and the schema dropper)
/// goes through a transaction pooler — that is how the conformance suite runs behind
/// PgBouncer.
#[must_use]
pub fn test_url() -> String {
    std::env::var("DOCKET_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_TEST_URL.to_owned())
}

/// A fresh schema name for one test: `docket_t_<uuid without hyphens>`.
#[must_use]
pub fn fresh_schema_name() -> String {
    format!("docket_t_{}", uuid::Uuid::new_v4().simple())
}

/// The conformance harness: every case gets a store in its own fresh schema.
///
/// Its stores' sessions run with `synchronous_commit = off`: the suite checks what commits
/// do and who sees them, which that setting does not change (it only lets the server
/// acknowledge before the WAL reaches the disk), and waiting for one disk flush per commit
/// would dominate the suite's time. Crash durability is PostgreSQL's own business (see the
/// crate docs).
#[derive(Clone, Debug)]
pub struct PostgresHarness {
    url: String,
    pool_size: u32,
    poll_only: bool,
    dropper: Arc<Dropper>,
}

impl Default for PostgresHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl PostgresHarness {
    /// A harness for [`test_url`] with a pool of 10 connections per case.
    #[must_use]
    pub fn new() -> Self {
        Self::for_url(test_url())
    }

    fn for_url(url: String) -> Self {
        Self {
            dropper: Arc::new(Dropper::new(url.clone())),
            url,
            pool_size: 10,
            poll_only: false,
        }
    }

    /// The same harness, opening stores in poll-only (transaction pooler) mode.
    #[must_use]
    pub fn poll_only(mut self) -> Self {
        self.poll_only = true;
        self
    }

    /// The same harness with another pool size per case.
    #[must_use]
    pub fn pool_size(mut self, size: u32) -> Self {
        self.pool_size = size;
        self
    }

    /// The same harness against another server URL.
    #[must_use]
    pub fn url(self, url: impl Into<String>) -> Self {
        Self {
            pool_size: self.pool_size,
            poll_only: self.poll_only,
            ..Self::for_url(url.into())
        }
    }

    /// The options the stores connect with: the URL's own Docket parameters, and the
    /// server's driver URL with `synchronous_commit = off` for their sessions (see the type
    /// docs; behind a transaction pooler that setting is sent with `SET LOCAL`).
    fn store_options(&self) -> Result<PostgresOptions, StoreError> {
        let mut options = crate::options::parse_url(&self.url)?;
        let separator = if options.url.contains('?') { '&' } else { '?' };
        options.url = format!("{}{separator}options[synchronous_commit]=off", options.url);
        options.pool_size = self.pool_size;
        if self.poll_only {
            options.poll_only = true;
            options.listen_url = None;
        }
        Ok(options)
    }

    /// Whether the stores offer wakeups (not in poll-only mode).
    fn wakeups(&self) -> bool {
        !self.poll_only
            && crate::options::parse_url(&self.url).is_ok_and(|options| !options.poll_only)
    }

    /// A store in a fresh schema, with the guard that drops the schema.
    ///
    /// # Errors
    /// Any failure to reach the server or to migrate the schema; an unreachable server is
    /// reported naming `DOCKET_TEST_POSTGRES_URL`.
    pub async fn open_store(&self) -> Result<(PostgresStore, SchemaGuard), StoreError> {
        let schema = fresh_schema_name();
        let store = self.connect_to(&schema).await;
        // The guard exists whether or not the migration succeeded, so a failed migration is
        // cleaned up too (the drop is `IF EXISTS`).
        let mut guard = SchemaGuard {
            schema,
            store: None,
            dropper: Arc::clone(&self.dropper),
        };
        match store {
            Ok(store) => {
                guard.store = Some(store.clone());
                Ok((store, guard))
            }
            Err(error) => Err(self.explain(error)),
        }
    }

    /// A new store value on `schema`, as a restarted process would open it.
    async fn connect_to(&self, schema: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::open(PostgresOptions {
            schema: schema.to_owned(),
            ..self.store_options()?
        })
        .await
    }

    /// Names the knob when the server cannot be reached: a missing server fails the tests,
    /// it never skips them.
    fn explain(&self, error: StoreError) -> StoreError {
        let StoreError::Unavailable { retryable, .. } = &error else {
            return error;
        };
        let retryable = *retryable;
        let message = Message(format!(
            "the PostgreSQL test server at {} is not usable ({error}); start it or point \
             DOCKET_TEST_POSTGRES_URL at one (tests fail rather than skip without it)",
            docket_core::store::url::redact(&self.url)
        ));
        if retryable {
            StoreError::retryable(message)
        } else {
            StoreError::permanent(message)
        }
    }
}

/// Owns one case's schema: dropping it queues `DROP SCHEMA … CASCADE`, which is done before
/// the harness that made it is gone.
pub struct SchemaGuard {
    schema: String,
    store: Option<PostgresStore>,
    dropper: Arc<Dropper>,
}

impl std::fmt::Debug for SchemaGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaGuard")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl SchemaGuard {
    /// The schema this guard owns.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.schema
    }

    pub(super) fn store(&self) -> Result<&PostgresStore, StoreError> {
        self.store
            .as_ref()
            .ok_or_else(|| StoreError::invalid_argument("the guard holds no store"))
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        // Close the store's pool first, so its idle sessions are gone before the drop.
        drop(self.store.take());
        self.dropper.queue(std::mem::take(&mut self.schema));
    }
}

/// The background dropper of one harness (and its clones and guards).
struct Dropper {
    url: String,
    worker: Mutex<Option<(mpsc::Sender<String>, JoinHandle<()>)>>,
}

impl std::fmt::Debug for Dropper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dropper").finish_non_exhaustive()
    }
}

impl Dropper {
    fn new(url: String) -> Self {
        Self {
            url,
            worker: Mutex::new(None),
        }
    }

    /// Queues a schema for dropping, starting the dropper thread on first use.
    fn queue(&self, schema: String) {
        let mut worker = self.worker.lock().unwrap_or_else(PoisonError::into_inner);
        let (sender, _) = worker.get_or_insert_with(|| {
            let (sender, receiver) = mpsc::channel();
            let url = self.url.clone();
            (
                sender,
                std::thread::spawn(move || drop_loop(&url, &receiver)),
            )
        });
        if let Err(mpsc::SendError(schema)) = sender.send(schema) {
            tracing::warn!(%schema, "the schema dropper is gone; schema left behind");
        }
    }
}

impl Drop for Dropper {
    fn drop(&mut self) {
        let worker = self
            .worker
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((sender, thread)) = worker {
            // Closing the channel lets the thread finish the queue and stop.
            drop(sender);
            let _ = thread.join();
        }
    }
}

/// Drops queued schemas, several per statement when they queue up, until the channel closes.
fn drop_loop(url: &str, receiver: &mpsc::Receiver<String>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        tracing::warn!("cannot start the schema dropper's runtime; test schemas left behind");
        return;
    };
    let mut conn: Option<PgConnection> = None;
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        batch.extend(receiver.try_iter().take(31));
        // SET LOCAL: the setting ends with this statement's implicit transaction, so nothing
        // is left on a server connection a transaction pooler hands to someone else.
        let sql = format!(
            "SET LOCAL lock_timeout = '10s'; DROP SCHEMA IF EXISTS {} CASCADE",
            batch.join(", ")
        );
        runtime.block_on(async {
            // One retry with a fresh connection: the kept one may have been closed meanwhile.
            for _ in 0..2 {
                let live = match conn.take() {
                    Some(live) => Some(live),
                    None => match crate::pooler::driver_options(url) {
                        Ok((options, _)) => PgConnection::connect_with(&options).await.ok(),
                        Err(_) => None,
                    },
                };
                let Some(mut live) = live else { continue };
                match sqlx::raw_sql(&sql).execute(&mut live).await {
                    Ok(_) => {
                        conn = Some(live);
                        return;
                    }
                    Err(error) => tracing::warn!(%error, "could not drop test schemas"),
                }
            }
        });
    }
    if let Some(live) = conn {
        let _ = runtime.block_on(live.close());
    }
}

#[async_trait]
impl Harness for PostgresHarness {
    type Guard = SchemaGuard;

    async fn open(&self) -> Result<(Arc<dyn Backend>, SchemaGuard), StoreError> {
        let (store, guard) = self.open_store().await?;
        Ok((Arc::new(store), guard))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: self.wakeups(),
            ops_registry: true,
        }
    }

    async fn raw_ops_snapshot(&self, guard: &SchemaGuard) -> Result<String, StoreError> {
        super::raw_ops_snapshot(guard.store()?).await
    }

    async fn reopen(&self, guard: &SchemaGuard) -> Result<Arc<dyn Backend>, StoreError> {
        let store = self
            .connect_to(guard.schema())
            .await
            .map_err(|e| self.explain(e))?;
        Ok(Arc::new(store))
    }

    async fn raw_snapshot(&self, guard: &SchemaGuard) -> Result<String, StoreError> {
        super::raw_snapshot(guard.store()?).await
    }

    async fn corrupt_run(&self, guard: &SchemaGuard, run_id: &RunId) -> Result<(), StoreError> {
        super::corrupt_run(guard.store()?, run_id).await
    }

    async fn corrupt_event(
        &self,
        guard: &SchemaGuard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        super::corrupt_event(guard.store()?, run_id, seq).await
    }

    async fn corrupt_graph(
        &self,
        guard: &SchemaGuard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        super::corrupt_graph(guard.store()?, owner, graph_ref).await
    }
}
