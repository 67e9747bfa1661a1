//! The Redis floor: trivial Lua scripts (run with `EVALSHA`, like the store's) on keys under the
//! store's own hash tag, through one connection manager configured like the store's.

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use super::{floor_error, Floor};
use crate::bench::BenchError;

/// Compare-and-set of `(seq, token)` on one hash.
const COMMIT_LUA: &str = r"
local stored = redis.call('HMGET', KEYS[1], 'seq', 'token')
if stored[1] ~= ARGV[1] or stored[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'seq', ARGV[3])
return 1
";

/// Pops the oldest due rows and marks each claimed.
const CLAIM_LUA: &str = r"
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[1])
local rows = {}
for i = 1, #popped, 2 do
  local row = popped[i]
  redis.call('HSET', KEYS[3] .. row, 'token', ARGV[2], 'claimed_at', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[3], row)
  rows[#rows + 1] = row
end
return rows
";

/// Keys and scripts of the floor.
pub(crate) struct RedisFloor {
    conn: ConnectionManager,
    prefix: String,
    rows: std::sync::atomic::AtomicUsize,
    commit: Script,
    claim: Script,
}

impl std::fmt::Debug for RedisFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFloor")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn redis_error(e: redis::RedisError) -> BenchError {
    floor_error("redis", e)
}

impl RedisFloor {
    /// Connects to the server of `url` (a `redis://…?namespace=` URL as the store takes it);
    /// the floor's keys start with `store_prefix` (the store's hash tag).
    ///
    /// # Errors
    /// A malformed URL or an unreachable server.
    pub(crate) async fn connect(url: &str, store_prefix: &str) -> Result<Self, BenchError> {
        let config = docket_redis::parse_url(url).map_err(|e| floor_error("redis", e))?;
        let client = redis::Client::open(config.url.as_str()).map_err(redis_error)?;
        let manager = ConnectionManagerConfig::new()
            .set_response_timeout(Some(config.response_timeout))
            .set_connection_timeout(Some(config.connection_timeout))
            .set_number_of_retries(3);
        let conn = ConnectionManager::new_with_config(client, manager)
            .await
            .map_err(redis_error)?;
        Ok(RedisFloor {
            conn,
            prefix: format!("{store_prefix}bench:floor:"),
            rows: std::sync::atomic::AtomicUsize::new(0),
            commit: Script::new(COMMIT_LUA),
            claim: Script::new(CLAIM_LUA),
        })
    }

    fn commit_key(&self, row: usize) -> String {
        format!("{}commit:{row}", self.prefix)
    }

    fn ready_key(&self) -> String {
        format!("{}ready", self.prefix)
    }

    fn claims_key(&self) -> String {
        format!("{}claims", self.prefix)
    }

    fn claim_row_prefix(&self) -> String {
        format!("{}claim:", self.prefix)
    }

