//! One retention pass (`docs/storage-contract.md`, “Retention”), applied to the locked state.
//! Cutoffs are strict (`<`) and every category deletes at most `batch_size` rows, oldest first.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{GraphId, OwnerScope, RunId, Timestamp};
use crate::store::rules::queries::validate_prune_policy;
use crate::store::{PrunePolicy, PruneReport, StoreError, KEEP_GRAPH_VERSIONS};

use super::state::{GraphKey, State};

fn cutoff(now: Timestamp, retention_ms: u64) -> Timestamp {
    now.add_millis(-i64::try_from(retention_ms).unwrap_or(i64::MAX))
}

/// Deletes old events, old terminal runs (with their events) and old unreferenced graph
/// versions, in that order.
pub(super) fn prune(state: &mut State, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
    validate_prune_policy(policy)?;
    let batch = usize::try_from(policy.batch_size.get()).unwrap_or(usize::MAX);
    let mut report = PruneReport::default();

    let event_cutoff = cutoff(policy.now, policy.event_retention_ms);
    let mut old_events: Vec<(Timestamp, RunId, u64)> = state
        .events
        .iter()
        .flat_map(|(run_id, events)| {
            events
                .iter()
                .filter(|(_, row)| row.inserted_at < event_cutoff)
                .map(|(seq, row)| (row.inserted_at, run_id.clone(), *seq))
        })
        .collect();
    old_events.sort();
    for (_, run_id, seq) in old_events.into_iter().take(batch) {
        if let Some(events) = state.events.get_mut(&run_id) {
            events.remove(&seq);
            if events.is_empty() {
                state.events.remove(&run_id);
            }
        }
        report.events_deleted += 1;
    }

    let run_cutoff = cutoff(policy.now, policy.run_retention_ms);
    let mut old_runs: Vec<(Timestamp, RunId)> = state
        .runs
        .iter()
        .filter(|(_, row)| row.columns.status.is_terminal() && row.columns.updated_at < run_cutoff)
        .map(|(id, row)| (row.columns.updated_at, id.clone()))
        .collect();
    old_runs.sort();
    for (_, run_id) in old_runs.into_iter().take(batch) {
        report.cascade_events_deleted += state.delete_run(&run_id);
        report.runs_deleted += 1;
    }

    for key in prunable_graphs(state).into_iter().take(batch) {
        state.graphs.remove(&key);
        report.graphs_deleted += 1;
    }
    Ok(report)
}

/// Versions that no run references and that rank below the newest [`KEEP_GRAPH_VERSIONS`] of
/// their `(owner, graph_id)` by `(published_at, graph_hash)`, oldest first.
fn prunable_graphs(state: &State) -> Vec<GraphKey> {
    let referenced: BTreeSet<GraphKey> = state
        .runs
        .values()
        .map(|row| GraphKey {
            owner: row.owner.clone(),
            graph_id: row.columns.graph_id.clone(),
            graph_hash: row.columns.graph_hash.clone(),
        })
        .collect();
    let mut by_graph: BTreeMap<(OwnerScope, GraphId), Vec<(Timestamp, GraphKey)>> = BTreeMap::new();
    for (key, row) in &state.graphs {
        by_graph
            .entry((key.owner.clone(), key.graph_id.clone()))
            .or_default()
            .push((row.published_at, key.clone()));
    }
    let mut prunable: Vec<(Timestamp, GraphKey)> = Vec::new();
    for mut versions in by_graph.into_values() {
        versions.sort_by(|a, b| (b.0, &b.1.graph_hash).cmp(&(a.0, &a.1.graph_hash)));
        prunable.extend(
            versions
                .into_iter()
                .skip(KEEP_GRAPH_VERSIONS)
                .filter(|(_, key)| !referenced.contains(key)),
        );
    }
    prunable.sort();
    prunable.into_iter().map(|(_, key)| key).collect()
}
