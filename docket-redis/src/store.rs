//! [`RedisStore`]: connection, server checks, and the helpers shared by the operations.

pub use crate::claims::MAX_CLAIM_BATCH;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use docket_core::model::Scope;
use docket_core::ops::rules::Retention;
use docket_core::store::{Message, StoreError};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, ErrorKind, FromRedisValue, ServerErrorKind};
use serde_json::{Map, Value};

use crate::error::{map_redis_error, Access};
use crate::keys::Keys;
use crate::options::{
    check_eviction_policy, check_namespace, persistence_warnings, ConnectError, RedisOptions,
};
use crate::scripts::{Reply, ScriptRunner, Scripts};

/// The Redis implementation of [`docket_core::store::RunStore`],
/// [`docket_core::store::GraphStore`] and [`docket_core::ops::OpsLifecycleRegistry`]. Cheap to
/// clone: clones share one connection manager.
///
/// See the crate documentation for the key layout, the scripts and the durability contract.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    conn: ConnectionManager,
    keys: Keys,
    scripts: Scripts,
    runtime: tokio::runtime::Handle,
    ops_retention: Retention,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("namespace", &self.inner.keys.namespace())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to the store named by a `redis://` URL that may carry Docket's options (see
    /// [`crate::parse_url`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL, then as [`RedisStore::open`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::open(crate::options::parse_url(url)?).await
    }

    /// Connects to `options.url`, checks the server and returns a store for
    /// `options.namespace`.
    ///
    /// At connect the store reads `maxmemory-policy` and refuses anything but `noeviction`
    /// (an evicting server would delete runs and claims silently). If `CONFIG` is forbidden
    /// (managed services, ACLs) the check is skipped with a warning. It also warns when
    /// `appendonly` is off or `appendfsync` is not `always`, because acknowledged commits can
    /// then be lost (see the crate docs). Last, it brings a namespace written by an older
    /// version to the current layout ([`crate::LAYOUT_VERSION`]: the per-owner indexes of
    /// tenant-fair claims), in one script.
    ///
    /// Must be called inside a Tokio runtime; the store keeps a handle to it for its wake-hint
    /// subscriber.
    ///
    /// # Errors
    /// `InvalidArgument` for an invalid namespace or URL; a permanent `Unavailable` whose
    /// source is [`ConnectError::EvictionPolicy`] for a server that may evict keys; a
    /// retryable `Unavailable` when the server cannot be reached.
    pub async fn open(options: RedisOptions) -> Result<Self, StoreError> {
        Self::open_checked(options).await.map_err(StoreError::from)
    }

    async fn open_checked(config: RedisOptions) -> Result<Self, ConnectError> {
        check_namespace(&config.namespace)?;
        let client = redis::Client::open(config.url.as_str())
            .map_err(|e| ConnectError::InvalidUrl(e.to_string()))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(config.response_timeout))
            .set_connection_timeout(Some(config.connection_timeout))
            .set_number_of_retries(3);
        // The manager retries a failed attempt; the whole first connection is bounded by the
        // connect timeout too, so a server that accepts and never answers cannot hang us.
        let conn = match tokio::time::timeout(
            config.connection_timeout,
            ConnectionManager::new_with_config(client.clone(), manager_config),
        )
        .await
        {
            Ok(connected) => {
                connected.map_err(|e| ConnectError::Store(map_redis_error(&e, Access::Read)))?
            }
            Err(_) => {
                return Err(ConnectError::Store(StoreError::retryable(Message(
                    format!(
                        "Redis did not complete the connection within {} ms (connect_timeout_ms)",
                        config.connection_timeout.as_millis()
                    ),
                ))))
            }
        };
        let store = RedisStore {
            inner: Arc::new(Inner {
                client,
                conn,
                keys: Keys::new(&config.namespace),
                scripts: Scripts::new(),
                runtime: tokio::runtime::Handle::current(),
                ops_retention: config.ops_retention,
            }),
        };
        store.check_server().await?;
        store.migrate_layout().await.map_err(ConnectError::Store)?;
        Ok(store)
    }

    /// A twin of this store (same connection and namespace) whose write scripts stop with an
    /// error exactly at their write boundary: after every check passed, before the first
    /// write. Tests use it to prove that the checks write nothing (`docs/reliability.md`,
    /// “Scripts check before they write”).
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn with_fail_points(&self) -> RedisStore {
        RedisStore {
            inner: Arc::new(Inner {
                client: self.inner.client.clone(),
                conn: self.inner.conn.clone(),
                keys: self.inner.keys.clone(),
                scripts: Scripts::with_fail_points(),
                runtime: self.inner.runtime.clone(),
                ops_retention: self.inner.ops_retention,
            }),
        }
    }

    /// The namespace of this store.
    #[must_use]
    pub fn namespace(&self) -> &str {
        self.inner.keys.namespace()
    }

    /// The key layout of this store's namespace.
    #[must_use]
    pub fn keys(&self) -> &Keys {
        &self.inner.keys
    }

    async fn check_server(&self) -> Result<(), ConnectError> {
        let Some(settings) = self.config_get("maxmemory-policy").await? else {
            tracing::warn!(
                "CONFIG GET is not permitted on this Redis server: cannot verify that \
                 maxmemory-policy is noeviction, nor the persistence settings"
            );
            return Ok(());
        };
        let policy = settings
            .get("maxmemory-policy")
            .cloned()
            .unwrap_or_default();
        check_eviction_policy(&policy)?;
        let persistence = self.config_get("append*").await?.unwrap_or_default();
        let appendonly = persistence.get("appendonly").map_or("", String::as_str);
        let appendfsync = persistence.get("appendfsync").map_or("", String::as_str);
        for warning in persistence_warnings(appendonly, appendfsync) {
            tracing::warn!(namespace = self.namespace(), "{warning}");
        }
        Ok(())
    }

    /// `CONFIG GET pattern`, or `None` when the server forbids or lacks `CONFIG`.
    async fn config_get(
        &self,
        pattern: &str,
    ) -> Result<Option<HashMap<String, String>>, ConnectError> {
        let mut conn = self.inner.conn.clone();
        let reply: Result<HashMap<String, String>, _> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(pattern)
            .query_async(&mut conn)
            .await;
        match reply {
            Ok(map) => Ok(Some(map)),
            Err(e) if config_forbidden(&e) => Ok(None),
            Err(e) => Err(ConnectError::Store(map_redis_error(&e, Access::Read))),
        }
    }

    pub(crate) fn scripts(&self) -> &Scripts {
        &self.inner.scripts
    }

    pub(crate) fn runner(&self) -> ScriptRunner<'_> {
        ScriptRunner {
            conn: &self.inner.conn,
        }
    }

    /// Runs one plain command (reads and test helpers).
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        access: Access,
    ) -> Result<T, StoreError> {
        let mut conn = self.inner.conn.clone();
        cmd.query_async(&mut conn)
            .await
            .map_err(|e| map_redis_error(&e, access))
    }

    /// Runs a pipeline of reads.
    pub(crate) async fn query_pipe<T: FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, StoreError> {
        let mut conn = self.inner.conn.clone();
        pipe.query_async(&mut conn)
            .await
            .map_err(|e| map_redis_error(&e, Access::Read))
    }

    /// `HGETALL key` as raw bytes.
    pub(crate) async fn hgetall(&self, key: &str) -> Result<HashMap<String, Vec<u8>>, StoreError> {
        let mut conn = self.inner.conn.clone();
        conn.hgetall(key)
            .await
            .map_err(|e| map_redis_error(&e, Access::Read))
    }

    /// Runs a script.
    pub(crate) async fn script(
        &self,
        script: &redis::Script,
        keys: &[String],
        args: &[Vec<u8>],
        access: Access,
    ) -> Result<Reply, StoreError> {
        self.runner().run(script, keys, args, access).await
    }

    pub(crate) fn client(&self) -> &redis::Client {
        &self.inner.client
    }

    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.runtime
    }

    pub(crate) fn ops_retention(&self) -> Retention {
        self.inner.ops_retention
    }
}

