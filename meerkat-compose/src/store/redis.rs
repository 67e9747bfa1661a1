//! Redis evidence graph and delivery ledger: keys `{docket:<ns>}:mc:*`, inside the run
//! store's namespace hash tag (one cluster slot, removed with the namespace) but never
//! overlapping its keys. Every write is one script or one command.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `mc:item:{realm}:{ns}:{item}` | hash | `revision` |
//! | `mc:evidence:{realm}:{ns}:{item}` | list | evidence JSON, in order |
//! | `mc:jobs:{realm}` | hash | job → `0` (pending) or `1` (delivered) |
//! | `mc:pending:{realm}` | sorted set (score 0) | pending jobs, in byte order |
//! | `mc:links:{realm}:{job}` | set | `[namespace, item]` JSON |
//!
//! Components other than the last are percent-encoded as the run store's keys are.

use async_trait::async_trait;
use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Script};

use docket_redis::keys::{enc, Keys};

use crate::ports::error::{DetachedJobError, EvidenceError};
use crate::ports::evidence::{EvidenceGraph, EvidenceItem, WorkEvidenceRef};
use crate::ports::ids::{check_scope_component, JobId, JobReference, WorkItemRef};
use crate::ports::ledger::DeliveryLedger;

use super::memory::to_item_ref;

/// Reads an item: `nil` when absent, else `{revision, evidence...}`.
const READ_ITEM: &str = r"
local revision = redis.call('HGET', KEYS[1], 'revision')
if not revision then return false end
local out = { revision }
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do out[#out + 1] = e end
return out
";

/// Appends under a revision: `{0}` absent, `{1, actual}` stale, `{2, revision,
/// evidence...}` written (the item after the write, so no second round trip).
const ADD_EVIDENCE: &str = r"
local revision = redis.call('HGET', KEYS[1], 'revision')
if not revision then return {'0'} end
if revision ~= ARGV[1] then return {'1', revision} end
redis.call('RPUSH', KEYS[2], ARGV[2])
local out = { '2', tostring(redis.call('HINCRBY', KEYS[1], 'revision', 1)) }
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do out[#out + 1] = e end
return out
";

/// Records a job pending unless it is known.
const RECORD_PENDING: &str = r"
if redis.call('HSETNX', KEYS[1], ARGV[1], '0') == 1 then
  redis.call('ZADD', KEYS[2], 0, ARGV[1])
end
return 1
";

/// Marks a job delivered.
const MARK_DELIVERED: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], '1')
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
";

/// The scripts, hashed once per store rather than per call.
struct Scripts {
    read_item: Script,
    add_evidence: Script,
    record_pending: Script,
    mark_delivered: Script,
}

/// The Redis compose store. Clones share one connection manager.
#[derive(Clone)]
pub struct RedisComposeStore {
    conn: ConnectionManager,
    prefix: String,
    scripts: std::sync::Arc<Scripts>,
}

impl std::fmt::Debug for RedisComposeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisComposeStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn fault(error: &redis::RedisError) -> (bool, String) {
    let transient = error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout();
    (transient, format!("redis: {error}"))
}

fn job_fault(error: &redis::RedisError) -> DetachedJobError {
    let (transient, detail) = fault(error);
    DetachedJobError::store(transient, detail)
}

fn evidence_fault(error: &redis::RedisError) -> EvidenceError {
    let (transient, detail) = fault(error);
    EvidenceError::store(transient, detail)
}

fn item_not_found(item: &WorkItemRef) -> EvidenceError {
    EvidenceError::NotFound {
        realm_id: item.realm_id.clone(),
        namespace: item.namespace.clone(),
        id: item.item_id.clone(),
    }
}

fn parse_revision(text: &str) -> Result<u64, EvidenceError> {
    text.parse()
        .map_err(|_| EvidenceError::store(false, format!("corrupt stored revision {text:?}")))
}

