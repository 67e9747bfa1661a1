//! PostgreSQL evidence graph and delivery ledger: tables `meerkat_compose_*` in the run
//! store's schema, created under an advisory lock with their own version row (the run
//! store's migration table is never touched). Every write is one statement; statements are
//! built once, with the schema name, when the store is opened.

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;

use crate::ports::error::{DetachedJobError, EvidenceError};
use crate::ports::evidence::{EvidenceGraph, EvidenceItem, WorkEvidenceRef};
use crate::ports::ids::{check_scope_component, JobId, JobReference, WorkItemRef};
use crate::ports::ledger::DeliveryLedger;

use super::memory::to_item_ref;

/// The schema version this build writes and reads.
pub const COMPOSE_SCHEMA_VERSION: i32 = 1;

/// Connections of the compose pool (its writes are short single statements).
const POOL_SIZE: u32 = 4;

#[derive(Debug)]
struct Statements {
    ensure_item: String,
    get_item: String,
    add_evidence: String,
    item_revision: String,
    record_pending: String,
    pending: String,
    mark_delivered: String,
    is_delivered: String,
    link: String,
    links: String,
}

impl Statements {
    fn new(schema: &str) -> Self {
        let s = format!("\"{schema}\"");
        Statements {
            ensure_item: format!(
                "INSERT INTO {s}.meerkat_compose_work_items (realm, namespace, item_id, revision, evidence)
                 VALUES ($1, $2, $3, 0, '[]'::jsonb) ON CONFLICT DO NOTHING"
            ),
            get_item: format!(
                "SELECT revision, evidence::text FROM {s}.meerkat_compose_work_items
                 WHERE realm = $1 AND namespace = $2 AND item_id = $3"
            ),
            add_evidence: format!(
                "UPDATE {s}.meerkat_compose_work_items
                 SET revision = revision + 1, evidence = evidence || jsonb_build_array($5::text::jsonb)
                 WHERE realm = $1 AND namespace = $2 AND item_id = $3 AND revision = $4
                 RETURNING revision, evidence::text"
            ),
            item_revision: format!(
                "SELECT revision FROM {s}.meerkat_compose_work_items
                 WHERE realm = $1 AND namespace = $2 AND item_id = $3"
            ),
            record_pending: format!(
                "INSERT INTO {s}.meerkat_compose_job_deliveries (realm, job_id, delivered)
                 VALUES ($1, $2, false) ON CONFLICT DO NOTHING"
            ),
            pending: format!(
                "SELECT job_id FROM {s}.meerkat_compose_job_deliveries
                 WHERE realm = $1 AND NOT delivered ORDER BY job_id LIMIT $2"
            ),
            mark_delivered: format!(
                "INSERT INTO {s}.meerkat_compose_job_deliveries (realm, job_id, delivered)
                 VALUES ($1, $2, true) ON CONFLICT (realm, job_id) DO UPDATE SET delivered = true"
            ),
            is_delivered: format!(
                "SELECT delivered FROM {s}.meerkat_compose_job_deliveries WHERE realm = $1 AND job_id = $2"
            ),
            link: format!(
                "INSERT INTO {s}.meerkat_compose_job_links (realm, job_id, namespace, item_id)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
            ),
            links: format!(
                "SELECT namespace, item_id FROM {s}.meerkat_compose_job_links
                 WHERE realm = $1 AND job_id = $2 ORDER BY namespace, item_id"
            ),
        }
    }
}

fn migration(schema: &str) -> Vec<String> {
    let s = format!("\"{schema}\"");
    vec![
        format!("CREATE SCHEMA IF NOT EXISTS {s}"),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.meerkat_compose_schema (
                domain text PRIMARY KEY, version integer NOT NULL)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.meerkat_compose_work_items (
                realm text NOT NULL, namespace text NOT NULL, item_id text NOT NULL,
                revision bigint NOT NULL, evidence jsonb NOT NULL,
                PRIMARY KEY (realm, namespace, item_id))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.meerkat_compose_job_deliveries (
                realm text NOT NULL, job_id text NOT NULL, delivered boolean NOT NULL,
                PRIMARY KEY (realm, job_id))"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS meerkat_compose_pending
                ON {s}.meerkat_compose_job_deliveries (realm, job_id) WHERE NOT delivered"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.meerkat_compose_job_links (
                realm text NOT NULL, job_id text NOT NULL, namespace text NOT NULL,
                item_id text NOT NULL, PRIMARY KEY (realm, job_id, namespace, item_id))"
        ),
        format!(
            "INSERT INTO {s}.meerkat_compose_schema (domain, version)
             VALUES ('meerkat_compose', 1) ON CONFLICT DO NOTHING"
        ),
    ]
}

