//! The conformance harness for Redis (feature `testing`): one namespace per case.
//!
//! Each [`RedisHarness::open`] connects a [`RedisStore`] under a fresh namespace
//! `docket-test-<uuid>`; the returned [`RedisGuard`] deletes that namespace's keys when dropped
//! (`SCAN MATCH` + `UNLINK`, never `FLUSHDB`), so cases run in parallel against one server.
//! The server is found through `DOCKET_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`); an
//! unreachable server fails the case, it is never skipped.

use std::sync::Arc;

use async_trait::async_trait;
use docket_conformance::{Capabilities, Harness};
use docket_core::model::{GraphRef, OwnerScope, RunId};
use docket_core::store::{Backend, Message, StoreError};

use crate::error::Access;
use crate::keys::{seq_member, Keys};
use crate::{RedisOptions, RedisStore};

/// Environment variable naming the test server.
pub const URL_VAR: &str = "DOCKET_TEST_REDIS_URL";
/// The test server when [`URL_VAR`] is unset.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";
/// Bytes that no decoder accepts (invalid UTF-8, then a truncated JSON object).
pub const UNDECODABLE: &[u8] = b"\xff\xfe{\"truncated";

/// The test server URL from the environment.
#[must_use]
pub fn test_url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A fresh namespace name for one case.
#[must_use]
pub fn fresh_namespace() -> String {
    format!("docket-test-{}", uuid::Uuid::new_v4().simple())
}

/// Hands each case a fresh namespace on one server.
#[derive(Clone, Debug)]
pub struct RedisHarness {
    url: String,
}

impl RedisHarness {
    /// A harness for the server at `url`.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        RedisHarness { url: url.into() }
    }

    /// A harness for [`test_url`].
    #[must_use]
    pub fn from_env() -> Self {
        Self::new(test_url())
    }

    /// Connects a store under a fresh namespace, returning it with its guard.
    ///
    /// # Errors
    /// Any failure to connect (the server is unreachable, or evicts keys); the message names
    /// the server and [`URL_VAR`].
    pub async fn open_store(&self) -> Result<(RedisStore, RedisGuard), StoreError> {
        self.probe().await?;
        let namespace = fresh_namespace();
        let store = RedisStore::open(RedisOptions::new(&self.url, &namespace))
            .await
            .map_err(|e| self.unreachable(e))?;
        let guard = RedisGuard {
            url: self.url.clone(),
            keys: store.keys().clone(),
            store: store.clone(),
        };
        Ok((store, guard))
    }

    /// One connection attempt, so a missing server fails a case at once rather than after
    /// the store's reconnection back-off.
    async fn probe(&self) -> Result<(), StoreError> {
        let client = redis::Client::open(self.url.as_str()).map_err(|e| self.unreachable(e))?;
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| self.unreachable(e))?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.unreachable(e))
    }

    fn unreachable(&self, error: impl std::fmt::Display) -> StoreError {
        StoreError::permanent(Message(format!(
            "the Redis test server {} cannot be used ({error}); start it (`cargo xtask \
             services`) or point {URL_VAR} at one",
            docket_core::store::url::redact(&self.url)
        )))
    }
}

/// Owns one test namespace; dropping it deletes every key of the namespace.
#[derive(Debug)]
pub struct RedisGuard {
    url: String,
    keys: Keys,
    store: RedisStore,
}

impl RedisGuard {
    /// The store of this namespace.
    #[must_use]
    pub fn store(&self) -> &RedisStore {
        &self.store
    }

    /// Every key of the namespace, sorted.
    ///
    /// # Errors
    /// Any failure to read the store.
    pub async fn namespace_keys(&self) -> Result<Vec<String>, StoreError> {
        self.keys_matching(&self.keys.scan_pattern()).await
    }

    /// Every key matching the `SCAN MATCH` pattern `pattern`, sorted.
    async fn keys_matching(&self, pattern: &str) -> Result<Vec<String>, StoreError> {
        let mut cursor: u64 = 0;
        let mut keys = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) = self
                .store
                .query(
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .arg("COUNT")
                        .arg(1000),
                    Access::Read,
                )
                .await?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// Every key of the namespace with its type and content, rendered deterministically:
    /// keys sorted, hash fields and set members sorted, sorted sets in their own order with
    /// their scores; bytes escaped so that any content renders.
    ///
    /// # Errors
    /// Any failure to read the store.
    pub async fn snapshot(&self) -> Result<String, StoreError> {
        self.render(self.namespace_keys().await?).await
    }

    /// The keys of the operation registry (every `ops:` key of the namespace), rendered as
    /// [`RedisGuard::snapshot`] renders the whole namespace.
    ///
    /// # Errors
    /// Any failure to read the store.
    pub async fn ops_snapshot(&self) -> Result<String, StoreError> {
        self.render(self.keys_matching(&self.keys.ops_scan_pattern()).await?)
            .await
    }

