//! # docket-postgres
//!
//! The PostgreSQL backend of Docket, over sqlx: [`PostgresStore`] implements
//! [`docket_core::store::RunStore`] and [`docket_core::store::GraphStore`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), docket_core::store::StoreError> {
//! let store = docket_postgres::PostgresStore::connect_url(
//!     "postgres://postgres@127.0.0.1:5432/app?schema=docket",
//! )
//! .await?;
//! # let _ = store;
//! # Ok(())
//! # }
//! ```
//!
//! ## Layout
//!
//! Every table lives in one schema (default `docket`, any `^[a-z_][a-z0-9_]*$` name but
//! PostgreSQL's own `information_schema` and `pg_*`, and `public` only when allowed: see
//! [`check_schema_allowed`]), next to
//! our own migration bookkeeping table `docket_schema_migrations`, so an application's own
//! migrations (e.g. sqlx's `public._sqlx_migrations`) never clash with ours. Timestamps are
//! `bigint` microseconds since the Unix epoch (UTC), always from the caller's clock, so one
//! manual clock drives every backend in tests and no time zone or precision conversion can
//! change a stored instant. The run document is the JSON text of [`docket_core::model::Run`]
//! in a `bytea` column (not `jsonb`, which rejects `\u0000`); the columns the database filters
//! on repeat document fields and are checked against it on every read. The row invariants
//! (`docs/state-machines.md`, “Row invariants”) are `CHECK` constraints.
//!
//! ## Timeouts
//!
//! Establishing a connection is bounded by `connect_timeout_ms` (default 10 s; libpq's
//! `connect_timeout` in seconds is accepted too), and the sessions run with
//! `statement_timeout` (default 30 s, not sent in poll-only mode): a server that accepts and
//! never answers, or a statement stuck on a lock, is a retryable `Unavailable`, never a hang.
//! See [`parse_url`] for every URL option.
//!
//! ## Isolation
//!
//! Read Committed (PostgreSQL's default), with explicit fences: every write names the
//! conditions it depends on in its own `WHERE` (run id, scope, identity, `checkpoint_seq`,
//! claim token), and PostgreSQL re-checks them against the newest row version before it
//! writes. Two commits racing on one fence therefore yield one winner and one zero-row
//! result, never a lost update. Serializable isolation is neither needed nor relied upon (under
//! it, a concurrent update surfaces as a retryable `Unavailable` instead of `StaleCheckpoint`).
//! Claims lock their candidates `FOR UPDATE SKIP LOCKED`, so concurrent claimers get disjoint
//! batches; a claimer also skips a row a writer holds at that instant (a commit in flight), so
//! it may return fewer runs than are due — the next poll finds them (`docs/claim-order.md`).
//! Transitions compare the proposal with the stored columns (identity, status, seq, claim), never
//! with the decoded document: a commit whose fences match replaces a corrupt document, which reads
//! report as `Corrupt`.
//!
//! * `commit_claimed` is one statement: one round trip on success (after the connection has
//!   prepared it once), one more diagnostic read on a zero-row result — behind a transaction
//!   pooler too (see below).
//! * `claim_due`, `release_claim`, `refresh_claim`, `abandon_claim` and `initialize` are single
//!   statements; `claim_due` reads the partial indexes `runs_ready_index` and
//!   `runs_expired_index` in `(eligible_at, run_id)` order (byte order, like every backend),
//!   and [`PostgresStore::explain_claim`] / [`PostgresStore::explain_claim_generic`] show its
//!   plan; `commit_unclaimed`, `retry_poisoned_run` and `prune` are transactions that
//!   lock the run row first (`SELECT … FOR UPDATE`) or take the pruner's advisory lock.
//!
//! ## Durability
//!
//! A write is acknowledged after PostgreSQL commits it. With the defaults `fsync = on` and
//! `synchronous_commit = on`, an acknowledged commit survives a crash of the server or the
//! machine. `synchronous_commit = off` may lose the last acknowledged commits on a crash
//! (without corruption); with asynchronous replicas, a failover may lose them too — use
//! `synchronous_standby_names` with `synchronous_commit = on | remote_apply` when that
//! matters. If the connection is lost after a write was sent, the result is
//! [`docket_core::store::StoreError::Ambiguous`]: re-read to learn the outcome, never retry
//! blindly.
//!
//! ## Errors
//!
//! Connection loss before anything was sent, SQLSTATE `40001`, `40P01`, `55P03`, `57014`, and
//! server shutdown/overload map to `Unavailable { retryable: true }`; a connection lost after
//! a write was sent maps to `Ambiguous`; a pooler refusing the connection's configuration
//! (a startup parameter, an unknown database) is permanent. No sqlx type crosses the traits:
//! sources are [`DriverError`] values (SQLSTATE, constraint, message, and the fix when a pooler
//! caused the failure).
//!
//! ## Dependencies
//!
//! sqlx is the driver (async, pure Rust, pooled). `percent-encoding` decodes `listen_url=`, a
//! URL inside a URL; `sha2` and `hex` name the statements kept prepared behind a pooler — all
//! three were already in the dependency tree.
//!
//! ## Wakeups
//!
//! Writers `pg_notify('docket_wake', <schema>)` in the writing statement or transaction when
//! the wake they record is due; [`docket_core::store::RunStore::wakeups`] subscribes through
//! one dedicated LISTEN connection per store that reconnects by itself — to
//! [`PostgresOptions::listen_url`] when it is set, else to the store's URL — and none at all
//! with [`PostgresOptions::poll_only`], where workers rely on polling.
//!
//! ## Behind a transaction pooler
//!
//! A transaction pooler (PgBouncer `pool_mode = transaction`, and the transaction modes of
//! other poolers) gives a client a server connection for one transaction at a time, so
//! consecutive transactions of one client run on different server connections with other
//! clients' transactions in between. The default mode does not survive that: sqlx prepares
//! each statement once per connection (named statements, which the next transaction's server
//! connection does not have), and even an unnamed statement is two exchanges — Parse/Describe,
//! then Bind/Execute, each closed by its own Sync — between which the pooler may hand the
//! server connection to another client (`bind message supplies 3 parameters, but prepared
//! statement "" requires 27`). LISTEN does not work through such a pooler either.
//!
//! [`Pooler::Transaction`] (URL `pooler=transaction`, implied by `poll_only=true`) is the mode
//! for it. Every exchange is self-contained:
//!
//! * **One simple query per statement, parameters inline.** Each parameter is written as a
//!   typed literal — text in an escape string with `\` and `'` doubled, bytes as hex, numbers
//!   quoted, each cast to the type sqlx would declare when binding it — so the statement is
//!   typed as when prepared, and no value can change its meaning (a property test checks on the
//!   server that every literal equals the bound value). One round trip per statement, as a
//!   cached prepared statement costs on a direct connection: the claimed commit stays one round
//!   trip, and every store operation costs the round trips it costs directly (both counted by a
//!   proxy in `tests/round_trips.rs`).
//! * **Plans kept per server connection.** Re-planning every execution would cost (measured on
//!   a direct connection, interleaved with the prepared forms, medians of 1,400) +0.37 ms per
//!   fenced commit, +0.10 ms per run read and +0.52 ms per claim. So an autocommit statement
//!   is sent as `CALL <schema>.docket_prepare('docket_<hash>', 'PREPARE …', 256, false);
//!   EXECUTE docket_<hash>(literals…)` in the same one simple query: the procedure (schema
//!   version 2) prepares the statement on whichever server connection runs the exchange unless
//!   that connection already has it. The name is a hash of the statement's text and parameter
//!   types, so a statement of that name is the same statement whoever prepared it, and a reset
//!   server connection (`DISCARD ALL`) only costs the next exchange a `PREPARE`; at most 256
//!   are kept per server connection. What remains is +0.13 ms per commit, +0.07 ms per read
//!   and +0.08 ms per claim (the procedure call, the literals, text results). Inside an
//!   explicit transaction (`commit_unclaimed`, `retry_poisoned_run`, `prune`: never the hot
//!   path) statements carry their literals in their text and are planned each time.
//! * **No session state that changes behaviour.** Nothing is sent at startup beyond what
//!   poolers track (no `extra_float_digits`, no `options`): session settings —
//!   [`PostgresOptions`]' timeouts and the URL's `options[name]=value` — become `SET LOCAL`
//!   statements in front of every statement (the same simple query, so the same implicit
//!   transaction; no extra round trip) and after every `BEGIN`. Advisory locks are
//!   transaction-scoped (`pg_advisory_xact_lock` in migrations and the pruner). No temporary
//!   tables.
//! * **Wakeups through a direct route.** LISTEN needs a session of its own: give
//!   [`PostgresOptions::listen_url`] (a URL that reaches the server without the transaction
//!   pooler), or `poll_only=true` to do without. `pooler=transaction` with neither is refused at
//!   start-up, and a `listen_url` that does not answer fails at connect.
//!
//! The cost of the mode, end to end: with `cargo xtask bench --backend
//! postgres,postgres-pgbouncer` (BENCHMARKS.md) the end-to-end runs/s through PgBouncer
//! measured 0.86× and 1.17× the direct figure in two runs on a busy 2-core machine; a loop of
//! nothing but fenced commits runs at about half the direct rate, which is the per-statement
//! work above (and the pooler's own hop) with nothing else to hide it.
//!
//! Server logs: behind a pooler a failing statement's text carries its values, so with the
//! default `log_min_error_statement = error` the server log shows the values of statements
//! that fail (a conflicting start, a refused event); on a direct connection it shows `$n`.
//!
//! Failures a pooler causes name their fix ([`DriverError::hint`]): a refused startup
//! parameter (`unsupported startup parameter: extra_float_digits`) names `pooler=transaction`
//! and `ignore_startup_parameters = extra_float_digits`; `options` (session settings) names
//! `pooler=transaction` and `ALTER ROLE … SET`; a prepared statement that a statement's two
//! exchanges did not find on one server connection (SQLSTATE `08P01`, `26000`, `42P05`,
//! `34000`) names `pool_mode = transaction` and `pooler=transaction`; a database the pooler
//! does not list names its `[databases]` section.
//!
//! ## Testing
//!
//! The `testing` feature adds the `testing` module: the conformance-suite harness (one schema
//! per case, dropped in the background; the server is `DOCKET_TEST_POSTGRES_URL`, and a missing
//! server fails the tests), SQL helpers for tests, bulk fills included, and a private PgBouncer
//! for tests of the pooler mode (`tests/pooler.rs`; a missing `pgbouncer` binary fails them).
//! The whole suite runs with `cargo test -p docket-postgres --test conformance`; with
//! `DOCKET_TEST_POSTGRES_URL` set to a pooler URL with `pooler=transaction&listen_url=…` it runs
//! through the pooler (`cargo xtask ci` does, through its own PgBouncer).

mod claims;
mod codec;
mod error;
mod graphs;
mod migrations;
mod options;
mod pooler;
mod prune;
mod reads;
mod sql;
mod statement;
mod store;
mod traits;
mod transitions;
mod wakeups;

#[cfg(feature = "testing")]
pub mod testing;

pub use error::DriverError;
pub use migrations::LATEST_VERSION;
pub use options::{
    check_schema_allowed, parse_url, validate_schema_name, Pooler, PostgresOptions,
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA, DEFAULT_STATEMENT_TIMEOUT_MS,
    DRIVER_PARAMS, MAX_POOL_SIZE, URL_OPTIONS,
};
pub use pooler::driver_options;
pub use store::PostgresStore;
pub use wakeups::{listener_application_name, WAKE_CHANNEL};
