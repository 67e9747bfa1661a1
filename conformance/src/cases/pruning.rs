//! Retention (`docs/storage-contract.md`, “Retention”): strict age cutoffs, terminal-only run
//! deletion with cascading events, batches, and unreferenced old graph versions.

use docket_core::model::GraphId;
use docket_core::store::{PrunePolicy, KEEP_GRAPH_VERSIONS};

use crate::cases::prelude::*;

fn policy(now: Timestamp, event_ms: u64, run_ms: u64, batch: u32) -> PrunePolicy {
    PrunePolicy {
        now,
        event_retention_ms: event_ms,
        run_retention_ms: run_ms,
        batch_size: nz(batch),
    }
}

async fn prune(env: &Env<'_>, policy: &PrunePolicy) -> docket_core::store::PruneReport {
    let report = ok(env.store().prune(policy).await, "prune");
    assert!(!report.skipped_locked, "no other pruner runs in a case");
    report
}

/// Starts `id` at `at` and finishes it (done) at `done_at`, unclaimed.
async fn finished(
    env: &Env<'_>,
    graph: &Published,
    id: &str,
    at: Timestamp,
    done_at: Timestamp,
) -> Run {
    let run = env.start(graph, id, at).await;
    let moment = moment_to(&run, RunStatus::Done, done_at);
    ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq,
                unclaimed_commit(&moment, done_at),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    )
}

/// Pruning an empty store reports nothing and changes nothing.
pub async fn pruning_an_empty_store_does_nothing(env: &Env<'_>) {
    let report = env
        .unchanged(env.store().prune(&policy(t(1_000_000), 10, 10, 100)))
        .await;
    assert_eq!(report, docket_core::store::PruneReport::default());
}

/// Events older than the event retention go, whatever the run's status; the cutoff is strict.
pub async fn event_retention_is_strict_and_applies_to_live_runs(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let old = env.start(&graph, "old", t(0)).await;
    let edge = env.start(&graph, "edge", t(100)).await;
    let report = prune(env, &policy(t(1_100), 1_000, 1_000_000, 100)).await;
    assert_eq!(report.events_deleted, old.event_seq);
    assert_eq!((report.runs_deleted, report.cascade_events_deleted), (0, 0));
    assert!(env.all_events(&old.id).await.is_empty());
    assert_eq!(env.all_events(&edge.id).await.len() as u64, edge.event_seq);
    assert_eq!(env.fetch(&old.id).await, old, "live runs are never deleted");
}

/// Terminal runs last updated before the run retention go, with their remaining events
/// counted as cascade deletions.
pub async fn old_terminal_runs_are_deleted_with_their_events(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let done = finished(env, &graph, "done", t(0), t(10)).await;
    let report = prune(env, &policy(t(10_000), 5_000, 5_000, 100)).await;
    assert_eq!(report.runs_deleted, 1);
    assert_eq!(
        report.events_deleted + report.cascade_events_deleted,
        done.event_seq
    );
    env.rejected(K::NotFound, env.store().fetch_run(&Scope::System, &done.id))
        .await;
    env.rejected(
        K::NotFound,
        env.store()
            .list_events(&Scope::System, &done.id, &event_query(0, 10)),
    )
    .await;
}

/// Run retention is strict: a terminal run updated exactly at the cutoff stays.
pub async fn run_retention_is_strict(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let done = finished(env, &graph, "done", t(0), t(10)).await;
    let report = prune(env, &policy(t(5_010), 0, 5_000, 100)).await;
    assert_eq!(report.runs_deleted, 0);
    assert_eq!(env.fetch(&done.id).await, done);
    let report = prune(env, &policy(t(5_010).add_micros(1), 0, 5_000, 100)).await;
    assert_eq!(report.runs_deleted, 1);
}

/// Live runs (running, waiting) are never deleted, however old.
pub async fn live_runs_are_never_deleted(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let running = env.start(&graph, "running", t(0)).await;
    let waiting = env.start(&graph, "waiting", t(0)).await;
    let moment = moment_to(&waiting, RunStatus::Waiting, t(1));
    let waiting = ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                waiting.checkpoint_seq,
                unclaimed_commit(&moment, t(1)),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    let report = prune(env, &policy(t(100_000_000), 0, 0, 100)).await;
    assert_eq!(report.runs_deleted, 0);
    assert_eq!(env.fetch(&running.id).await, running);
    assert_eq!(env.fetch(&waiting.id).await, waiting);
}