impl RedisComposeStore {
    /// Connects with a Docket Redis URL (its `namespace=` parameter names the namespace,
    /// default `docket`).
    ///
    /// # Errors
    /// `InvalidInput` for a malformed URL or namespace; `Store` when the server cannot be
    /// reached.
    pub async fn connect_url(url: &str) -> Result<Self, DetachedJobError> {
        let config = docket_redis::parse_url(url)
            .map_err(|e| DetachedJobError::InvalidInput(e.to_string()))?;
        Self::connect(&config.url, &config.namespace).await
    }

    /// Connects to the server at `url` for `namespace`.
    ///
    /// # Errors
    /// `InvalidInput` for an invalid namespace or URL; `Store` when the server cannot be
    /// reached.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self, DetachedJobError> {
        if !docket_redis::keys::namespace_is_valid(namespace) {
            return Err(DetachedJobError::InvalidInput(format!(
                "invalid Redis namespace {namespace:?}"
            )));
        }
        let client =
            redis::Client::open(url).map_err(|e| DetachedJobError::InvalidInput(e.to_string()))?;
        let conn = ConnectionManager::new(client)
            .await
            .map_err(|e| job_fault(&e))?;
        Ok(RedisComposeStore {
            conn,
            prefix: format!("{}mc:", Keys::new(namespace).prefix()),
            scripts: std::sync::Arc::new(Scripts {
                read_item: Script::new(READ_ITEM),
                add_evidence: Script::new(ADD_EVIDENCE),
                record_pending: Script::new(RECORD_PENDING),
                mark_delivered: Script::new(MARK_DELIVERED),
            }),
        })
    }

    fn item_keys(&self, item: &WorkItemRef) -> (String, String) {
        let tail = format!(
            "{}:{}:{}",
            enc(&item.realm_id),
            enc(item.namespace.as_str()),
            item.item_id.as_str()
        );
        (
            format!("{}item:{tail}", self.prefix),
            format!("{}evidence:{tail}", self.prefix),
        )
    }

    fn job_keys(&self, realm: &str) -> (String, String) {
        (
            format!("{}jobs:{}", self.prefix, enc(realm)),
            format!("{}pending:{}", self.prefix, enc(realm)),
        )
    }

    fn links_key(&self, job: &JobReference) -> String {
        format!(
            "{}links:{}:{}",
            self.prefix,
            enc(job.realm_id()),
            job.job_id().as_str()
        )
    }
}

fn decode_evidence(list: &[String]) -> Result<Vec<WorkEvidenceRef>, EvidenceError> {
    list.iter()
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|e| EvidenceError::store(false, format!("corrupt stored evidence: {e}")))
        })
        .collect()
}

#[async_trait]
impl EvidenceGraph for RedisComposeStore {
    async fn ensure_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        check_scope_component("work item realm", &item.realm_id)
            .map_err(EvidenceError::InvalidInput)?;
        let (item_key, _) = self.item_keys(item);
        let mut conn = self.conn.clone();
        let _: bool = conn
            .hset_nx(&item_key, "revision", 0)
            .await
            .map_err(|e| evidence_fault(&e))?;
        self.get_item(item).await
    }

    async fn get_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        let (item_key, evidence_key) = self.item_keys(item);
        let mut conn = self.conn.clone();
        let found: Option<Vec<String>> = self
            .scripts
            .read_item
            .key(item_key)
            .key(evidence_key)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| evidence_fault(&e))?;
        let found = found.ok_or_else(|| item_not_found(item))?;
        let (revision, evidence) = found
            .split_first()
            .ok_or_else(|| EvidenceError::store(false, "empty item reply"))?;
        Ok(EvidenceItem {
            item: item.clone(),
            revision: parse_revision(revision)?,
            evidence: decode_evidence(evidence)?,
        })
    }

    async fn add_evidence(
        &self,
        item: &WorkItemRef,
        expected_revision: u64,
        evidence: &WorkEvidenceRef,
    ) -> Result<EvidenceItem, EvidenceError> {
        evidence.check_generic()?;
        let encoded = serde_json::to_string(evidence)
            .map_err(|e| EvidenceError::store(false, format!("encode evidence: {e}")))?;
        let (item_key, evidence_key) = self.item_keys(item);
        let mut conn = self.conn.clone();
        let reply: Vec<String> = self
            .scripts
            .add_evidence
            .key(item_key)
            .key(evidence_key)
            .arg(expected_revision.to_string())
            .arg(encoded)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| evidence_fault(&e))?;
        match reply.as_slice() {
            [status] if status == "0" => Err(item_not_found(item)),
            [status, actual] if status == "1" => Err(EvidenceError::StaleRevision {
                id: item.item_id.clone(),
                expected: expected_revision,
                actual: parse_revision(actual)?,
            }),
            [status, revision, list @ ..] if status == "2" => Ok(EvidenceItem {
                item: item.clone(),
                revision: parse_revision(revision)?,
                evidence: decode_evidence(list)?,
            }),
            other => Err(EvidenceError::store(
                false,
                format!("unexpected script reply {other:?}"),
            )),
        }
    }
}

