//! The PostgreSQL floor: bare tables in the store's schema, reached through an sqlx pool built
//! like the store's (same URL, pool size, session settings, statement caching, no ping per
//! acquire), so the floor and the store differ only in what their statements do.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;

use super::{floor_error, row_id, Floor};
use crate::bench::BenchError;

/// A pool over the store's database.
#[derive(Debug)]
pub(crate) struct PostgresFloor {
    pool: PgPool,
    persistent: bool,
    commits: String,
    claims: String,
    commit_sql: String,
    claim_sql: String,
}

fn pg_error(e: sqlx::Error) -> BenchError {
    floor_error("postgres", e)
}

impl PostgresFloor {
    /// Connects to the database of `url` (a `postgres://…?schema=` URL as the store takes it).
    ///
    /// # Errors
    /// A malformed URL or an unreachable server.
    pub(crate) async fn connect(url: &str) -> Result<Self, BenchError> {
        let (driver_url, options) = docket_postgres::parse_url(url)?;
        let mut connect = PgConnectOptions::from_str(&driver_url)
            .map_err(|e| floor_error("postgres", format!("connection URL: {e}")))?;
        let settings = options.session_settings();
        if !settings.is_empty() {
            connect = connect.options(settings);
        }
        if options.poll_only {
            connect = connect.statement_cache_capacity(0).extra_float_digits(None);
        }
        let pool = PgPoolOptions::new()
            .max_connections(options.pool_size)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(connect)
            .await
            .map_err(pg_error)?;
        let commits = format!("{}.docket_bench_floor_commits", options.schema);
        let claims = format!("{}.docket_bench_floor_claims", options.schema);
        Ok(PostgresFloor {
            pool,
            persistent: !options.poll_only,
            commit_sql: format!(
                "UPDATE {commits} SET seq = seq + 1 WHERE id = $1 AND seq = $2 AND token = $3"
            ),
            claim_sql: format!(
                "UPDATE {claims} SET token = $1, claimed_at = $2 WHERE id IN \
                 (SELECT id FROM {claims} WHERE token IS NULL AND wake_at <= $2 \
                  ORDER BY wake_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING id"
            ),
            commits,
            claims,
        })
    }

    async fn execute(&self, sql: &str) -> Result<(), BenchError> {
        sqlx::raw_sql(sql)
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(pg_error)
    }
}

#[async_trait]
impl Floor for PostgresFloor {
    fn commit_statement(&self) -> &'static str {
        "UPDATE bare_table SET seq = seq + 1 WHERE id = $1 AND seq = $2 AND token = $3"
    }

    fn claim_statement(&self) -> &'static str {
        "UPDATE bare_table SET token = $1 WHERE id IN (SELECT id … WHERE token IS NULL ORDER BY wake_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING id"
    }

    async fn prepare_commits(&self, tokens: &[String]) -> Result<(), BenchError> {
        let t = &self.commits;
        self.execute(&format!(
            "DROP TABLE IF EXISTS {t};
             CREATE TABLE {t} (id bigint PRIMARY KEY, seq bigint NOT NULL, token text NOT NULL);"
        ))
        .await?;
        let ids: Vec<i64> = (0..tokens.len()).map(row_id).collect::<Result<_, _>>()?;
        sqlx::query(&format!(
            "INSERT INTO {t} (id, seq, token) SELECT id, 0, token FROM UNNEST($1::bigint[], $2::text[]) AS u(id, token)"
        ))
        .bind(ids)
        .bind(tokens.to_vec())
        .execute(&self.pool)
        .await
        .map_err(pg_error)?;
        Ok(())
    }

    async fn commit(&self, row: usize, seq: u64, token: &str) -> Result<bool, BenchError> {
        let done = sqlx::query(&self.commit_sql)
            .persistent(self.persistent)
            .bind(row_id(row)?)
            .bind(seq as i64)
            .bind(token)
            .execute(&self.pool)
            .await
            .map_err(pg_error)?;
        Ok(done.rows_affected() == 1)
    }

    async fn commit_seqs(&self) -> Result<Vec<u64>, BenchError> {
        let rows = sqlx::query(&format!("SELECT seq FROM {} ORDER BY id", self.commits))
            .fetch_all(&self.pool)
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|row| {
                row.try_get::<i64, _>(0)
                    .map(|s| s.max(0) as u64)
                    .map_err(pg_error)
            })
            .collect()
    }

    async fn prepare_claims(&self, rows: usize) -> Result<(), BenchError> {
        let t = &self.claims;
        let rows = row_id(rows)?;
        self.execute(&format!(
            "DROP TABLE IF EXISTS {t};
             CREATE TABLE {t} (id bigint PRIMARY KEY, wake_at bigint NOT NULL, token text NULL,
                               claimed_at bigint NULL);
             CREATE INDEX ON {t} (wake_at, id) WHERE token IS NULL;
             INSERT INTO {t} (id, wake_at) SELECT g, g FROM generate_series(0, {rows} - 1) AS g;
             ANALYZE {t};"
        ))
        .await
    }

    async fn claim(&self, limit: u32, token: &str) -> Result<Vec<u64>, BenchError> {
        let now = docket_core::model::Timestamp::now_utc().as_micros();
        let rows = sqlx::query(&self.claim_sql)
            .persistent(self.persistent)
            .bind(token)
            .bind(now)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|row| {
                row.try_get::<i64, _>(0)
                    .map(|id| id.max(0) as u64)
                    .map_err(pg_error)
            })
            .collect()
    }

    async fn claim_counts(&self) -> Result<(u64, u64), BenchError> {
        let row = sqlx::query(&format!(
            "SELECT count(*) FILTER (WHERE token IS NULL), count(*) FILTER (WHERE token IS NOT NULL) FROM {}",
            self.claims
        ))
        .fetch_one(&self.pool)
        .await
        .map_err(pg_error)?;
        let get = |i: usize| {
            row.try_get::<i64, _>(i)
                .map(|n| n.max(0) as u64)
                .map_err(pg_error)
        };
        Ok((get(0)?, get(1)?))
    }

    async fn teardown(&self) -> Result<(), BenchError> {
        self.execute(&format!(
            "DROP TABLE IF EXISTS {}; DROP TABLE IF EXISTS {};",
            self.commits, self.claims
        ))
        .await?;
        self.pool.close().await;
        Ok(())
    }
}