    /// Deletes every key of the floor.
    async fn delete_all(&self) -> Result<(), BenchError> {
        let mut conn = self.conn.clone();
        let pattern = format!("{}*", self.prefix);
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            if !keys.is_empty() {
                let _: () = redis::cmd("UNLINK")
                    .arg(&keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(redis_error)?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

impl RedisFloor {
    /// One `CONFIG GET` value, or `None` where the server refuses `CONFIG` (managed services
    /// often do).
    async fn config(&self, name: &str) -> Option<String> {
        let mut conn = self.conn.clone();
        let pair: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(&mut conn)
            .await
            .ok()?;
        pair.into_iter().nth(1)
    }
}

#[async_trait]
impl Floor for RedisFloor {
    async fn server_settings(&self) -> Result<Option<String>, BenchError> {
        let mut conn = self.conn.clone();
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .map_err(redis_error)?;
        let version = info
            .lines()
            .find_map(|line| line.strip_prefix("redis_version:"))
            .unwrap_or("of unknown version")
            .trim()
            .to_owned();
        let unknown = || "unknown (CONFIG refused)".to_owned();
        let appendonly = self.config("appendonly").await.unwrap_or_else(unknown);
        let appendfsync = self.config("appendfsync").await.unwrap_or_else(unknown);
        Ok(Some(format!(
            "server: Redis {version}, appendonly {appendonly}, appendfsync {appendfsync}"
        )))
    }

    fn commit_statement(&self) -> &'static str {
        "EVALSHA: HMGET seq, token; compare; HSET seq (one hash)"
    }

    fn claim_statement(&self) -> &'static str {
        "EVALSHA: ZPOPMIN ready LIMIT; HSET token per row; ZADD claims"
    }

    async fn prepare_commits(&self, tokens: &[String]) -> Result<(), BenchError> {
        let mut conn = self.conn.clone();
        let mut pipe = redis::pipe();
        for row in 0..self.rows.load(std::sync::atomic::Ordering::Relaxed) {
            pipe.del(self.commit_key(row)).ignore();
        }
        for (row, token) in tokens.iter().enumerate() {
            pipe.hset_multiple(self.commit_key(row), &[("seq", "0"), ("token", token)])
                .ignore();
        }
        let _: () = pipe.query_async(&mut conn).await.map_err(redis_error)?;
        self.rows
            .store(tokens.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    async fn commit(&self, row: usize, seq: u64, token: &str) -> Result<bool, BenchError> {
        let mut conn = self.conn.clone();
        let matched: i64 = self
            .commit
            .key(self.commit_key(row))
            .arg(seq.to_string())
            .arg(token)
            .arg((seq + 1).to_string())
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(matched == 1)
    }

    async fn commit_seqs(&self) -> Result<Vec<u64>, BenchError> {
        let mut conn = self.conn.clone();
        let rows = self.rows.load(std::sync::atomic::Ordering::Relaxed);
        let mut pipe = redis::pipe();
        for row in 0..rows {
            pipe.hget(self.commit_key(row), "seq");
        }
        let seqs: Vec<Option<String>> = pipe.query_async(&mut conn).await.map_err(redis_error)?;
        seqs.into_iter()
            .enumerate()
            .map(|(row, seq)| {
                seq.and_then(|s| s.parse().ok())
                    .ok_or_else(|| floor_error("redis", format!("commit row {row} has no seq")))
            })
            .collect()
    }

    async fn prepare_claims(&self, rows: usize) -> Result<(), BenchError> {
        let mut conn = self.conn.clone();
        let mut pipe = redis::pipe();
        pipe.del(self.ready_key()).ignore();
        pipe.del(self.claims_key()).ignore();
        let members: Vec<(u64, u64)> = (0..rows as u64).map(|row| (row, row)).collect();
        for chunk in members.chunks(1000) {
            pipe.zadd_multiple(self.ready_key(), chunk).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await.map_err(redis_error)?;
        Ok(())
    }

    async fn claim(&self, limit: u32, token: &str) -> Result<Vec<u64>, BenchError> {
        let mut conn = self.conn.clone();
        let now = docket_core::model::Timestamp::now_utc().as_micros();
        let rows: Vec<String> = self
            .claim
            .key(self.ready_key())
            .key(self.claims_key())
            .key(self.claim_row_prefix())
            .arg(limit)
            .arg(token)
            .arg(now)
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        rows.iter()
            .map(|row| {
                row.parse().map_err(|_| {
                    floor_error("redis", format!("claimed row {row:?} is not a number"))
                })
            })
            .collect()
    }

    async fn claim_counts(&self) -> Result<(u64, u64), BenchError> {
        let mut conn = self.conn.clone();
        let (ready, claimed): (u64, u64) = redis::pipe()
            .zcard(self.ready_key())
            .zcard(self.claims_key())
            .query_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok((ready, claimed))
    }

    async fn teardown(&self) -> Result<(), BenchError> {
        self.delete_all().await
    }
}
