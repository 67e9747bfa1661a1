//! One retention pass (`docs/storage-contract.md`, “Retention”), run on the writer connection in
//! one `BEGIN IMMEDIATE` transaction. The writer thread runs one job at a time, so passes of this
//! process never overlap, and the database write lock serializes them with other processes.

use rusqlite::{params, Connection};

use docket_core::model::Timestamp;
use docket_core::store::{PrunePolicy, PruneReport, StoreError, KEEP_GRAPH_VERSIONS};

use crate::error::SqlResult;

fn cutoff(now: Timestamp, retention_ms: u64) -> Timestamp {
    now.add_millis(-i64::try_from(retention_ms).unwrap_or(i64::MAX))
}

/// Deletes, oldest first and at most `batch_size` of each: events persisted before the event
/// cutoff (any run status); terminal runs last updated before the run cutoff (their events
/// cascade); graph versions referenced by no run and ranked below the newest
/// [`KEEP_GRAPH_VERSIONS`] of their `(owner, graph_id)`. Cutoffs are strict.
pub(crate) fn prune(conn: &Connection, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
    let batch = i64::from(policy.batch_size.get());
    let mut report = PruneReport::default();

    let events_deleted = conn
        .prepare_cached(
            "DELETE FROM docket_events WHERE rowid IN ( \
               SELECT rowid FROM docket_events WHERE inserted_at < ?1 \
               ORDER BY inserted_at, run_id, seq LIMIT ?2)",
        )
        .sql()?
        .execute(params![
            cutoff(policy.now, policy.event_retention_ms).as_micros(),
            batch
        ])
        .sql()?;
    report.events_deleted = events_deleted as u64;

    let runs: Vec<String> = {
        let mut stmt = conn
            .prepare_cached(
                "SELECT run_id FROM docket_runs \
                 WHERE status IN ('done', 'failed', 'cancelled') AND updated_at < ?1 \
                 ORDER BY updated_at, run_id LIMIT ?2",
            )
            .sql()?;
        let rows = stmt
            .query_map(
                params![
                    cutoff(policy.now, policy.run_retention_ms).as_micros(),
                    batch
                ],
                |row| row.get::<_, String>(0),
            )
            .sql()?;
        rows.collect::<Result<_, _>>().sql()?
    };
    for run_id in &runs {
        let cascaded: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM docket_events WHERE run_id = ?1")
            .sql()?
            .query_row([run_id], |row| row.get(0))
            .sql()?;
        conn.prepare_cached("DELETE FROM docket_runs WHERE run_id = ?1")
            .sql()?
            .execute([run_id])
            .sql()?;
        report.cascade_events_deleted += u64::try_from(cascaded).unwrap_or(0);
        report.runs_deleted += 1;
    }

    let graphs_deleted = conn
        .prepare_cached(
            "DELETE FROM docket_graph_versions WHERE rowid IN ( \
               SELECT ranked.rowid FROM ( \
                 SELECT rowid, scope_key, graph_id, graph_hash, published_at, \
                        ROW_NUMBER() OVER ( \
                          PARTITION BY scope_key, graph_id \
                          ORDER BY published_at DESC, graph_hash DESC) AS rank \
                 FROM docket_graph_versions) AS ranked \
               WHERE ranked.rank > ?1 \
                 AND NOT EXISTS ( \
                   SELECT 1 FROM docket_runs r \
                   WHERE r.scope_key = ranked.scope_key AND r.graph_id = ranked.graph_id \
                     AND r.graph_hash = ranked.graph_hash) \
               ORDER BY ranked.published_at, ranked.scope_key, ranked.graph_id, \
                        ranked.graph_hash \
               LIMIT ?2)",
        )
        .sql()?
        .execute(params![KEEP_GRAPH_VERSIONS as i64, batch])
        .sql()?;
    report.graphs_deleted = graphs_deleted as u64;
    Ok(report)
}