fn config_forbidden(err: &redis::RedisError) -> bool {
    if err.kind() == ErrorKind::Server(ServerErrorKind::NoPerm) || err.code() == Some("NOPERM") {
        return true;
    }
    // A renamed or disabled CONFIG command answers "ERR unknown command".
    err.kind() == ErrorKind::Server(ServerErrorKind::ResponseError)
        && err
            .detail()
            .is_some_and(|d| d.to_ascii_lowercase().contains("unknown command"))
}

/// Named string parameters of a script (`ARGV[1]`), built as a JSON object.
#[derive(Default)]
pub(crate) struct Params(Map<String, Value>);

impl Params {
    pub(crate) fn new() -> Self {
        Params::default()
    }

    pub(crate) fn set(mut self, name: &str, value: impl ToString) -> Self {
        self.0
            .insert(name.to_owned(), Value::String(value.to_string()));
        self
    }

    pub(crate) fn scope(self, scope: &Scope) -> Self {
        match scope.as_owner() {
            None => self.set("scope_kind", "system").set("scope_owner", ""),
            Some(owner) => self
                .set("scope_kind", "owner")
                .set("scope_owner", owner.scope_key()),
        }
    }

    pub(crate) fn into_arg(self) -> Vec<u8> {
        // A map of strings always serializes.
        serde_json::to_vec(&Value::Object(self.0)).unwrap_or_default()
    }
}
