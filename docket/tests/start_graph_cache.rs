//! `Docket::start_run` builds its run from the engine's graph cache (`docs/engine.md`, “The
//! graph cache”): a version it has compiled once is not read again, and a version pruned from
//! the store since it was cached still fails the start, refused by the store's `initialize`.

mod support;

use std::num::NonZeroU32;

use serde_json::{json, Value};

use docket::core::model::{Clock, GraphRef, OwnerScope, Run, ValueMap};
use docket::core::store::{GraphStore, PrunePolicy, RunStore, KEEP_GRAPH_VERSIONS};
use docket::engine::WorkerConfig;
use docket::{DocketError, StartOptions};

use support::graphs::steps;
use support::scripted::Scripted;
use support::VFx;

/// Graph fetches the store has answered so far.
fn graph_fetches(fx: &VFx) -> u32 {
    Scripted::count(&fx.store.graph_fetches)
}

async fn start(fx: &VFx, graph: &GraphRef) -> Result<Run, DocketError> {
    fx.docket
        .start_run(graph, ValueMap::new(), StartOptions::default())
        .await
}

/// Version `i` of one graph id: the same shape, a different value written, so a different
/// content address.
fn version(i: usize) -> Value {
    let mut graph = steps(1);
    graph["nodes"]["s1"]["config"]["values"]["f1"] = json!(i);
    graph
}

#[tokio::test]
async fn a_second_start_of_a_version_reads_no_graph() {
    let fx = VFx::new(WorkerConfig::default());
    let graph = fx.publish(&steps(2)).await;
    let before = graph_fetches(&fx);
    let first = start(&fx, &graph).await.expect("first start");
    assert_eq!(
        graph_fetches(&fx),
        before + 1,
        "the first start reads the graph"
    );
    let second = start(&fx, &graph).await.expect("second start");
    let third = start(&fx, &graph).await.expect("third start");
    assert_eq!(
        graph_fetches(&fx),
        before + 1,
        "later starts are served by the cache"
    );
    for run in [&first, &second, &third] {
        let stored = fx.docket.fetch_run(&run.id).await.expect("stored");
        assert_eq!(stored.graph_hash, graph.graph_hash);
        assert_eq!(stored.checkpoint_seq, 1);
    }
    // The vehicles of the same engine find the version in the cache the start filled.
    for _ in 0..3 {
        fx.claim_and_drain().await;
    }
    assert_eq!(
        graph_fetches(&fx),
        before + 1,
        "the drains read no graph either"
    );
    for run in [&first, &second, &third] {
        let stored = fx.docket.fetch_run(&run.id).await.expect("stored");
        assert_eq!(stored.status, docket::core::model::RunStatus::Done);
    }
}

#[tokio::test]
async fn without_the_graph_cache_every_start_reads_the_graph() {
    let fx = VFx::new(WorkerConfig {
        graph_cache: false,
        ..WorkerConfig::default()
    });
    let graph = fx.publish(&steps(1)).await;
    let before = graph_fetches(&fx);
    start(&fx, &graph).await.expect("first start");
    start(&fx, &graph).await.expect("second start");
    assert_eq!(graph_fetches(&fx), before + 2);
}

#[tokio::test]
async fn a_cached_version_pruned_from_the_store_no_longer_starts() {
    let fx = VFx::new(WorkerConfig::default());
    let old = fx.publish(&version(0)).await;
    let run = start(&fx, &old).await.expect("start caches the version");
    fx.docket.cancel_run(&run.id).await.expect("cancel");
    // Enough newer versions of the same id that the old one is no longer kept.
    for i in 1..=KEEP_GRAPH_VERSIONS {
        fx.clock.advance_millis(1);
        fx.publish(&version(i)).await;
    }
    fx.clock.advance_millis(10_000);
    let report = RunStore::prune(
        fx.store.as_ref(),
        &PrunePolicy {
            now: fx.clock.now(),
            event_retention_ms: 1_000,
            run_retention_ms: 1_000,
            batch_size: NonZeroU32::new(100).expect("positive"),
        },
    )
    .await
    .expect("prune");
    assert_eq!((report.runs_deleted, report.graphs_deleted), (1, 1));
    assert!(matches!(
        GraphStore::fetch_graph(fx.store.as_ref(), &OwnerScope::Tenantless, &old).await,
        Err(docket::core::store::StoreError::NotFound)
    ));

    let before = graph_fetches(&fx);
    let snapshot = fx.store.inner.raw_snapshot();
    assert!(matches!(start(&fx, &old).await, Err(DocketError::NotFound)));
    assert_eq!(
        graph_fetches(&fx),
        before,
        "the refusal came from initialize, not a read"
    );
    assert_eq!(
        fx.store.inner.raw_snapshot(),
        snapshot,
        "the refused start wrote nothing"
    );
}
