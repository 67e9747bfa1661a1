//! The Lua scripts (one per operation, `lua/*.lua`) and the plumbing to run them.
//!
//! Each script is the shared `lua/prelude.lua` followed by the operation's file, compiled into
//! the binary with `include_str!` and run with `EVALSHA`. [`ScriptRunner::run`] loads a script
//! the server does not know (`NOSCRIPT`: after a restart, a failover or `SCRIPT FLUSH`) and
//! re-sends it, which is safe because a `NOSCRIPT` reply means nothing ran. A flush racing
//! that reload can surface `NOSCRIPT` once more, so the runner retries a bounded number of
//! times.

use docket_core::store::{Message, StoreError};
use redis::aio::ConnectionManager;
use redis::{ErrorKind, Script, ServerErrorKind, Value};

use crate::error::{map_redis_error, Access};

/// The helpers prepended to every script.
const PRELUDE: &str = include_str!("../lua/prelude.lua");

/// The line of every write script below which the writes start (nothing above it writes).
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
const WRITE_BOUNDARY: &str = "-- ===== writes: every check is above this line =====";

/// Operation bodies (each prefixed with [`PRELUDE`] when loaded).
const INITIALIZE: &str = include_str!("../lua/initialize.lua");
const COMMIT_CLAIMED: &str = include_str!("../lua/commit_claimed.lua");
const COMMIT_UNCLAIMED: &str = include_str!("../lua/commit_unclaimed.lua");
// The two claim scripts share their second half (checks and writes), `claim_apply.lua`.
const CLAIM_DUE: &str = concat!(
    include_str!("../lua/claim_due.lua"),
    include_str!("../lua/claim_apply.lua")
);
const CLAIM_FAIR: &str = concat!(
    include_str!("../lua/claim_fair.lua"),
    include_str!("../lua/claim_apply.lua")
);
const MIGRATE: &str = include_str!("../lua/migrate.lua");
const SET_SHARE: &str = include_str!("../lua/set_share.lua");
const RELEASE_CLAIM: &str = include_str!("../lua/release_claim.lua");
const ABANDON_CLAIM: &str = include_str!("../lua/abandon_claim.lua");
const RETRY_POISONED: &str = include_str!("../lua/retry_poisoned.lua");
const SAVE_GRAPH: &str = include_str!("../lua/save_graph.lua");
const PRUNE: &str = include_str!("../lua/prune.lua");
const READ_EVENT: &str = include_str!("../lua/read_event.lua");
const LIST_EVENTS: &str = include_str!("../lua/list_events.lua");
const OPS_REGISTER: &str = include_str!("../lua/ops_register.lua");
const OPS_TRANSITION: &str = include_str!("../lua/ops_transition.lua");
const OPS_TERMINATE: &str = include_str!("../lua/ops_terminate.lua");
const OPS_COLLECT: &str = include_str!("../lua/ops_collect.lua");
const OPS_LIST: &str = include_str!("../lua/ops_list.lua");

/// Every script, loaded once per store.
pub(crate) struct Scripts {
    pub initialize: Script,
    pub commit_claimed: Script,
    pub commit_unclaimed: Script,
    pub claim_due: Script,
    pub claim_fair: Script,
    pub migrate: Script,
    pub set_share: Script,
    pub release_claim: Script,
    pub abandon_claim: Script,
    pub retry_poisoned: Script,
    pub save_graph: Script,
    pub prune: Script,
    pub read_event: Script,
    pub list_events: Script,
    pub ops_register: Script,
    pub ops_transition: Script,
    pub ops_terminate: Script,
    pub ops_collect: Script,
    pub ops_list: Script,
}

impl Scripts {
    /// The production scripts.
    pub(crate) fn new() -> Self {
        Self::build(|body| body.to_owned())
    }

    /// Test variants whose write boundary raises an error: the script stops after all its
    /// checks passed and before its first write.
    #[cfg(feature = "testing")]
    pub(crate) fn with_fail_points() -> Self {
        Self::build(|body| body.replace(WRITE_BOUNDARY, "error('docket fail point')"))
    }

