//! The store value: pool, rendered statements, options, wakeup hub.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use docket_core::model::Scope;
use docket_core::store::{Message, StoreError};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, Postgres, Transaction};

use crate::error;
use crate::migrations;
use crate::ops::sql::OpsSql;
use crate::options::PostgresOptions;
use crate::pooler::{self, Protocol, Route};
use crate::sql::Sql;
use crate::statement::Statement;
use crate::wakeups::WakeHub;
use crate::warm_pool::{WarmConnection, WarmPool};

/// The PostgreSQL implementation of Docket's `RunStore` and `GraphStore`.
///
/// Cheap to clone (all clones share one pool). See the crate docs for durability, isolation
/// and pooler mode.
#[derive(Clone)]
pub struct PostgresStore {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The connections: sqlx's pool behind a warm list ([`crate::warm_pool`]).
    pub pool: WarmPool,
    pub schema: String,
    pub sql: Sql,
    pub poll_only: bool,
    pub protocol: Protocol,
    /// The statement that opens a transaction (`None`: sqlx's plain `BEGIN`).
    pub begin: Option<String>,
    pub wake: WakeHub,
    /// The operation registry's statements.
    pub ops_sql: OpsSql,
    /// Terminal operation records kept per owner.
    pub ops_retention: docket_core::ops::rules::Retention,
    /// The payload of the registry's wake hints ([`crate::wakeups::ops_wake_payload`]).
    pub ops_wake: String,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.inner.schema)
            .field("poll_only", &self.inner.poll_only)
            .field("protocol", &self.inner.protocol)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to `options.url` and, unless `options.migrate` is false, brings the schema up
    /// to date (idempotent). The pool connects lazily; the migration is the first use.
    ///
    /// # Errors
    /// `InvalidArgument` (bad URL or options), `Unavailable` (server unreachable, schema
    /// newer than this build, schema missing when `migrate` is false).
    pub async fn open(options: PostgresOptions) -> Result<Self, StoreError> {
        let Route {
            connect,
            protocol,
            listen,
        } = pooler::route(&options)?;
        let pool = PgPoolOptions::new()
            .max_connections(options.pool_size)
            // A liveness ping per acquire would double the round trips of every call; broken
            // connections surface as errors (retryable, or ambiguous after a write) and are
            // discarded by the pool's on-release check.
            .test_before_acquire(false)
            // Bounds opening a connection and waiting for a free one alike, so no call waits
            // forever on a server that accepts and never answers.
            .acquire_timeout(Duration::from_millis(options.connect_timeout_ms))
            .connect_lazy_with(connect.clone());
        let pool = WarmPool::new(pool, options.pool_size);
        let schema = options.schema.clone();
        {
            // A direct connection, not the pool: the pool retries a refused connection until
            // its acquire timeout (a server restarting), but a wrong address at start-up
            // should fail at once.
            let mut conn = connect_within(&connect, options.connect_timeout_ms).await?;
            let prepared = if options.migrate {
                migrations::migrate(&mut conn, &schema).await
            } else {
                migrations::check_version(&mut conn, &schema).await
            };
            let _ = conn.close().await;
            prepared?;
        }
        if let (Some(listen), Some(_)) = (&listen, &options.listen_url) {
            // A separate route for LISTEN is checked now, not at the first subscription, so
            // a wrong listen_url fails at start-up instead of silently costing every hint.
            let conn = PgConnection::connect_with(listen).await.map_err(|e| {
                StoreError::invalid_argument(format!(
                    "listen_url: cannot connect ({})",
                    error::DriverError::from_sqlx(&e)
                ))
            })?;
            let _ = conn.close().await;
        }
        let wake = WakeHub::new(listen, schema.clone());
        let begin = protocol.begin_statement();
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                pool,
                sql: Sql::render(&schema),
                poll_only: options.poll_only,
                protocol,
                begin,
                wake,
                ops_sql: OpsSql::render(&schema),
                ops_retention: options.ops_retention,
                ops_wake: crate::wakeups::ops_wake_payload(&schema),
                schema,
            }),
        })
    }

    /// Opens the store named by a URL that may carry Docket's options as query parameters
    /// (see [`crate::parse_url`]):
    /// `postgres://…?schema=name&pool_size=N&pooler=transaction&listen_url=…` (or `poll_only=true`).
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL, then as [`PostgresStore::open`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::open(crate::options::parse_url(url)?).await
    }

    /// Drops the schema named by `url` (`?schema=`, default [`crate::DEFAULT_SCHEMA`]) with
    /// everything in it — every run, event and graph version Docket stored there — and
    /// returns its name. Irreversible: meant for demos and tests that need an empty store.
    /// A missing schema is not an error.
    ///
    /// # Errors
    /// `InvalidArgument` (bad URL or options), `Unavailable` (server unreachable, or the
    /// schema is locked by live sessions past the server's lock timeout).
    pub async fn drop_schema(url: &str) -> Result<String, StoreError> {
        let (connect, options) = pooler::driver_options(url)?;
        let mut conn = connect_within(&connect, options.connect_timeout_ms).await?;
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", options.schema);
        let dropped = (&mut conn).execute(sql.as_str()).await;
        let _ = conn.close().await;
        dropped.map_err(error::sent)?;
        Ok(options.schema)
    }

    /// The schema holding this store's tables.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// Whether the store runs in poll-only (transaction pooler) mode.
    #[must_use]
    pub fn is_poll_only(&self) -> bool {
        self.inner.poll_only
    }

    /// Whether the store sends its statements in a transaction pooler's terms (see
    /// [`crate::Pooler::Transaction`]).
    #[must_use]
    pub fn is_transaction_pooled(&self) -> bool {
        matches!(self.inner.protocol, Protocol::Inline { .. })
    }

    /// A statement sent the way this store's connections need (prepared, or inline behind a
    /// transaction pooler).
    pub(crate) fn q<'q>(&'q self, sql: &'q str) -> Statement<'q> {
        match &self.inner.protocol {
            Protocol::Prepared => Statement::prepared(sql),
            Protocol::Inline { prefix, procedure } => {
                Statement::inline(sql, prefix, Some(procedure))
            }
        }
    }

    /// Opens a transaction on `conn`, with the session settings behind a transaction pooler.
    pub(crate) async fn begin<'c>(
        &self,
        conn: &'c mut PgConnection,
    ) -> Result<Transaction<'c, Postgres>, StoreError> {
        match &self.inner.begin {
            None => conn.begin().await,
            Some(statement) => conn.begin_with(statement.clone()).await,
        }
        .map_err(error::safe)
    }

    /// A pooled connection; failing to get one never wrote anything. Hand it back with
    /// [`WarmConnection::reuse`] once its last answer is read, so the next call gets it
    /// without sqlx's on-release round trip; merely dropped, it goes back through sqlx's pool.
    pub(crate) async fn conn(&self) -> Result<WarmConnection, StoreError> {
        self.inner.pool.acquire().await.map_err(error::safe)
    }

    /// The SQL statements.
    pub(crate) fn sql(&self) -> &Sql {
        &self.inner.sql
    }
}

