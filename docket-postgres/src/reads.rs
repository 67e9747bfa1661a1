//! Reads: runs, run pages, events and event pages. Scope filters live in the SQL, so a row of
//! another tenant is never fetched, let alone decoded.

use docket_core::model::{Event, EventPage, EventQuery, RunId, RunInfo, RunPage, RunQuery, Scope};
use docket_core::store::rules::queries;
use docket_core::store::StoreError;
use sqlx::Row;

use crate::codec::{decode_event_row, decode_run_row, decode_summary, StoredRun};
use crate::error;
use crate::sql::SUMMARY_COLUMNS;
use crate::store::{scope_binds, PostgresStore};

impl PostgresStore {
    /// The scoped run row, decoded and checked, or `None` when not visible.
    pub(crate) async fn read_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<StoredRun>, StoreError> {
        let (system, scope_key) = scope_binds(scope);
        let mut conn = self.conn().await?;
        let row = self
            .q(&self.sql().select_run)
            .bind(run_id.as_str())
            .bind(system)
            .bind(scope_key)
            .fetch_optional(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        row.as_ref().map(decode_run_row).transpose()
    }

    pub(crate) async fn do_inspect(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<RunInfo, StoreError> {
        let stored = self
            .read_run(scope, run_id)
            .await?
            .ok_or(StoreError::NotFound)?;
        Ok(RunInfo {
            run: stored.run,
            owner: stored.owner,
            wake_at: stored.ops.wake_at,
            claimed_at: stored.ops.claimed_at,
            claim_attempts: stored.ops.claim_attempts,
            claim_abandons: stored.ops.claim_abandons,
            poison: stored.ops.poison,
            admitted_at: stored.ops.admitted_at,
        })
    }

    pub(crate) async fn do_list_runs(
        &self,
        scope: &Scope,
        query: &RunQuery,
    ) -> Result<RunPage, StoreError> {
        queries::validate_run_query(query)?;
        // The filters a query uses, in placeholder order; the statement text is built first
        // and the values bound after it, in the same order.
        let owner = scope.as_owner().map(|o| o.scope_key().to_owned());
        let statuses: Option<Vec<String>> = query
            .statuses
            .as_ref()
            .map(|s| s.iter().map(|s| s.as_str().to_owned()).collect());
        let mut sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM {} WHERE true",
            self.sql().listed_runs
        );
        let mut placeholders = 0;
        let mut next = || {
            placeholders += 1;
            format!("${placeholders}")
        };
        if owner.is_some() {
            sql.push_str(&format!(" AND l.scope_key = {}", next()));
        }
        if query.before.is_some() {
            sql.push_str(&format!(
                " AND (l.started_at, l.run_id) < ({}, {}::text COLLATE \"C\")",
                next(),
                next()
            ));
        }
        if query.graph_id.is_some() {
            sql.push_str(&format!(" AND l.graph_id = {}", next()));
        }
        if query.graph_hash.is_some() {
            sql.push_str(&format!(" AND l.graph_hash = {}", next()));
        }
        if statuses.is_some() {
            sql.push_str(&format!(" AND r.status = ANY({})", next()));
        }
        sql.push_str(&format!(
            " ORDER BY l.started_at DESC, l.run_id DESC LIMIT {}",
            next()
        ));
        let mut statement = self.q(&sql);
        if let Some(owner) = owner {
            statement = statement.bind(owner);
        }
        if let Some(cursor) = &query.before {
            statement = statement
                .bind(cursor.started_at.as_micros())
                .bind(cursor.run_id.as_str());
        }
        if let Some(graph_id) = &query.graph_id {
            statement = statement.bind(graph_id.as_str());
        }
        if let Some(graph_hash) = &query.graph_hash {
            statement = statement.bind(graph_hash.as_str());
        }
        if let Some(statuses) = statuses {
            statement = statement.bind(statuses);
        }
        let statement = statement.bind(i64::from(query.limit) + 1);
        let rows = {
            let mut conn = self.conn().await?;
            let rows = statement.fetch_all(&mut conn).await.map_err(error::safe)?;
            conn.reuse();
            rows
        };
        let runs = rows
            .iter()
            .map(decode_summary)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(queries::run_page(runs, query))
    }

    pub(crate) async fn do_fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        let Ok(seq) = i64::try_from(seq) else {
            return Err(StoreError::NotFound);
        };
        let (system, scope_key) = scope_binds(scope);
        let mut conn = self.conn().await?;
        let row = self
            .q(&self.sql().fetch_event)
            .bind(run_id.as_str())
            .bind(seq)
            .bind(system)
            .bind(scope_key)
            .fetch_optional(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        decode_event_row(&row.ok_or(StoreError::NotFound)?)?.ok_or(StoreError::NotFound)
    }

    pub(crate) async fn do_fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        let (system, scope_key) = scope_binds(scope);
        let mut conn = self.conn().await?;
        let row = self
            .q(&self.sql().fetch_latest_event)
            .bind(run_id.as_str())
            .bind(system)
            .bind(scope_key)
            .fetch_optional(&mut conn)
            .await
            .map_err(error::safe)?;
        conn.reuse();
        decode_event_row(&row.ok_or(StoreError::NotFound)?)
    }

    pub(crate) async fn do_list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        queries::validate_event_query(query)?;
        let after = i64::try_from(query.after_seq).unwrap_or(i64::MAX);
        let (system, scope_key) = scope_binds(scope);
        let rows = {
            let mut conn = self.conn().await?;
            let rows = self
                .q(&self.sql().list_events)
                .bind(run_id.as_str())
                .bind(after)
                .bind(i64::from(query.limit))
                .bind(system)
                .bind(scope_key)
                .fetch_all(&mut conn)
                .await
                .map_err(error::safe)?;
            conn.reuse();
            rows
        };
        let Some(first) = rows.first() else {
            return Err(StoreError::NotFound);
        };
        let what = || format!("run row {run_id}");
        let bound = |column: &str| -> Result<Option<u64>, StoreError> {
            let value: Option<i64> = first
                .try_get(column)
                .map_err(|e| StoreError::corrupt(what(), e))?;
            value
                .map(|v| u64::try_from(v).map_err(|e| StoreError::corrupt(what(), e)))
                .transpose()
        };
        let latest_seq = bound("latest_seq")?.unwrap_or(0);
        let oldest = bound("oldest")?;
        let latest = bound("latest")?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            if let Some(event) = decode_event_row(row)? {
                events.push(event);
            }
        }
        Ok(queries::event_page(
            events, query, oldest, latest, latest_seq,
        ))
    }
}