/// The PostgreSQL compose store. Clones share one pool.
#[derive(Clone, Debug)]
pub struct PostgresComposeStore {
    pool: PgPool,
    sql: std::sync::Arc<Statements>,
    schema: String,
}

/// An sqlx failure: connection, pool and serialization troubles are transient.
fn fault(error: &sqlx::Error) -> (bool, String) {
    let transient = match error {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            Some("40001" | "40P01" | "57P01" | "57P03" | "53300")
        ),
        _ => false,
    };
    (transient, format!("postgres: {error}"))
}

fn job_fault(error: &sqlx::Error) -> DetachedJobError {
    let (transient, detail) = fault(error);
    DetachedJobError::store(transient, detail)
}

fn evidence_fault(error: &sqlx::Error) -> EvidenceError {
    let (transient, detail) = fault(error);
    EvidenceError::store(transient, detail)
}

fn revision_of(value: i64) -> Result<u64, EvidenceError> {
    u64::try_from(value).map_err(|_| EvidenceError::store(false, "corrupt stored revision"))
}

fn decode_evidence(text: &str) -> Result<Vec<WorkEvidenceRef>, EvidenceError> {
    serde_json::from_str(text)
        .map_err(|e| EvidenceError::store(false, format!("corrupt stored evidence: {e}")))
}

fn item_not_found(item: &WorkItemRef) -> EvidenceError {
    EvidenceError::NotFound {
        realm_id: item.realm_id.clone(),
        namespace: item.namespace.clone(),
        id: item.item_id.clone(),
    }
}

impl PostgresComposeStore {
    /// Connects with a Docket PostgreSQL URL (its `schema=` parameter names the schema,
    /// default `docket`) and migrates the compose tables.
    ///
    /// # Errors
    /// `InvalidInput` for a malformed URL; `Store` for a failure to connect or migrate, or a
    /// compose schema of another version.
    ///
    /// The driver settings are the run store's own for that URL (`docket_postgres::driver_options`,
    /// e.g. no statement cache behind a transaction pooler).
    pub async fn connect_url(url: &str) -> Result<Self, DetachedJobError> {
        let (connect, options) = docket_postgres::driver_options(url)
            .map_err(|e| DetachedJobError::InvalidInput(e.to_string()))?;
        Self::connect_with(connect, &options.schema).await
    }

    /// Connects with a plain driver URL to `schema` and migrates the compose tables.
    ///
    /// # Errors
    /// `InvalidInput` for an invalid URL or schema name; `Store` as [`Self::connect_url`].
    pub async fn connect(driver_url: &str, schema: &str) -> Result<Self, DetachedJobError> {
        let connect: PgConnectOptions = driver_url
            .parse()
            .map_err(|e: sqlx::Error| DetachedJobError::InvalidInput(e.to_string()))?;
        Self::connect_with(connect, schema).await
    }

