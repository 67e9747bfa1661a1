//! One retention pass over the locked tables: old events, then old terminal runs, then old
//! unreferenced graph versions. The caller holds the single pruner slot, so passes never
//! overlap.

use std::collections::{BTreeMap, BTreeSet};

use docket_core::model::{GraphHash, GraphId, OwnerScope, RunId, Timestamp};
use docket_core::store::{PrunePolicy, PruneReport, KEEP_GRAPH_VERSIONS};

use crate::graphs::newest_first;
use crate::tables::Tables;

fn cutoff(now: Timestamp, retention_ms: u64) -> Timestamp {
    now.add_millis(-i64::try_from(retention_ms).unwrap_or(i64::MAX))
}

/// One retention pass with a validated policy: old events, then old terminal runs, then old
/// unreferenced versions.
pub(crate) fn prune(tables: &mut Tables, policy: &PrunePolicy) -> PruneReport {
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
    report
}