    fn build(write_variant: impl Fn(&str) -> String) -> Self {
        let write = |body: &str| Script::new(&format!("{PRELUDE}{}", write_variant(body)));
        let read = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Scripts {
            initialize: write(INITIALIZE),
            commit_claimed: write(COMMIT_CLAIMED),
            commit_unclaimed: write(COMMIT_UNCLAIMED),
            claim_due: write(CLAIM_DUE),
            claim_fair: write(CLAIM_FAIR),
            migrate: write(MIGRATE),
            set_share: write(SET_SHARE),
            release_claim: write(RELEASE_CLAIM),
            abandon_claim: write(ABANDON_CLAIM),
            retry_poisoned: write(RETRY_POISONED),
            save_graph: write(SAVE_GRAPH),
            prune: write(PRUNE),
            read_event: read(READ_EVENT),
            list_events: read(LIST_EVENTS),
            ops_register: write(OPS_REGISTER),
            ops_transition: write(OPS_TRANSITION),
            ops_terminate: write(OPS_TERMINATE),
            ops_collect: write(OPS_COLLECT),
            ops_list: read(OPS_LIST),
        }
    }
}

/// How many times a script is sent in all when the server answers `NOSCRIPT` (each retry
/// loads it first). A `SCRIPT FLUSH` or a restart racing the reload is the only way to use
/// more than two.
const NOSCRIPT_ATTEMPTS: usize = 4;

/// Runs scripts over the shared connection manager.
pub(crate) struct ScriptRunner<'a> {
    pub conn: &'a ConnectionManager,
}

impl ScriptRunner<'_> {
    /// Runs `script` with `keys` and `args` and returns its reply array.
    ///
    /// The script is sent with `EVALSHA`. A `NOSCRIPT` reply proves that nothing ran (the
    /// server lost its script cache: a restart, a failover or `SCRIPT FLUSH`), so the runner
    /// loads the script and sends it again. The load is a read as far as error mapping goes: a
    /// connection lost while loading is a retryable `Unavailable`, never `Ambiguous`, because
    /// the operation itself has not run yet.
    pub(crate) async fn run(
        &self,
        script: &Script,
        keys: &[String],
        args: &[Vec<u8>],
        access: Access,
    ) -> Result<Reply, StoreError> {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(script.get_hash()).arg(keys.len()).arg(keys);
        for arg in args {
            evalsha.arg(arg.as_slice());
        }
        let mut conn = self.conn.clone();
        let mut attempt = 1;
        loop {
            match evalsha.query_async::<Value>(&mut conn).await {
                Ok(value) => return Reply::from_value(value),
                Err(err) if is_noscript(&err) && attempt < NOSCRIPT_ATTEMPTS => {
                    attempt += 1;
                    tracing::debug!(
                        sha = script.get_hash(),
                        "script unknown to the server (NOSCRIPT): loading it"
                    );
                    script
                        .load_async(&mut conn)
                        .await
                        .map_err(|e| map_redis_error(&e, Access::Read))?;
                }
                Err(err) => return Err(map_redis_error(&err, access)),
            }
        }
    }
}