#[async_trait]
impl DeliveryLedger for RedisComposeStore {
    async fn record_pending(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        let (jobs, pending) = self.job_keys(job.realm_id());
        let mut conn = self.conn.clone();
        let _: i64 = self
            .scripts
            .record_pending
            .key(jobs)
            .key(pending)
            .arg(job.job_id().as_str())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| job_fault(&e))?;
        Ok(())
    }

    async fn pending(&self, realm: &str, limit: u32) -> Result<Vec<JobId>, DetachedJobError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (_, pending) = self.job_keys(realm);
        let mut conn = self.conn.clone();
        let stop = isize::try_from(limit).unwrap_or(isize::MAX) - 1;
        let ids: Vec<String> = conn
            .zrange(pending, 0, stop)
            .await
            .map_err(|e| job_fault(&e))?;
        ids.into_iter()
            .map(|id| {
                JobId::new(id)
                    .map_err(|e| DetachedJobError::store(false, format!("stored job id: {e}")))
            })
            .collect()
    }

    async fn mark_delivered(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        let (jobs, pending) = self.job_keys(job.realm_id());
        let mut conn = self.conn.clone();
        let _: i64 = self
            .scripts
            .mark_delivered
            .key(jobs)
            .key(pending)
            .arg(job.job_id().as_str())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| job_fault(&e))?;
        Ok(())
    }

    async fn is_delivered(&self, job: &JobReference) -> Result<bool, DetachedJobError> {
        let (jobs, _) = self.job_keys(job.realm_id());
        let mut conn = self.conn.clone();
        let flag: Option<String> = conn
            .hget(jobs, job.job_id().as_str())
            .await
            .map_err(|e| job_fault(&e))?;
        Ok(flag.as_deref() == Some("1"))
    }

    async fn link(&self, job: &JobReference, item: &WorkItemRef) -> Result<(), DetachedJobError> {
        let member = serde_json::to_string(&[item.namespace.as_str(), item.item_id.as_str()])
            .map_err(|e| DetachedJobError::store(false, format!("encode link: {e}")))?;
        let mut conn = self.conn.clone();
        let _: i64 = conn
            .sadd(self.links_key(job), member)
            .await
            .map_err(|e| job_fault(&e))?;
        Ok(())
    }

    async fn links(&self, job: &JobReference) -> Result<Vec<WorkItemRef>, DetachedJobError> {
        let mut conn = self.conn.clone();
        let mut members: Vec<String> = conn
            .smembers(self.links_key(job))
            .await
            .map_err(|e| job_fault(&e))?;
        members.sort();
        members
            .iter()
            .map(|member| {
                let [namespace, item]: [String; 2] = serde_json::from_str(member).map_err(|e| {
                    DetachedJobError::store(false, format!("corrupt stored link: {e}"))
                })?;
                to_item_ref(job.realm_id(), &namespace, &item)
            })
            .collect()
    }
}
