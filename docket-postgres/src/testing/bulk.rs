//! Bulk fills for plan and load checks: hundreds of thousands of valid run rows in one
//! `INSERT … SELECT … FROM generate_series`, without going through `initialize` one run at a
//! time.

use docket_core::model::{GraphRef, OwnerScope, Run, RunId, RunStatus, Timestamp, ValueMap};
use docket_core::store::StoreError;

use crate::error;
use crate::sql::{LISTED_COLUMNS, LIST_INSERTED};
use crate::store::PostgresStore;

/// How many runs of each kind [`bulk_insert_runs`] writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkRuns {
    /// Running, unclaimed runs with a wake time; their wakes are spread evenly over
    /// `now ± pending` milliseconds, so about half are due.
    pub pending: u64,
    /// Running runs held by a claim taken `1..=claimed` seconds before `now` (the older ones
    /// are expired under a short orphan TTL).
    pub claimed: u64,
    /// Runs that finished (`done`) at `now`.
    pub finished: u64,
}

impl BulkRuns {
    /// Every run this fill writes.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.pending + self.claimed + self.finished
    }
}

/// The placeholder run id of the document templates (replaced per row in SQL).
const PLACEHOLDER: &str = "BULKRUNIDPLACEHOLDER";

/// A valid stored document for a bulk run with the placeholder id.
fn template(graph: &GraphRef, status: RunStatus, now: Timestamp) -> Result<String, StoreError> {
    let id = RunId::new(PLACEHOLDER).map_err(|e| StoreError::invalid_argument(e.to_string()))?;
    let mut run = Run::new_created(
        id,
        graph.graph_id.clone(),
        graph.graph_hash.clone(),
        ValueMap::new(),
        ValueMap::new(),
    );
    run.status = status;
    run.started_at = Some(now);
    run.updated_at = Some(now);
    run.checkpoint_seq = 1;
    if status.is_terminal() {
        run.finished_at = Some(now);
        run.output = Some(ValueMap::new());
        run.checkpoint_seq = 2;
    }
    serde_json::to_string(&run)
        .map_err(|e| StoreError::invalid_argument(format!("template document: {e}")))
}

/// Inserts `runs` of `owner`'s `graph` (which must be saved) in one statement, with
/// documents that decode, columns that agree with them and every row invariant satisfied.
/// Run ids are `bulk0000001`, `bulk0000002`, …: pending runs first, then claimed, then
/// finished; each with its listing row, as a start writes it. Analyzes the tables afterwards,
/// so plans reflect the fill. Returns the number of runs inserted.
///
/// # Errors
/// Driver errors (a taken run id included).
pub async fn bulk_insert_runs(
    store: &PostgresStore,
    owner: &OwnerScope,
    graph: &GraphRef,
    runs: BulkRuns,
    now: Timestamp,
) -> Result<u64, StoreError> {
    let count =
        |n: u64| i64::try_from(n).map_err(|_| StoreError::invalid_argument("too many bulk runs"));
    let (pending, claimed, total) = (
        count(runs.pending)?,
        count(runs.claimed)?,
        count(runs.total())?,
    );
    let sql = format!(
        "WITH inserted AS (
         INSERT INTO {s}.runs (run_id, tenant_id, graph_id, graph_hash, status, step,
             checkpoint_seq, event_seq, document, latest_checkpoint_type, claim_token,
             claimed_at, claim_started_at, wake_at, claim_attempts, started_at, updated_at,
             finished_at, inserted_at)
         SELECT id, $1, $2, $3, CASE WHEN finished THEN 'done' ELSE 'running' END, 0,
                CASE WHEN finished THEN 2 ELSE 1 END, 0,
                convert_to(replace(CASE WHEN finished THEN $4 ELSE $5 END, '{PLACEHOLDER}', id),
                           'UTF8'),
                CASE WHEN finished THEN 'run_completed' ELSE 'run_initialized' END,
                CASE WHEN claimed THEN gen_random_uuid() END,
                CASE WHEN claimed THEN $6 - (i - $7) * 1000000 END,
                CASE WHEN claimed THEN $6 - (i - $7) * 1000000 END,
                CASE WHEN i <= $7 THEN $6 + (2 * i - $7) * 1000 END,
                CASE WHEN claimed THEN 1 ELSE 0 END,
                $6, $6, CASE WHEN finished THEN $6 END, $6
         FROM (SELECT i, 'bulk' || lpad(i::text, 7, '0') AS id,
                      i > $7 AND i <= $7 + $8 AS claimed,
                      i > $7 + $8 AS finished
               FROM generate_series(1, $9::bigint) AS i) AS g
         RETURNING {LISTED_COLUMNS})
         {list}",
        s = store.schema(),
        list = LIST_INSERTED.replace("{s}", store.schema())
    );
    let mut conn = store.conn().await?;
    let done = store
        .q(&sql)
        .bind(owner.tenant_id().map(|t| t.as_str()))
        .bind(graph.graph_id.as_str())
        .bind(graph.graph_hash.as_str())
        .bind(template(graph, RunStatus::Done, now)?)
        .bind(template(graph, RunStatus::Running, now)?)
        .bind(now.as_micros())
        .bind(pending)
        .bind(claimed)
        .bind(total)
        .execute(&mut conn)
        .await
        .map_err(error::sent)?;
    sqlx::raw_sql(&format!(
        "ANALYZE {s}.runs; ANALYZE {s}.run_listing",
        s = store.schema()
    ))
    .execute(&mut *conn)
    .await
    .map_err(error::safe)?;
    Ok(done.rows_affected())
}
