//! SQLite evidence graph and delivery ledger: tables prefixed `meerkat_compose_`, in the run
//! store's database file (or any other), with their own schema version row.
//!
//! Open the Docket store on a fresh file *before* this one, so that the file is stamped as a
//! Docket database first. Every write is one `BEGIN IMMEDIATE` transaction on this store's
//! own connection (SQLite serializes it with the run store's writer; both wait on a busy
//! database instead of failing).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use crate::ports::error::{DetachedJobError, EvidenceError};
use crate::ports::evidence::{EvidenceGraph, EvidenceItem, WorkEvidenceRef};
use crate::ports::ids::{check_scope_component, JobId, JobReference, WorkItemRef};
use crate::ports::ledger::DeliveryLedger;

use super::memory::to_item_ref;

/// The schema version this build writes and reads.
pub const COMPOSE_SCHEMA_VERSION: i64 = 1;

const MIGRATION_V1: &str = "
CREATE TABLE IF NOT EXISTS meerkat_compose_schema (
    domain TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meerkat_compose_work_items (
    realm TEXT NOT NULL,
    namespace TEXT NOT NULL,
    item_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    evidence TEXT NOT NULL,
    PRIMARY KEY (realm, namespace, item_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meerkat_compose_job_deliveries (
    realm TEXT NOT NULL,
    job_id TEXT NOT NULL,
    delivered INTEGER NOT NULL,
    PRIMARY KEY (realm, job_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS meerkat_compose_pending
    ON meerkat_compose_job_deliveries (realm, delivered, job_id);
CREATE TABLE IF NOT EXISTS meerkat_compose_job_links (
    realm TEXT NOT NULL,
    job_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    item_id TEXT NOT NULL,
    PRIMARY KEY (realm, job_id, namespace, item_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO meerkat_compose_schema (domain, version) VALUES ('meerkat_compose', 1);
";

/// The SQLite compose store. Clones share one connection.
#[derive(Clone, Debug)]
pub struct SqliteComposeStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

/// A rusqlite failure: busy or locked databases are transient, the rest permanent.
fn fault(error: &rusqlite::Error) -> (bool, String) {
    let transient = matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    (transient, format!("sqlite: {error}"))
}

fn job_fault(error: &rusqlite::Error) -> DetachedJobError {
    let (transient, detail) = fault(error);
    DetachedJobError::store(transient, detail)
}

fn evidence_fault(error: &rusqlite::Error) -> EvidenceError {
    let (transient, detail) = fault(error);
    EvidenceError::store(transient, detail)
}

impl SqliteComposeStore {
    /// Opens (creating if needed) the compose tables in the database at `path`.
    ///
    /// # Errors
    /// `Store` when the file cannot be opened, or holds a compose schema of another version.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, DetachedJobError> {
        let path = path.as_ref().to_owned();
        let opened = path.clone();
        let conn = tokio::task::spawn_blocking(move || -> Result<Connection, DetachedJobError> {
            let mut conn = Connection::open(&opened).map_err(|e| job_fault(&e))?;
            conn.busy_timeout(Duration::from_secs(10))
                .map_err(|e| job_fault(&e))?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| job_fault(&e))?;
            tx.execute_batch(MIGRATION_V1).map_err(|e| job_fault(&e))?;
            let version: i64 = tx
                .query_row(
                    "SELECT version FROM meerkat_compose_schema WHERE domain = 'meerkat_compose'",
                    [],
                    |row| row.get(0),
                )
                .map_err(|e| job_fault(&e))?;
            if version != COMPOSE_SCHEMA_VERSION {
                return Err(DetachedJobError::store(
                    false,
                    format!("compose schema version {version} is not {COMPOSE_SCHEMA_VERSION}"),
                ));
            }
            tx.commit().map_err(|e| job_fault(&e))?;
            Ok(conn)
        })
        .await
        .map_err(|e| DetachedJobError::store(false, format!("sqlite open task: {e}")))??;
        Ok(SqliteComposeStore {
            path,
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection in the blocking pool.
    async fn with<T, E>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        join_error: impl FnOnce(String) -> E,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        match tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut guard)
        })
        .await
        {
            Ok(result) => result,
            Err(e) => Err(join_error(format!("sqlite task: {e}"))),
        }
    }
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

fn read_item(
    conn: &Connection,
    item: &WorkItemRef,
) -> Result<Option<(u64, Vec<WorkEvidenceRef>)>, EvidenceError> {
    let row: Option<(i64, String)> = conn
        .query_row(
            "SELECT revision, evidence FROM meerkat_compose_work_items
             WHERE realm = ?1 AND namespace = ?2 AND item_id = ?3",
            params![
                item.realm_id,
                item.namespace.as_str(),
                item.item_id.as_str()
            ],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(|e| evidence_fault(&e))?;
    row.map(|(revision, evidence)| {
        let revision = u64::try_from(revision)
            .map_err(|_| EvidenceError::store(false, "corrupt stored revision"))?;
        Ok((revision, decode_evidence(&evidence)?))
    })
    .transpose()
}

#[async_trait]
impl EvidenceGraph for SqliteComposeStore {
    async fn ensure_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        check_scope_component("work item realm", &item.realm_id)
            .map_err(EvidenceError::InvalidInput)?;
        let item = item.clone();
        self.with(
            move |conn| {
                conn.execute(
                    "INSERT OR IGNORE INTO meerkat_compose_work_items
                     (realm, namespace, item_id, revision, evidence) VALUES (?1, ?2, ?3, 0, '[]')",
                    params![
                        item.realm_id,
                        item.namespace.as_str(),
                        item.item_id.as_str()
                    ],
                )
                .map_err(|e| evidence_fault(&e))?;
                let (revision, evidence) =
                    read_item(conn, &item)?.ok_or_else(|| item_not_found(&item))?;
                Ok(EvidenceItem {
                    item,
                    revision,
                    evidence,
                })
            },
            |e| EvidenceError::store(false, e),
        )
        .await
    }

    async fn get_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        let item = item.clone();
        self.with(
            move |conn| {
                let (revision, evidence) =
                    read_item(conn, &item)?.ok_or_else(|| item_not_found(&item))?;
                Ok(EvidenceItem {
                    item,
                    revision,
                    evidence,
                })
            },
            |e| EvidenceError::store(false, e),
        )
        .await
    }

    async fn add_evidence(
        &self,
        item: &WorkItemRef,
        expected_revision: u64,
        evidence: &WorkEvidenceRef,
    ) -> Result<EvidenceItem, EvidenceError> {
        evidence.check_generic()?;
        let item = item.clone();
        let evidence = evidence.clone();
        self.with(
            move |conn| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| evidence_fault(&e))?;
                let (revision, mut list) =
                    read_item(&tx, &item)?.ok_or_else(|| item_not_found(&item))?;
                if revision != expected_revision {
                    return Err(EvidenceError::StaleRevision {
                        id: item.item_id.clone(),
                        expected: expected_revision,
                        actual: revision,
                    });
                }
                list.push(evidence);
                let encoded = serde_json::to_string(&list)
                    .map_err(|e| EvidenceError::store(false, format!("encode evidence: {e}")))?;
                let next = revision + 1;
                tx.execute(
                    "UPDATE meerkat_compose_work_items SET revision = ?4, evidence = ?5
                     WHERE realm = ?1 AND namespace = ?2 AND item_id = ?3",
                    params![
                        item.realm_id,
                        item.namespace.as_str(),
                        item.item_id.as_str(),
                        i64::try_from(next)
                            .map_err(|_| EvidenceError::store(false, "revision overflow"))?,
                        encoded
                    ],
                )
                .map_err(|e| evidence_fault(&e))?;
                tx.commit().map_err(|e| evidence_fault(&e))?;
                Ok(EvidenceItem {
                    item,
                    revision: next,
                    evidence: list,
                })
            },
            |e| EvidenceError::store(false, e),
        )
        .await
    }
}

#[async_trait]
impl DeliveryLedger for SqliteComposeStore {
    async fn record_pending(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        let (realm, job_id) = (job.realm_id().to_owned(), job.job_id().to_string());
        self.with(
            move |conn| {
                conn.execute(
                    "INSERT OR IGNORE INTO meerkat_compose_job_deliveries (realm, job_id, delivered)
                     VALUES (?1, ?2, 0)",
                    params![realm, job_id],
                )
                .map(drop)
                .map_err(|e| job_fault(&e))
            },
            |e| DetachedJobError::store(false, e),
        )
        .await
    }

    async fn pending(&self, realm: &str, limit: u32) -> Result<Vec<JobId>, DetachedJobError> {
        let realm = realm.to_owned();
        self.with(
            move |conn| {
                let mut statement = conn
                    .prepare_cached(
                        "SELECT job_id FROM meerkat_compose_job_deliveries
                         WHERE realm = ?1 AND delivered = 0 ORDER BY job_id LIMIT ?2",
                    )
                    .map_err(|e| job_fault(&e))?;
                let rows = statement
                    .query_map(params![realm, i64::from(limit)], |row| {
                        row.get::<_, String>(0)
                    })
                    .map_err(|e| job_fault(&e))?;
                let mut out = Vec::new();
                for row in rows {
                    let id = row.map_err(|e| job_fault(&e))?;
                    out.push(JobId::new(id).map_err(|e| {
                        DetachedJobError::store(false, format!("stored job id: {e}"))
                    })?);
                }
                Ok(out)
            },
            |e| DetachedJobError::store(false, e),
        )
        .await
    }

    async fn mark_delivered(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        let (realm, job_id) = (job.realm_id().to_owned(), job.job_id().to_string());
        self.with(
            move |conn| {
                conn.execute(
                    "INSERT INTO meerkat_compose_job_deliveries (realm, job_id, delivered)
                     VALUES (?1, ?2, 1) ON CONFLICT (realm, job_id) DO UPDATE SET delivered = 1",
                    params![realm, job_id],
                )
                .map(drop)
                .map_err(|e| job_fault(&e))
            },
            |e| DetachedJobError::store(false, e),
        )
        .await
    }

    async fn is_delivered(&self, job: &JobReference) -> Result<bool, DetachedJobError> {
        let (realm, job_id) = (job.realm_id().to_owned(), job.job_id().to_string());
        self.with(
            move |conn| {
                conn.query_row(
                    "SELECT delivered FROM meerkat_compose_job_deliveries WHERE realm = ?1 AND job_id = ?2",
                    params![realm, job_id],
                    |row| row.get::<_, i64>(0),
                )
                .optional()
                .map(|found| found == Some(1))
                .map_err(|e| job_fault(&e))
            },
            |e| DetachedJobError::store(false, e),
        )
        .await
    }

    async fn link(&self, job: &JobReference, item: &WorkItemRef) -> Result<(), DetachedJobError> {
        let (realm, job_id) = (job.realm_id().to_owned(), job.job_id().to_string());
        let (namespace, item_id) = (item.namespace.to_string(), item.item_id.to_string());
        self.with(
            move |conn| {
                conn.execute(
                    "INSERT OR IGNORE INTO meerkat_compose_job_links (realm, job_id, namespace, item_id)
                     VALUES (?1, ?2, ?3, ?4)",
                    params![realm, job_id, namespace, item_id],
                )
                .map(drop)
                .map_err(|e| job_fault(&e))
            },
            |e| DetachedJobError::store(false, e),
        )
        .await
    }

    async fn links(&self, job: &JobReference) -> Result<Vec<WorkItemRef>, DetachedJobError> {
        let (realm, job_id) = (job.realm_id().to_owned(), job.job_id().to_string());
        self.with(
            move |conn| {
                let mut statement = conn
                    .prepare_cached(
                        "SELECT namespace, item_id FROM meerkat_compose_job_links
                         WHERE realm = ?1 AND job_id = ?2 ORDER BY namespace, item_id",
                    )
                    .map_err(|e| job_fault(&e))?;
                let rows = statement
                    .query_map(params![realm, job_id], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                    })
                    .map_err(|e| job_fault(&e))?;
                let mut out = Vec::new();
                for row in rows {
                    let (namespace, item) = row.map_err(|e| job_fault(&e))?;
                    out.push(to_item_ref(&realm, &namespace, &item)?);
                }
                Ok(out)
            },
            |e| DetachedJobError::store(false, e),
        )
        .await
    }
}