impl ScriptRunner<'_> {
    /// Runs `script` once per `(keys, args)` call, all in one pipeline (one round trip), and
    /// answers one reply per call, in order. Each call is an `EVALSHA` of its own: it runs
    /// atomically, and a failing call never stops the others.
    ///
    /// A connection lost before the replies arrive fails every call with the mapping of
    /// `access` (`Ambiguous` for writes). A call answered `NOSCRIPT` did not run (the server
    /// lost its script cache); such calls are sent again one by one, in order, through
    /// [`ScriptRunner::run`], which loads the script first.
    pub(crate) async fn run_pipelined(
        &self,
        script: &Script,
        calls: &[(&[String], &[Vec<u8>])],
        access: Access,
    ) -> Vec<Result<Reply, StoreError>> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for (keys, args) in calls {
            let evalsha = pipe
                .cmd("EVALSHA")
                .arg(script.get_hash())
                .arg(keys.len())
                .arg(*keys);
            for arg in *args {
                evalsha.arg(arg.as_slice());
            }
        }
        let mut conn = self.conn.clone();
        let replies = match pipe
            .query_async::<Vec<redis::RedisResult<Value>>>(&mut conn)
            .await
        {
            Ok(replies) if replies.len() == calls.len() => replies,
            Ok(replies) => {
                let error = protocol(format!(
                    "{} pipeline replies for {} script calls",
                    replies.len(),
                    calls.len()
                ));
                // Each call may or may not have run.
                let error = match access {
                    Access::Write => StoreError::ambiguous(Message(error.to_string())),
                    Access::Read => error,
                };
                return calls.iter().map(|_| Err(error.clone())).collect();
            }
            Err(err) => {
                let error = map_redis_error(&err, access);
                return calls.iter().map(|_| Err(error.clone())).collect();
            }
        };
        let mut out = Vec::with_capacity(calls.len());
        for ((keys, args), reply) in calls.iter().zip(replies) {
            out.push(match reply {
                Ok(value) => Reply::from_value(value),
                Err(err) if is_noscript(&err) => self.run(script, keys, args, access).await,
                Err(err) => Err(map_redis_error(&err, access)),
            });
        }
        out
    }
}

fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) || err.code() == Some("NOSCRIPT")
}

fn protocol(detail: impl Into<String>) -> StoreError {
    crate::options::unavailable(format!("unexpected script reply: {}", detail.into()))
}

/// A script reply: an array whose first element is a status word.
#[derive(Debug)]
pub(crate) struct Reply {
    items: Vec<Value>,
}

impl Reply {
    fn from_value(value: Value) -> Result<Self, StoreError> {
        match value {
            Value::Array(items) if !items.is_empty() => Ok(Reply { items }),
            other => Err(protocol(format!("{other:?}"))),
        }
    }

    /// The status word.
    pub(crate) fn status(&self) -> Result<String, StoreError> {
        self.string(0)
    }

    /// Number of elements (status included).
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Element `i` as bytes (`None` for a Lua `false`/nil).
    pub(crate) fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>, StoreError> {
        match self.items.get(i) {
            Some(Value::BulkString(b)) => Ok(Some(b.clone())),
            Some(Value::SimpleString(s)) => Ok(Some(s.clone().into_bytes())),
            Some(Value::Nil) => Ok(None),
            other => Err(protocol(format!("element {i}: {other:?}"))),
        }
    }

    /// Element `i` as bytes.
    pub(crate) fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        self.opt_bytes(i)?
            .ok_or_else(|| protocol(format!("element {i} is nil")))
    }

    /// Element `i` as a UTF-8 string.
    pub(crate) fn string(&self, i: usize) -> Result<String, StoreError> {
        String::from_utf8(self.bytes(i)?).map_err(|e| protocol(format!("element {i}: {e}")))
    }

    /// Element `i` parsed as a number.
    pub(crate) fn number<T: std::str::FromStr>(&self, i: usize) -> Result<T, StoreError> {
        let s = self.string(i)?;
        s.parse::<T>()
            .map_err(|_| protocol(format!("element {i} is not a number: {s:?}")))
    }

    /// Element `i` as an array of byte strings (possibly empty, unlike [`Reply::nested`]).
    pub(crate) fn byte_strings(&self, i: usize) -> Result<Vec<Vec<u8>>, StoreError> {
        match self.items.get(i) {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(j, item)| match item {
                    Value::BulkString(b) => Ok(b.clone()),
                    Value::SimpleString(s) => Ok(s.clone().into_bytes()),
                    other => Err(protocol(format!("element {i}.{j}: {other:?}"))),
                })
                .collect(),
            other => Err(protocol(format!("element {i}: {other:?}"))),
        }
    }

    /// Element `i` as a nested reply.
    pub(crate) fn nested(&self, i: usize) -> Result<Reply, StoreError> {
        match self.items.get(i) {
            Some(value) => Reply::from_value(value.clone()),
            None => Err(protocol(format!("element {i} is missing"))),
        }
    }
}

/// Maps the failure statuses every script may return; `Ok(())` for `"ok"`.
pub(crate) fn expect_ok(reply: &Reply) -> Result<(), StoreError> {
    match reply.status()?.as_str() {
        "ok" => Ok(()),
        other => Err(failure(reply, other)),
    }
}

