//! # docket-redis
//!
//! The Redis backend of Docket: [`RedisStore`] implements
//! [`docket_core::store::RunStore`], [`docket_core::store::GraphStore`] and the operation
//! registry [`docket_core::ops::OpsLifecycleRegistry`] with one Lua script per write operation
//! (`lua/*.lua`), so every transition, claim, registry write and retention pass is one atomic
//! server-side step.
//!
//! ```no_run
//! # async fn demo() -> Result<(), docket_redis::ConnectError> {
//! use docket_redis::{RedisConfig, RedisStore};
//! let store = RedisStore::connect(RedisConfig::new("redis://127.0.0.1:6379", "prod")).await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! [`RedisConfig::from_url`] reads the namespace and the timeouts from the URL instead
//! (`redis://127.0.0.1:6379/0?namespace=prod&connect_timeout_ms=3000`; see its table of
//! options); that is how the `docket` facade and CLI open `redis://` URLs. Connecting is
//! bounded by `connect_timeout_ms` (default 10 s) and every reply by `statement_timeout_ms`
//! (default 10 s), so a silent server is a retryable `Unavailable`, never a hang.
//!
//! ## Scripts
//!
//! Each script file starts with a header naming its `KEYS`, `ARGV` and replies, and is
//! prefixed with `lua/prelude.lua` when loaded. Rust runs every pure rule first (the shared
//! `docket_core::store::rules`: transition validation and event normalization, query and prune
//! policy validation, graph encoding, abandon policy); the script then checks what only the
//! stored data can tell, **all checks before the first write**, because Redis has no rollback:
//! a script that returns anything but `ok` has written nothing. Scripts run with `EVALSHA`;
//! `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`) reloads and re-sends them.
//! Claim tokens are UUID v4 minted in Rust and passed in `ARGV` (a script cannot make
//! randomness); every instant is the caller's `now` (never `TIME`), so one manual clock drives
//! every backend.
//!
//! ## Key layout
//!
//! All keys of namespace `<ns>` start with the hash tag `{docket:<ns>}:` (written `T` below),
//! so they share one cluster slot and any script may touch any of them. A free-form id is
//! either the last component of a key or percent-encoded (`%`, `:`, `{`, `}`); owners are
//! `_` (tenantless) or `t.<tenant>`.
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `T run:<run_id>` | hash | `doc` (canonical JSON), `owner` (`""` = tenantless), `graph_id`, `graph_hash`, `status`, `seq`, `event_seq`, `step`, `started_at`, `updated_at`, `finished_at`, `token`, `claimed_at`, `wake_at`, `attempts`, `abandons`, `poisoned_at`, `poison_reason`, `ckpt_type` (absent field = none) |
//! | `T events:<run_id>` | hash | `seq19` → canonical event JSON |
//! | `T eseq:<run_id>` | zset (lex) | retained `seq19` of the run |
//! | `T events_by_time` | zset | `run_id NUL seq19` scored by insertion time (event retention) |
//! | `T ready` | zset | unclaimed healthy running runs scored by `wake_at` |
//! | `T claims` | zset | claimed runs scored by `claimed_at` |
//! | `T poisoned` | set | poisoned run ids |
//! | `T terminal` | zset | terminal runs scored by `updated_at` (run retention) |
//! | `T runs`, `T runs_of:<owner>` | zset (lex) | `sortable(started_at):run_id`, all runs / one owner's |
//! | `T graph:<owner>:<graph_id>:<hash>` | hash | `bytes` (canonical document), `published_at`, `refs` (runs referencing it) |
//! | `T graph_versions:<owner>:<graph_id>` | zset (lex) | `sortable(published_at):hash` |
//! | `T graphs_by_time` | zset (lex) | `sortable(published_at) NUL owner NUL graph_id NUL hash`: every version, oldest first (graph retention) |
//! | `T ops:<session>` | hash | registry owner: `retired` (`1`), `seq` (last completion sequence minted) |
//! | `T ops:<session>:op:<op_id>` | hash | one operation: `kind`, `name`, `label`, `source`, `status`, `progress`, `outcome`, `seq`, `created_at`, `started_at`, `completed_at` (absent field = none) |
//! | `T ops:<session>:live` | zset (lex) | ids of the owner's live operations (admission count, termination order) |
//! | `T ops:<session>:done` | zset | ids of the owner's retained terminal operations scored by completion sequence (collection order, retention) |
//! | `T ops:<session>:names` | zset (lex) | `display_name NUL op_id` of every retained operation (listing order) |
//!
//! `seq19` is a seq zero-padded to 19 digits and `sortable(t)` a fixed-width rendering of a
//! timestamp whose byte order is time order, so the lexicographic sets (`zset (lex)`, all
//! scores 0) page exactly by `(time, id)` keyset cursors with no rounding. Scores of the other
//! sorted sets are microseconds since the epoch held in a double: exact while
//! `|t| < 2^53 µs`, i.e. until the year ~2255; beyond that, instants within one rounding step
//! compare as equal (ordering stays monotone). Stored hash fields always keep the exact
//! integer, and scripts compare seqs and tokens as strings, never as Lua numbers.
//!
//! Session and operation ids are hyphenated UUIDs and need no encoding; no run or graph key
//! starts with `ops:`, so the registry never collides with the runs. Each owner keeps at most
//! `ops_retention` (URL option, default 256) terminal records: the ending that goes past it
//! evicts the smallest completion sequences in the same script.
//!
//! Wake hints are published on the channel `docket:<ns>:wake` (channels are not keys) when a
//! commit, an initialization or a poison recovery records a wake that is already due; release
//! and abandon are silent, as in `docs/storage-contract.md`, “Wake hints”. A registry write
//! that ends an operation publishes on `docket:<ns>:ops` instead, so completion watches wake
//! without waking run workers.
//!
//! ## Durability and failover
//!
//! An acknowledged commit is as durable as the server's persistence makes it:
//!
//! * `appendonly yes` + `appendfsync always`: the AOF is fsynced before the reply, so an
//!   acknowledged commit survives a process crash and a power loss.
//! * `appendfsync everysec` (Redis's default when AOF is on): about one second of acknowledged
//!   commits can be lost on power loss or an OS crash (a process crash alone can lose the last
//!   write).
//! * `appendfsync no`: whatever the OS had not flushed (typically up to 30 s).
//! * AOF off: everything since the last RDB snapshot, or everything without snapshots.
//!
//! [`RedisStore::connect`] logs a `tracing` warning for every setting weaker than
//! `appendonly yes` + `appendfsync always`, and refuses a `maxmemory-policy` other than
//! `noeviction` (eviction would delete runs silently) with [`ConnectError::EvictionPolicy`];
//! where `CONFIG` is forbidden it warns and continues.
//!
//! The fence (`checkpoint_seq` + claim token) is linearizable on **a single primary only**.
//! Replication is asynchronous, so a failover can lose acknowledged writes: a lost commit makes
//! `checkpoint_seq` go backwards, and a lost claim re-validates the previous holder's token, so
//! a stale worker can commit again. Redis is "durable per `appendfsync`, not safe across
//! failover"; `min-replicas-to-write` narrows the window but does not close it.
//!
//! ## Costs
//!
//! A script blocks the server while it runs, so every script is bounded: `claim_due` reads at
//! most `limit` candidates per class and serves at most [`MAX_CLAIM_BATCH`] outcomes per call;
//! `prune` deletes at most `batch_size` items per category; commits touch one run. Run listings
//! are not scripts: they walk the scope's index newest first in batches of 256 members and
//! filter by graph and status in Rust, so a very selective filter over many runs costs several
//! round trips rather than one long script.
//!
//! ## Testing
//!
//! The `testing` feature adds `testing::RedisHarness` (the conformance harness: one namespace
//! per case, cleaned up by `SCAN` + `UNLINK`; an unreachable server fails the case with a
//! message naming `DOCKET_TEST_REDIS_URL`) and `RedisStore::with_fail_points`, a twin whose
//! write scripts stop at their write boundary, used to prove that no check writes.
//! [`RedisStore::purge_namespace`] deletes one namespace's keys (demos, set-ups); it never
//! touches other keys of the server.
//!
//! ## Errors
//!
//! No Redis type crosses the store traits. A refused connection and every reply proving that
//! nothing ran (`BUSY`, `LOADING`, `OOM`, `READONLY`, ...) are retryable
//! [`docket_core::store::StoreError::Unavailable`]; a reset, an I/O failure or a reply timeout
//! after a write script was sent is [`docket_core::store::StoreError::Ambiguous`] (resolve it
//! by re-reading the run); `WRONGTYPE` is `Corrupt`.

mod codec;
pub mod config;
mod error;
pub mod keys;
mod scripts;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod wakeups;

pub use config::{
    check_eviction_policy, check_namespace, persistence_warnings, ConnectError, RedisConfig,
    CLIENT_PARAMS, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_NAMESPACE, DEFAULT_STATEMENT_TIMEOUT_MS,
    NAMESPACE_PARAM, URL_OPTIONS,
};
pub use store::{RedisStore, MAX_CLAIM_BATCH};