    async fn connect_with(
        connect: PgConnectOptions,
        schema: &str,
    ) -> Result<Self, DetachedJobError> {
        docket_postgres::validate_schema_name(schema)
            .map_err(|e| DetachedJobError::InvalidInput(e.to_string()))?;
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .connect_with(connect)
            .await
            .map_err(|e| job_fault(&e))?;
        let mut tx = pool.begin().await.map_err(|e| job_fault(&e))?;
        // Serializes concurrent first opens of one schema (CREATE … IF NOT EXISTS alone can
        // still collide on the catalog).
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(format!("meerkat_compose:{schema}"))
            .execute(&mut *tx)
            .await
            .map_err(|e| job_fault(&e))?;
        for statement in migration(schema) {
            sqlx::query(&statement)
                .execute(&mut *tx)
                .await
                .map_err(|e| job_fault(&e))?;
        }
        let version: i32 = sqlx::query_scalar(&format!(
            "SELECT version FROM \"{schema}\".meerkat_compose_schema WHERE domain = 'meerkat_compose'"
        ))
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| job_fault(&e))?;
        if version != COMPOSE_SCHEMA_VERSION {
            return Err(DetachedJobError::store(
                false,
                format!("compose schema version {version} is not {COMPOSE_SCHEMA_VERSION}"),
            ));
        }
        tx.commit().await.map_err(|e| job_fault(&e))?;
        Ok(PostgresComposeStore {
            pool,
            sql: std::sync::Arc::new(Statements::new(schema)),
            schema: schema.to_owned(),
        })
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Closes the pool (tests close it before dropping their schema).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait]
impl EvidenceGraph for PostgresComposeStore {
    async fn ensure_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        check_scope_component("work item realm", &item.realm_id)
            .map_err(EvidenceError::InvalidInput)?;
        sqlx::query(&self.sql.ensure_item)
            .bind(&item.realm_id)
            .bind(item.namespace.as_str())
            .bind(item.item_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| evidence_fault(&e))?;
        self.get_item(item).await
    }

    async fn get_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        let row = sqlx::query(&self.sql.get_item)
            .bind(&item.realm_id)
            .bind(item.namespace.as_str())
            .bind(item.item_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| evidence_fault(&e))?
            .ok_or_else(|| item_not_found(item))?;
        let revision: i64 = row.try_get(0).map_err(|e| evidence_fault(&e))?;
        let evidence: String = row.try_get(1).map_err(|e| evidence_fault(&e))?;
        Ok(EvidenceItem {
            item: item.clone(),
            revision: revision_of(revision)?,
            evidence: decode_evidence(&evidence)?,
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
        let expected = i64::try_from(expected_revision)
            .map_err(|_| EvidenceError::InvalidInput("revision out of range".into()))?;
        let row = sqlx::query(&self.sql.add_evidence)
            .bind(&item.realm_id)
            .bind(item.namespace.as_str())
            .bind(item.item_id.as_str())
            .bind(expected)
            .bind(encoded)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| evidence_fault(&e))?;
        if let Some(row) = row {
            let revision: i64 = row.try_get(0).map_err(|e| evidence_fault(&e))?;
            let list: String = row.try_get(1).map_err(|e| evidence_fault(&e))?;
            return Ok(EvidenceItem {
                item: item.clone(),
                revision: revision_of(revision)?,
                evidence: decode_evidence(&list)?,
            });
        }
        // Nothing matched: tell an absent item from a moved revision.
        let actual: Option<i64> = sqlx::query_scalar(&self.sql.item_revision)
            .bind(&item.realm_id)
            .bind(item.namespace.as_str())
            .bind(item.item_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| evidence_fault(&e))?;
        match actual {
            None => Err(item_not_found(item)),
            Some(actual) => Err(EvidenceError::StaleRevision {
                id: item.item_id.clone(),
                expected: expected_revision,
                actual: revision_of(actual)?,
            }),
        }
    }
}

#[async_trait]
impl DeliveryLedger for PostgresComposeStore {
    async fn record_pending(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        sqlx::query(&self.sql.record_pending)
            .bind(job.realm_id())
            .bind(job.job_id().as_str())
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| job_fault(&e))
    }

    async fn pending(&self, realm: &str, limit: u32) -> Result<Vec<JobId>, DetachedJobError> {
        let ids: Vec<String> = sqlx::query_scalar(&self.sql.pending)
            .bind(realm)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
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
        sqlx::query(&self.sql.mark_delivered)
            .bind(job.realm_id())
            .bind(job.job_id().as_str())
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| job_fault(&e))
    }

    async fn is_delivered(&self, job: &JobReference) -> Result<bool, DetachedJobError> {
        let found: Option<bool> = sqlx::query_scalar(&self.sql.is_delivered)
            .bind(job.realm_id())
            .bind(job.job_id().as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| job_fault(&e))?;
        Ok(found == Some(true))
    }

    async fn link(&self, job: &JobReference, item: &WorkItemRef) -> Result<(), DetachedJobError> {
        sqlx::query(&self.sql.link)
            .bind(job.realm_id())
            .bind(job.job_id().as_str())
            .bind(item.namespace.as_str())
            .bind(item.item_id.as_str())
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| job_fault(&e))
    }

    async fn links(&self, job: &JobReference) -> Result<Vec<WorkItemRef>, DetachedJobError> {
        let rows = sqlx::query(&self.sql.links)
            .bind(job.realm_id())
            .bind(job.job_id().as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| job_fault(&e))?;
        rows.iter()
            .map(|row| {
                let namespace: String = row.try_get(0).map_err(|e| job_fault(&e))?;
                let item: String = row.try_get(1).map_err(|e| job_fault(&e))?;
                to_item_ref(job.realm_id(), &namespace, &item)
            })
            .collect()
    }
}