/// The error for a non-`ok` status.
pub(crate) fn failure(reply: &Reply, status: &str) -> StoreError {
    match status {
        "not_found" => StoreError::NotFound,
        "conflict" => StoreError::Conflict,
        "stale" => StoreError::StaleCheckpoint,
        "inactive_run" => StoreError::InactiveRun,
        "graph_content_conflict" => StoreError::GraphContentConflict,
        "invalid_transition" => StoreError::invalid_transition(reply.string(1).unwrap_or_default()),
        "event_conflict" => match reply.number::<u64>(1) {
            Ok(seq) => StoreError::EventConflict { seq },
            Err(e) => e,
        },
        "corrupt" => StoreError::corrupt(
            "run row",
            reply.string(1).unwrap_or_else(|_| "unknown".to_owned()),
        ),
        other => protocol(format!("unknown status {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(name, body)` of every write script.
    const WRITE_SCRIPTS: [(&str, &str); 16] = [
        ("initialize", INITIALIZE),
        ("commit_claimed", COMMIT_CLAIMED),
        ("commit_unclaimed", COMMIT_UNCLAIMED),
        ("claim_due", CLAIM_DUE),
        ("claim_fair", CLAIM_FAIR),
        ("migrate", MIGRATE),
        ("set_share", SET_SHARE),
        ("release_claim", RELEASE_CLAIM),
        ("abandon_claim", ABANDON_CLAIM),
        ("retry_poisoned", RETRY_POISONED),
        ("save_graph", SAVE_GRAPH),
        ("prune", PRUNE),
        ("ops_register", OPS_REGISTER),
        ("ops_transition", OPS_TRANSITION),
        ("ops_terminate", OPS_TERMINATE),
        ("ops_collect", OPS_COLLECT),
    ];

    /// `(name, body)` of the read-only scripts.
    const READ_SCRIPTS: [(&str, &str); 3] = [
        ("read_event", READ_EVENT),
        ("list_events", LIST_EVENTS),
        ("ops_list", OPS_LIST),
    ];

    /// Commands that change data, as the scripts spell them, plus the prelude helpers that
    /// append events and evict operation records.
    const WRITES: [&str; 19] = [
        "'HSET'",
        "'HDEL'",
        "'HINCRBY'",
        "'ZADD'",
        "'ZREM'",
        "'SADD'",
        "'SREM'",
        "'DEL'",
        "'UNLINK'",
        "'PUBLISH'",
        "append_events(",
        "ops_evict(",
        "'INCR'",
        "'ZREMRANGEBYRANK'",
        "'HSETNX'",
        "ready_add(",
        "ready_remove(",
        "claim_add(",
        "claim_remove(",
    ];

    #[test]
    fn nothing_above_the_write_boundary_of_a_write_script_writes() {
        for (name, body) in WRITE_SCRIPTS {
            assert_eq!(
                body.matches(WRITE_BOUNDARY).count(),
                1,
                "{name}: one boundary"
            );
            let (checks, writes) = body.split_once(WRITE_BOUNDARY).unwrap_or_default();
            for write in WRITES {
                assert!(
                    !checks.contains(write),
                    "{name} writes {write} before its boundary"
                );
            }
            assert!(
                WRITES.iter().any(|w| writes.contains(w)),
                "{name}: the boundary precedes the writes"
            );
        }
    }

    #[test]
    fn read_scripts_never_write() {
        for (name, body) in READ_SCRIPTS {
            for write in WRITES {
                assert!(!body.contains(write), "{name} contains {write}");
            }
        }
    }

    #[test]
    fn every_script_documents_keys_argv_and_returns() {
        for (name, body) in WRITE_SCRIPTS.iter().chain(READ_SCRIPTS.iter()) {
            let header: String = body
                .lines()
                .take_while(|l| l.starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n");
            for part in ["KEYS[1]", "ARGV[1]", "Returns"] {
                assert!(header.contains(part), "{name}: header lacks {part}");
            }
        }
    }
}