    /// Renders `keys` (sorted) with their types and contents.
    async fn render(&self, keys: Vec<String>) -> Result<String, StoreError> {
        let mut out = String::new();
        for key in keys {
            let kind: String = self
                .store
                .query(redis::cmd("TYPE").arg(&key), Access::Read)
                .await?;
            out.push_str(&format!("{key} ({kind})\n"));
            let mut lines: Vec<String> = match kind.as_str() {
                "string" => {
                    let v: Vec<u8> = self
                        .store
                        .query(redis::cmd("GET").arg(&key), Access::Read)
                        .await?;
                    vec![esc(&v)]
                }
                "hash" => {
                    let v: Vec<(Vec<u8>, Vec<u8>)> = self
                        .store
                        .query(redis::cmd("HGETALL").arg(&key), Access::Read)
                        .await?;
                    let mut v: Vec<String> = v
                        .iter()
                        .map(|(f, x)| format!("{} = {}", esc(f), esc(x)))
                        .collect();
                    v.sort();
                    v
                }
                "set" => {
                    let v: Vec<Vec<u8>> = self
                        .store
                        .query(redis::cmd("SMEMBERS").arg(&key), Access::Read)
                        .await?;
                    let mut v: Vec<String> = v.iter().map(|m| esc(m)).collect();
                    v.sort();
                    v
                }
                "zset" => {
                    let v: Vec<(Vec<u8>, String)> = self
                        .store
                        .query(
                            redis::cmd("ZRANGE")
                                .arg(&key)
                                .arg(0)
                                .arg(-1)
                                .arg("WITHSCORES"),
                            Access::Read,
                        )
                        .await?;
                    v.iter().map(|(m, s)| format!("{} @ {s}", esc(m))).collect()
                }
                "list" => {
                    let v: Vec<Vec<u8>> = self
                        .store
                        .query(redis::cmd("LRANGE").arg(&key).arg(0).arg(-1), Access::Read)
                        .await?;
                    v.iter().map(|m| esc(m)).collect()
                }
                other => vec![format!("<unsupported type {other}>")],
            };
            for line in lines.drain(..) {
                out.push_str("  ");
                out.push_str(&line);
                out.push('\n');
            }
        }
        Ok(out)
    }

    /// Runs a raw command on the test server (test set-up and corruption only).
    ///
    /// # Errors
    /// Any failure of the command.
    pub async fn command<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, StoreError> {
        self.store.query(cmd, Access::Write).await
    }

    /// Overwrites one hash field with `bytes` (test corruption).
    ///
    /// # Errors
    /// Any failure to write the store.
    pub async fn overwrite_field(
        &self,
        key: &str,
        field: &str,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        self.store
            .query::<()>(
                redis::cmd("HSET").arg(key).arg(field).arg(bytes),
                Access::Write,
            )
            .await
    }

    fn delete_all(&self) -> redis::RedisResult<()> {
        let client = redis::Client::open(self.url.as_str())?;
        let mut conn = client.get_connection()?;
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(self.keys.scan_pattern())
                .arg("COUNT")
                .arg(1000)
                .query(&mut conn)?;
            if !keys.is_empty() {
                redis::cmd("UNLINK").arg(&keys).query::<()>(&mut conn)?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

impl Drop for RedisGuard {
    fn drop(&mut self) {
        // A blocking connection: drop cannot await, and may run after the runtime is gone.
        if let Err(e) = self.delete_all() {
            tracing::warn!(namespace = self.keys.namespace(), error = %e, "test namespace cleanup failed");
        }
    }
}

fn esc(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

#[async_trait]
impl Harness for RedisHarness {
    type Guard = RedisGuard;

    async fn open(&self) -> Result<(Arc<dyn Backend>, Self::Guard), StoreError> {
        let (store, guard) = self.open_store().await?;
        Ok((Arc::new(store), guard))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            wakeups: true,
            ops_registry: true,
        }
    }

    async fn raw_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        guard.snapshot().await
    }

    async fn raw_ops_snapshot(&self, guard: &Self::Guard) -> Result<String, StoreError> {
        guard.ops_snapshot().await
    }

    async fn reopen(&self, guard: &Self::Guard) -> Result<Arc<dyn Backend>, StoreError> {
        // A new store value (its own connection, scripts and subscriptions) on the same
        // namespace, as a restarted process opens it.
        let store = RedisStore::open(RedisOptions::new(&self.url, guard.keys.namespace()))
            .await
            .map_err(|e| self.unreachable(e))?;
        Ok(Arc::new(store))
    }

    async fn corrupt_run(&self, guard: &Self::Guard, run_id: &RunId) -> Result<(), StoreError> {
        guard
            .overwrite_field(&guard.keys.run(run_id), "doc", UNDECODABLE)
            .await
    }

    async fn corrupt_event(
        &self,
        guard: &Self::Guard,
        run_id: &RunId,
        seq: u64,
    ) -> Result<(), StoreError> {
        guard
            .overwrite_field(&guard.keys.events(run_id), &seq_member(seq), UNDECODABLE)
            .await
    }

    async fn corrupt_graph(
        &self,
        guard: &Self::Guard,
        owner: &OwnerScope,
        graph_ref: &GraphRef,
    ) -> Result<(), StoreError> {
        let key = guard
            .keys
            .graph(owner, &graph_ref.graph_id, &graph_ref.graph_hash);
        guard.overwrite_field(&key, "bytes", UNDECODABLE).await
    }
}
