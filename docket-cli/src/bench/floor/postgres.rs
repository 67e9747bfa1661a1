//! The PostgreSQL floor: bare tables in the store's schema, reached through a pool built like
//! the store's (same URL, pool size, session settings, statement caching, no ping per acquire,
//! connections handed back warm after the hot statements: [`WarmPool`]), so the floor and the
//! store differ only in what their statements do.
//!
//! Behind a transaction pooler (`pooler=transaction` or `poll_only=true`) the store sends each
//! statement as one simple query with its parameters inline, keeping it prepared per server
//! connection through its schema's `docket_prepare` procedure; so does the floor, through the
//! same pooler and the same procedure.

use std::time::Duration;

use async_trait::async_trait;
use docket_postgres::WarmPool;
use sqlx::postgres::{PgPoolOptions, PgRow};
use sqlx::{Executor, Row};

use super::{floor_error, row_id, Floor};
use crate::bench::BenchError;

/// A pool over the store's database.
#[derive(Debug)]
pub(crate) struct PostgresFloor {
    /// The store's kind of pool: sqlx's, with connections handed back warm after the hot
    /// statements (no round trip to test them), as the store hands back its own.
    pool: WarmPool,
    /// Behind a transaction pooler: the store's schema, whose `docket_prepare` keeps the floor's
    /// statements prepared per server connection (parameters inline, one simple query each).
    inline: Option<String>,
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
        // The store's own driver options (behind a pooler: no startup parameters).
        let (connect, options) = docket_postgres::driver_options(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(options.pool_size)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(connect)
            .await
            .map_err(pg_error)?;
        let pool = WarmPool::new(pool, options.pool_size);
        let commits = format!("{}.docket_bench_floor_commits", options.schema);
        let claims = format!("{}.docket_bench_floor_claims", options.schema);
        Ok(PostgresFloor {
            pool,
            inline: options.transaction_pooled().then(|| options.schema.clone()),
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
            .execute(self.pool.pool())
            .await
            .map(|_| ())
            .map_err(pg_error)
    }

    /// `sql` with `$n` replaced by `literals[n - 1]` (the floor's statements have fewer than
    /// ten parameters and no `$` elsewhere), sent as one simple query.
    async fn inline(&self, sql: &str, literals: &[String]) -> Result<Vec<PgRow>, BenchError> {
        let mut text = sql.to_owned();
        for (i, literal) in literals.iter().enumerate().rev() {
            text = text.replace(&format!("${}", i + 1), literal);
        }
        sqlx::raw_sql(&text)
            .fetch_all(self.pool.pool())
            .await
            .map_err(pg_error)
    }

    /// A hot floor statement the way the store sends its own behind a pooler: prepared on the
    /// server connection by the schema's `docket_prepare` unless it is there already, then
    /// executed with `literals`, in one simple query.
    fn cached(schema: &str, sql: &str, types: &str, literals: &[String]) -> String {
        let definition = |name: &str| format!("PREPARE {name}({types}) AS {sql}");
        let name = format!("docket_floor_{:016x}", fnv1a(&definition("")));
        format!(
            "CALL {schema}.docket_prepare('{name}', {}, 256, false);\nEXECUTE {name}({})",
            text_literal(&definition(&name)),
            literals.join(", ")
        )
    }
}

/// FNV-1a, 64 bits: a stable name for a floor statement's text.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A bench-minted token as a text literal (an escape string, so the meaning of `\` does not
/// depend on the server's settings).
fn text_literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// Reads the settings [`Floor::server_settings`] reports, each as the server prints it.
const SERVER_SETTINGS: &str = "SELECT current_setting('server_version'), \
    current_setting('fsync'), current_setting('synchronous_commit'), \
    current_setting('autovacuum'), current_setting('shared_buffers')";

#[async_trait]
impl Floor for PostgresFloor {
    async fn server_settings(&self) -> Result<Option<String>, BenchError> {
        // A simple query, so it passes a transaction pooler unchanged.
        let rows = sqlx::raw_sql(SERVER_SETTINGS)
            .fetch_all(self.pool.pool())
            .await
            .map_err(pg_error)?;
        let row = rows
            .first()
            .ok_or_else(|| floor_error("postgres", "the server returned no settings"))?;
        let setting = |i: usize| row.try_get::<String, _>(i).map_err(pg_error);
        let autovacuum = setting(3)?;
        let caveat = if autovacuum == "off" {
            " (nothing reclaims the rows and index entries a run leaves dead, so figures taken \
             late in a long run pay for the earlier phases)"
        } else {
            ""
        };
        Ok(Some(format!(
            "server: PostgreSQL {}, fsync {}, synchronous_commit {}, shared_buffers {}, \
             autovacuum {autovacuum}{caveat}",
            setting(0)?,
            setting(1)?,
            setting(2)?,
            setting(4)?,
        )))
    }

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
        let insert = format!(
            "INSERT INTO {t} (id, seq, token) SELECT id, 0, token FROM UNNEST($1::bigint[], $2::text[]) AS u(id, token)"
        );
        if self.inline.is_some() {
            let ids = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
            let tokens: Vec<String> = tokens.iter().map(|t| text_literal(t)).collect();
            self.inline(
                &insert,
                &[
                    format!("ARRAY[{ids}]"),
                    format!("ARRAY[{}]::text[]", tokens.join(",")),
                ],
            )
            .await?;
        } else {
            sqlx::query(&insert)
                .bind(ids)
                .bind(tokens.to_vec())
                .execute(self.pool.pool())
                .await
                .map_err(pg_error)?;
        }
        Ok(())
    }

    async fn commit(&self, row: usize, seq: u64, token: &str) -> Result<bool, BenchError> {
        let mut conn = self.pool.acquire().await.map_err(pg_error)?;
        let affected = if let Some(schema) = &self.inline {
            let text = Self::cached(
                schema,
                &self.commit_sql,
                "int8, int8, text",
                &[
                    row_id(row)?.to_string(),
                    (seq as i64).to_string(),
                    text_literal(token),
                ],
            );
            conn.execute(sqlx::raw_sql(&text)).await
        } else {
            conn.execute(
                sqlx::query(&self.commit_sql)
                    .bind(row_id(row)?)
                    .bind(seq as i64)
                    .bind(token),
            )
            .await
        }
        .map_err(pg_error)?
        .rows_affected();
        conn.reuse();
        Ok(affected == 1)
    }

    async fn commit_seqs(&self) -> Result<Vec<u64>, BenchError> {
        let rows = sqlx::raw_sql(&format!("SELECT seq FROM {} ORDER BY id", self.commits))
            .fetch_all(self.pool.pool())
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
        let mut conn = self.pool.acquire().await.map_err(pg_error)?;
        let rows = if let Some(schema) = &self.inline {
            let text = Self::cached(
                schema,
                &self.claim_sql,
                "text, int8, int8",
                &[text_literal(token), now.to_string(), limit.to_string()],
            );
            conn.fetch_all(sqlx::raw_sql(&text))
                .await
                .map_err(pg_error)?
        } else {
            conn.fetch_all(
                sqlx::query(&self.claim_sql)
                    .bind(token)
                    .bind(now)
                    .bind(i64::from(limit)),
            )
            .await
            .map_err(pg_error)?
        };
        conn.reuse();
        rows.iter()
            .map(|row| {
                row.try_get::<i64, _>(0)
                    .map(|id| id.max(0) as u64)
                    .map_err(pg_error)
            })
            .collect()
    }

    async fn claim_counts(&self) -> Result<(u64, u64), BenchError> {
        let row = sqlx::raw_sql(&format!(
            "SELECT count(*) FILTER (WHERE token IS NULL), count(*) FILTER (WHERE token IS NOT NULL) FROM {}",
            self.claims
        ))
        .fetch_one(self.pool.pool())
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
