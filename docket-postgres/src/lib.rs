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
//! Every table lives in one schema (default `docket`, any `^[a-z_][a-z0-9_]*$` name), next to
//! our own migration bookkeeping table `docket_schema_migrations`, so an application's own
//! migrations (e.g. sqlx's `public._sqlx_migrations`) never clash with ours. Timestamps are
//! `bigint` microseconds since the Unix epoch (UTC), always from the caller's clock, so one
//! manual clock drives every backend in tests and no time zone or precision conversion can
//! change a stored instant. The run document is the JSON text of [`docket_core::model::Run`]
//! in a `bytea` column (not `jsonb`, which rejects `\u0000`); the columns the database filters
//! on repeat document fields and are checked against it on every read. The row invariants of
//! spec §3.2 are `CHECK` constraints.
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
//! it may return fewer runs than are due — the next poll finds them (spec §4.2). Transitions
//! compare the proposal with the stored columns (identity, status, seq, claim), never with the
//! decoded document: a commit whose fences match replaces a corrupt document, which reads
//! report as `Corrupt`.
//!
//! * `commit_claimed` is one statement: one round trip on success (after the connection has
//!   prepared it once), one more diagnostic read on a zero-row result.
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
//! a write was sent maps to `Ambiguous`. No sqlx type crosses the traits: sources are
//! [`DriverError`] values (SQLSTATE, constraint, message).
//!
//! ## Wakeups and transaction poolers
//!
//! Writers `pg_notify('docket_wake', <schema>)` in the writing statement or transaction when
//! the wake they record is due; [`docket_core::store::RunStore::wakeups`] subscribes through
//! one dedicated LISTEN connection per store that reconnects by itself. Behind a transaction
//! pooler (PgBouncer `pool_mode = transaction`), set [`PostgresOptions::poll_only`]: no
//! LISTEN, no named prepared statements (every statement is sent unnamed), no session settings
//! and no session advisory locks; workers then rely on polling. Statements still cost one
//! extra round trip each in that mode, because an unnamed statement is parsed per call.
//!
//! ## Testing
//!
//! The `testing` feature adds the `testing` module: the conformance-suite harness (one schema
//! per case, dropped in the background; the server is `DOCKET_TEST_POSTGRES_URL`, and a missing
//! server fails the tests) and SQL helpers for tests, bulk fills included. The whole suite
//! runs with `cargo test -p docket-postgres --test conformance`.

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
mod trait_impls;
mod transitions;
mod wakeups;

#[cfg(feature = "testing")]
pub mod testing;

pub use error::DriverError;
pub use migrations::LATEST_VERSION;
pub use options::{
    parse_url, validate_schema_name, Pooler, PostgresOptions, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA,
};
pub use pooler::driver_options;
pub use store::PostgresStore;
pub use wakeups::{listener_application_name, WAKE_CHANNEL};
