//! One retention pass (`docs/storage-contract.md`, “Retention”) in one transaction, serialized per
//! schema by a transaction-scoped advisory lock (never a session lock, so transaction poolers
//! work).

use docket_core::store::rules::queries;
use docket_core::store::{PrunePolicy, PruneReport, StoreError, KEEP_GRAPH_VERSIONS};
use sqlx::{Acquire, Row};

use crate::error::{self, FOREIGN_KEY_VIOLATION};
use crate::store::{finish, Finish, PostgresStore};

fn cutoff(policy: &PrunePolicy, retention_ms: u64) -> i64 {
    let retention = i64::try_from(retention_ms).unwrap_or(i64::MAX);
    policy.now.add_millis(-retention).as_micros()
}

impl PostgresStore {
    pub(crate) async fn do_prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        queries::validate_prune_policy(policy)?;
        let mut conn = self.conn().await?;
        let mut tx = self.begin(&mut conn).await?;
        let outcome = self.prune_in(&mut tx, policy).await;
        finish(tx, outcome).await
    }

    /// The body of a pass inside its transaction: take the pruner's lock (or report the pass
    /// skipped), then delete events, terminal runs and graph versions.
    async fn prune_in(
        &self,
        tx: &mut sqlx::PgConnection,
        policy: &PrunePolicy,
    ) -> Result<Finish<PruneReport>, StoreError> {
        let batch = i64::from(policy.batch_size.get());
        let locked: bool = self
            .q(&self.sql().prune_lock)
            .bind(self.schema())
            .fetch_one(&mut *tx)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(error::safe)?;
        if !locked {
            return Ok(Finish::Rollback(PruneReport {
                skipped_locked: true,
                ..PruneReport::default()
            }));
        }
        let events = self
            .q(&self.sql().prune_events)
            .bind(cutoff(policy, policy.event_retention_ms))
            .bind(batch)
            .execute(&mut *tx)
            .await
            .map_err(error::safe)?
            .rows_affected();
        let row = self
            .q(&self.sql().prune_runs)
            .bind(cutoff(policy, policy.run_retention_ms))
            .bind(batch)
            .fetch_one(&mut *tx)
            .await
            .map_err(error::safe)?;
        let runs: i64 = row.try_get("runs").map_err(error::safe)?;
        let cascaded: i64 = row.try_get("cascaded").map_err(error::safe)?;
        // A run inserted after our snapshot may reference a chosen version; the foreign key
        // of its listing row then refuses the delete. Keep the pass's other deletions and try
        // graphs next time.
        let graphs = {
            let mut savepoint = tx.begin().await.map_err(error::safe)?;
            let keep = i64::try_from(KEEP_GRAPH_VERSIONS).unwrap_or(i64::MAX);
            match self
                .q(&self.sql().prune_graphs)
                .bind(keep)
                .bind(batch)
                .execute(&mut savepoint)
                .await
            {
                Ok(done) => {
                    savepoint.commit().await.map_err(error::safe)?;
                    done.rows_affected()
                }
                Err(e) if error::sqlstate(&e).as_deref() == Some(FOREIGN_KEY_VIOLATION) => {
                    savepoint.rollback().await.map_err(error::safe)?;
                    0
                }
                Err(e) => return Err(error::safe(e)),
            }
        };
        Ok(Finish::Commit(PruneReport {
            events_deleted: events,
            runs_deleted: u64::try_from(runs).unwrap_or(0),
            cascade_events_deleted: u64::try_from(cascaded).unwrap_or(0),
            graphs_deleted: graphs,
            skipped_locked: false,
        }))
    }
}