/// Each category deletes at most `batch_size` rows per pass, oldest first.
pub async fn prune_batches_cap_each_category_oldest_first(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for (i, id) in ["d1", "d2", "d3"].iter().enumerate() {
        let at = t(i as i64 * 10);
        finished(env, &graph, id, at, at.add_millis(1)).await;
    }
    let report = prune(env, &policy(t(1_000_000), 400_000, 500_000, 1)).await;
    assert_eq!(report.runs_deleted, 1);
    env.rejected(
        K::NotFound,
        env.store().fetch_run(&Scope::System, &rid("d1")),
    )
    .await;
    env.fetch(&rid("d2")).await;
    let report = prune(env, &policy(t(1_000_000), 400_000, 500_000, 5)).await;
    assert_eq!(report.runs_deleted, 2);
}

/// Event retention longer than run retention is refused and changes nothing.
pub async fn event_retention_longer_than_run_retention_is_refused(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "r1", t(0)).await;
    env.rejected(
        K::InvalidArgument,
        env.store().prune(&policy(t(1_000_000), 2_000, 1_000, 10)),
    )
    .await;
}

/// Pruned events leave a retention gap in the bounds while `latest_seq` survives, even when
/// every event is gone.
pub async fn pruned_events_leave_gaps_and_latest_seq_survives(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let later = env
        .commit_to(&c.lease, &c.run, RunStatus::Running, t(5_000))
        .await;
    prune(env, &policy(t(5_500), 1_000, 1_000_000, 100)).await;
    let page = ok(
        env.store()
            .list_events(&Scope::System, &c.run.id, &event_query(0, 100))
            .await,
        "list_events",
    );
    assert_eq!(page.oldest_available_seq, Some(c.run.event_seq + 1));
    assert_eq!(page.latest_available_seq, Some(later.event_seq));
    assert_eq!(page.latest_seq, later.event_seq);
    prune(env, &policy(t(7_000), 1_000, 1_000_000, 100)).await;
    let page = ok(
        env.store()
            .list_events(&Scope::System, &c.run.id, &event_query(0, 100))
            .await,
        "list_events",
    );
    assert!(page.events.is_empty());
    assert_eq!(
        (
            page.oldest_available_seq,
            page.latest_available_seq,
            page.latest_seq
        ),
        (None, None, later.event_seq)
    );
}

/// Only unreferenced versions beyond the newest ten of a graph are pruned.
pub async fn only_unreferenced_versions_beyond_the_newest_ten_are_pruned(env: &Env<'_>) {
    let total = KEEP_GRAPH_VERSIONS as u64 + 2;
    let mut published = Vec::new();
    for v in 1..=total {
        let graph = tiny_graph_version(&OwnerScope::Tenantless, "g", v);
        env.publish(&graph, t(v as i64)).await;
        published.push(graph);
    }
    env.start(&published[0], "pins-v1", t(100)).await;
    let report = prune(env, &policy(t(1_000_000_000), 0, 0, 100)).await;
    assert_eq!(report.graphs_deleted, 1, "only v2 is old and unreferenced");
    let store = env.store();
    ok(
        store
            .fetch_graph(&OwnerScope::Tenantless, &published[0].graph_ref)
            .await,
        "the referenced v1 stays",
    );
    env.rejected(
        K::NotFound,
        store.fetch_graph(&OwnerScope::Tenantless, &published[1].graph_ref),
    )
    .await;
    let page = ok(
        store
            .list_graph_versions(
                &OwnerScope::Tenantless,
                &GraphId::new("g").expect("id"),
                &version_query(100),
            )
            .await,
        "list_graph_versions",
    );
    assert_eq!(page.versions.len(), KEEP_GRAPH_VERSIONS + 1);
}

/// A pass that finds nothing old changes nothing.
pub async fn a_pass_with_nothing_old_changes_nothing(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    finished(env, &graph, "done", t(0), t(10)).await;
    let report = env
        .unchanged(env.store().prune(&policy(t(20), 1_000, 1_000, 100)))
        .await;
    assert_eq!(report, docket_core::store::PruneReport::default());
}

/// Events a pass deletes together with their old terminal run are counted as cascade
/// deletions: with a batch of one, the event category removes one event and the run's
/// remaining events go with the run.
pub async fn a_deleted_runs_remaining_events_count_as_cascade(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let done = finished(env, &graph, "done", t(0), t(10)).await;
    assert!(
        done.event_seq >= 2,
        "the case needs a run with several events"
    );
    let report = prune(env, &policy(t(10_000), 5_000, 5_000, 1)).await;
    assert_eq!(report.events_deleted, 1);
    assert_eq!(report.runs_deleted, 1);
    assert_eq!(report.cascade_events_deleted, done.event_seq - 1);
    env.rejected(K::NotFound, env.store().fetch_run(&Scope::System, &done.id))
        .await;
}
