//! [`RunStore`]: transitions, reads, claims, events and retention over the locked tables.

use docket_core::store::rules::transition::{Commit, Init};
use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use docket_core::model::{
    ClaimToken, Event, EventPage, EventQuery, GraphHash, GraphId, OwnerScope, Run, RunId, RunInfo,
    RunPage, RunQuery, RunSummary, Scope, Timestamp,
};
use docket_core::ops::OpsLifecycleRegistry;
use docket_core::store::rules::claim_pass::{claim_pass, ClaimRow};
use docket_core::store::rules::effects::{
    apply_abandon, apply_release, apply_retry_poisoned, validate_abandon_policy,
};
use docket_core::store::rules::queries::{
    event_page, run_page, validate_event_query, validate_prune_policy, validate_run_query,
};
use docket_core::store::{
    AbandonOutcome, AbandonPolicy, ClaimBatch, ClaimPolicy, ClaimedCommit, InitProposal,
    PrunePolicy, PruneReport, RunStore, StoreError, UnclaimedCommit, Wakeups, KEEP_GRAPH_VERSIONS,
};

use crate::codec::{decode_event, decode_run};
use crate::graphs::newest_first;
use crate::tables::{RunRow, Tables};
use crate::{transitions, MapStore};

fn summary(id: &RunId, row: &RunRow) -> RunSummary {
    let c = &row.columns;
    RunSummary {
        id: id.clone(),
        owner: row.owner.clone(),
        graph_id: c.graph_id.clone(),
        graph_hash: c.graph_hash.clone(),
        status: c.status,
        step: c.step,
        checkpoint_seq: c.checkpoint_seq,
        started_at: c.started_at,
        updated_at: c.updated_at,
        finished_at: c.finished_at,
    }
}

fn cutoff(now: Timestamp, retention_ms: u64) -> Timestamp {
    now.add_millis(-i64::try_from(retention_ms).unwrap_or(i64::MAX))
}

/// Selects and claims (or poisons) due runs, from columns and operational state only: the
/// shared claim rules decide, this store only feeds them its rows and writes back the result.
fn claim_due(tables: &mut Tables, policy: &ClaimPolicy) -> ClaimBatch {
    let rows: Vec<ClaimRow> = tables
        .runs
        .iter()
        .map(|(id, row)| ClaimRow {
            run_id: id.clone(),
            owner: row.owner.clone(),
            graph_id: row.columns.graph_id.clone(),
            graph_hash: row.columns.graph_hash.clone(),
            status: row.columns.status,
            checkpoint_seq: row.columns.checkpoint_seq,
            ops: row.ops.clone(),
        })
        .collect();
    let (batch, changed) = claim_pass(rows, policy);
    for row in changed {
        if let Some(stored) = tables.runs.get_mut(&row.run_id) {
            stored.ops = row.ops;
        }
    }
    batch
}

/// One retention pass: old events, then old terminal runs, then old unreferenced versions.
fn prune(tables: &mut Tables, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
    validate_prune_policy(policy)?;
    let batch = usize::try_from(policy.batch_size.get()).unwrap_or(usize::MAX);
    let mut report = PruneReport::default();

    let events_before = cutoff(policy.now, policy.event_retention_ms);
    let mut old: Vec<(Timestamp, RunId, u64)> = tables
        .events
        .iter()
        .flat_map(|(id, rows)| {
            rows.iter()
                .filter(|(_, row)| row.inserted_at < events_before)
                .map(|(seq, row)| (row.inserted_at, id.clone(), *seq))
        })
        .collect();
    old.sort();
    for (_, id, seq) in old.into_iter().take(batch) {
        if let Some(rows) = tables.events.get_mut(&id) {
            rows.remove(&seq);
            if rows.is_empty() {
                tables.events.remove(&id);
            }
        }
        report.events_deleted += 1;
    }

    let runs_before = cutoff(policy.now, policy.run_retention_ms);
    let mut finished: Vec<(Timestamp, RunId)> = tables
        .runs
        .iter()
        .filter(|(_, row)| row.columns.status.is_terminal() && row.columns.updated_at < runs_before)
        .map(|(id, row)| (row.columns.updated_at, id.clone()))
        .collect();
    finished.sort();
    for (_, id) in finished.into_iter().take(batch) {
        tables.runs.remove(&id);
        let cascade = tables
            .events
            .remove(&id)
            .map_or(0, |rows| rows.len() as u64);
        report.cascade_events_deleted += cascade;
        report.runs_deleted += 1;
    }

    let referenced: BTreeSet<(OwnerScope, GraphId, GraphHash)> = tables
        .runs
        .values()
        .map(|row| {
            let c = &row.columns;
            (row.owner.clone(), c.graph_id.clone(), c.graph_hash.clone())
        })
        .collect();
    let graph_ids: BTreeMap<(OwnerScope, GraphId), ()> = tables
        .graphs
        .keys()
        .map(|(owner, id, _)| ((owner.clone(), id.clone()), ()))
        .collect();
    let mut unreferenced = Vec::new();
    for (owner, id) in graph_ids.into_keys() {
        for version in newest_first(tables, &owner, &id)
            .into_iter()
            .skip(KEEP_GRAPH_VERSIONS)
        {
            let key = (owner.clone(), id.clone(), version.graph_ref.graph_hash);
            if !referenced.contains(&key) {
                unreferenced.push((version.published_at, key));
            }
        }
    }
    unreferenced.sort();
    for (_, key) in unreferenced.into_iter().take(batch) {
        tables.graphs.remove(&key);
        report.graphs_deleted += 1;
    }
    Ok(report)
}