/// Hands `conn` back warm once a call is over, when every one of its `outcomes` came from a
/// server that answered: anything but a failed connection or a timeout (`Unavailable`,
/// `Ambiguous`), after which it goes back through sqlx's pool, whose test closes a broken
/// connection instead of giving it to the next call.
pub(crate) fn hand_back<'a, T: 'a>(
    conn: WarmConnection,
    outcomes: impl IntoIterator<Item = &'a Result<T, StoreError>>,
) {
    let answered = outcomes.into_iter().all(|outcome| {
        !matches!(
            outcome,
            Err(StoreError::Unavailable { .. } | StoreError::Ambiguous { .. })
        )
    });
    if answered {
        conn.reuse();
    }
}

/// One direct connection, given up after `timeout_ms`: sqlx's own connect has no deadline, so
/// a server that accepts the TCP connection and never answers would hang the caller forever.
async fn connect_within(
    connect: &PgConnectOptions,
    timeout_ms: u64,
) -> Result<PgConnection, StoreError> {
    match tokio::time::timeout(
        Duration::from_millis(timeout_ms),
        PgConnection::connect_with(connect),
    )
    .await
    {
        Ok(connected) => connected.map_err(error::safe),
        Err(_) => Err(StoreError::retryable(Message(format!(
            "PostgreSQL did not complete the connection within {timeout_ms} ms \
             (connect_timeout_ms)"
        )))),
    }
}

/// How a transaction body wants its transaction to end.
pub(crate) enum Finish<T> {
    /// Commit, then return the value.
    Commit(T),
    /// Nothing to write: roll back, then return the value.
    Rollback(T),
}

/// Ends `tx` as `outcome` says, explicitly and before returning: a dropped transaction's
/// ROLLBACK is only sent when the pool recycles its connection, and until then the rows it
/// locked stay locked (a concurrent claim would skip them). A failed rollback is ignored:
/// nothing was written, and the server releases the locks when the session ends.
pub(crate) async fn finish<T>(
    tx: Transaction<'_, Postgres>,
    outcome: Result<Finish<T>, StoreError>,
) -> Result<T, StoreError> {
    match outcome {
        Ok(Finish::Commit(value)) => {
            tx.commit().await.map_err(error::sent)?;
            Ok(value)
        }
        Ok(Finish::Rollback(value)) => {
            let _ = tx.rollback().await;
            Ok(value)
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// The scope filter binds `($system, $scope_key)` of `($1 OR scope_key = $2)`.
pub(crate) fn scope_binds(scope: &Scope) -> (bool, String) {
    match scope {
        Scope::System => (true, String::new()),
        Scope::Tenantless => (false, String::new()),
        Scope::Tenant(id) => (false, id.as_str().to_owned()),
    }
}