#[async_trait]
impl RunStore for MapStore {
    async fn initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let init = Init::new(owner, proposal, &events)?;
        transitions::initialize(&mut *self.lock()?, owner, init)
    }

    async fn commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::claimed(proposal, &events)?;
        transitions::commit(&mut *self.lock()?, scope, commit)
    }

    async fn commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::unclaimed(expected_seq, proposal, &events)?;
        transitions::commit(&mut *self.lock()?, scope, commit)
    }

    async fn fetch_run(&self, scope: &Scope, run_id: &RunId) -> Result<Run, StoreError> {
        let tables = self.lock()?;
        decode_run(run_id, tables.visible(scope, run_id)?)
    }

    async fn inspect_run(&self, scope: &Scope, run_id: &RunId) -> Result<RunInfo, StoreError> {
        let tables = self.lock()?;
        let row = tables.visible(scope, run_id)?;
        Ok(RunInfo {
            run: decode_run(run_id, row)?,
            owner: row.owner.clone(),
            wake_at: row.ops.wake_at,
            claimed_at: row.ops.claimed_at,
            claim_attempts: row.ops.claim_attempts,
            claim_abandons: row.ops.claim_abandons,
            poison: row.ops.poison,
        })
    }

    async fn list_runs(&self, scope: &Scope, query: &RunQuery) -> Result<RunPage, StoreError> {
        validate_run_query(query)?;
        let tables = self.lock()?;
        let mut rows: Vec<RunSummary> = tables
            .runs
            .iter()
            .filter(|(id, row)| {
                let c = &row.columns;
                scope.admits(&row.owner)
                    && query.graph_id.as_ref().is_none_or(|g| g == &c.graph_id)
                    && query.graph_hash.as_ref().is_none_or(|h| h == &c.graph_hash)
                    && query
                        .statuses
                        .as_ref()
                        .is_none_or(|s| s.contains(&c.status))
                    && query.before.as_ref().is_none_or(|cursor| {
                        (c.started_at, *id) < (cursor.started_at, &cursor.run_id)
                    })
            })
            .map(|(id, row)| summary(id, row))
            .collect();
        rows.sort_by(|a, b| (b.started_at, &b.id).cmp(&(a.started_at, &a.id)));
        rows.truncate(query.limit as usize + 1);
        Ok(run_page(rows, query))
    }

    async fn claim_due(&self, policy: &ClaimPolicy) -> Result<ClaimBatch, StoreError> {
        Ok(claim_due(&mut *self.lock()?, policy))
    }

    async fn release_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if let Some(row) = self.lock()?.runs.get_mut(run_id) {
            apply_release(&mut row.ops, token, now);
        }
        Ok(())
    }

    async fn abandon_claim(
        &self,
        run_id: &RunId,
        token: &ClaimToken,
        policy: &AbandonPolicy,
    ) -> Result<AbandonOutcome, StoreError> {
        validate_abandon_policy(policy)?;
        let mut tables = self.lock()?;
        Ok(match tables.runs.get_mut(run_id) {
            Some(row) => apply_abandon(&mut row.ops, row.columns.checkpoint_seq, token, policy),
            None => AbandonOutcome::Stale,
        })
    }

    async fn retry_poisoned_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
        now: Timestamp,
    ) -> Result<Run, StoreError> {
        let mut tables = self.lock()?;
        let row = tables.visible(scope, run_id)?;
        let run = decode_run(run_id, row)?;
        let mut ops = row.ops.clone();
        if apply_retry_poisoned(run.status, &mut ops, now)? {
            if let Some(row) = tables.runs.get_mut(run_id) {
                row.ops = ops;
            }
        }
        Ok(run)
    }

    async fn fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        let tables = self.lock()?;
        tables.visible(scope, run_id)?;
        let row = tables
            .events
            .get(run_id)
            .and_then(|rows| rows.get(&seq))
            .ok_or(StoreError::NotFound)?;
        decode_event(run_id, seq, row)
    }

    async fn fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        let tables = self.lock()?;
        tables.visible(scope, run_id)?;
        tables
            .events
            .get(run_id)
            .and_then(|rows| rows.iter().next_back())
            .map(|(seq, row)| decode_event(run_id, *seq, row))
            .transpose()
    }

    async fn list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        validate_event_query(query)?;
        let tables = self.lock()?;
        let row = tables.visible(scope, run_id)?;
        let rows = tables.events.get(run_id);
        let oldest = rows.and_then(|r| r.keys().next().copied());
        let latest = rows.and_then(|r| r.keys().next_back().copied());
        let events = rows
            .into_iter()
            .flat_map(|r| r.range(query.after_seq.saturating_add(1)..))
            .take(query.limit as usize)
            .map(|(seq, event)| decode_event(run_id, *seq, event))
            .collect::<Result<Vec<Event>, StoreError>>()?;
        Ok(event_page(
            events,
            query,
            oldest,
            latest,
            row.columns.event_seq,
        ))
    }

    async fn prune(&self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        let Some(_slot) = self.begin_prune() else {
            return Ok(PruneReport {
                skipped_locked: true,
                ..PruneReport::default()
            });
        };
        prune(&mut *self.lock()?, policy)
    }

    fn wakeups(&self) -> Option<Wakeups> {
        None
    }

    fn ops_registry(&self) -> Option<&dyn OpsLifecycleRegistry> {
        Some(self)
    }
}
