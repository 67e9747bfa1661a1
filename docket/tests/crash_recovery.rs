//! Crash recovery: a vehicle or worker killed mid-drain leaves its claim; the claim expires and
//! another worker finishes the run from its last committed moment, each checkpoint exactly once.

mod support;

use std::sync::Arc;
use std::time::Duration;

use docket::core::model::{RunQuery, RunStatus, ValueMap};
use docket::engine::{DrainBudget, Worker, WorkerConfig, WorkerStats};
use docket::history::check_history;
use docket::{Docket, StartOptions};

use support::graphs::sleepy;
use support::scripted::Scripted;
use support::{poll_until, VFx};

#[tokio::test]
async fn an_aborted_vehicle_leaves_its_claim_and_a_later_drain_recovers_the_run() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&sleepy(1_500)).await;
    let run_fetches = Scripted::count(&fx.store.fetches);
    let mut lease = fx.claim().await;
    // Without the run in the lease the vehicle reads it first, which tells this test it has
    // started (how it got its run does not matter to what a crash leaves behind).
    lease.run = None;
    let vehicle = fx.vehicle();
    let task = tokio::spawn(async move { vehicle.drain(lease).await });
    // Once the vehicle has read its run (its graph comes from the cache the start filled) it
    // runs the sleeping node: kill it mid-drain.
    poll_until(Duration::from_secs(5), || {
        Scripted::count(&fx.store.fetches) > run_fetches
    })
    .await;
    task.abort();
    let _ = task.await;
    let info = fx.info(&run.id).await;
    assert!(info.is_claimed(), "an aborted vehicle releases nothing");
    assert!(
        fx.try_claim().await.is_none(),
        "a live claim is not stolen before its TTL"
    );
    // Past the orphan TTL (strictly), the claim is stolen and the run finishes.
    fx.clock.advance_millis(60_001);
    let summary = fx.docket.drain_runs(10).await.expect("drain");
    assert_eq!(summary.drained, 1);
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    let events = fx.events(&run.id).await;
    assert!(check_history(&info.run, &events).is_empty());
    assert_eq!(fx.docket.drain_stats().snapshot().recovered_steals, 1);
}

#[tokio::test]
async fn a_killed_worker_is_recovered_by_another_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("crash.db").display());
    let backend = docket::connect_backend(&url).await.expect("sqlite");
    let config = WorkerConfig {
        concurrency: 4,
        poll_interval_ms: 50,
        orphan_ttl_ms: 400,
        max_attempt_elapsed_ms: 250,
        drain_budget: DrainBudget {
            max_moments: Some(100),
            max_elapsed_ms: 300,
        },
        ..WorkerConfig::default()
    };
    let docket = Docket::builder(backend, docket::nodes::registry())
        .config(config)
        .build()
        .expect("facade");
    let graph_ref = docket
        .save_graph_json(&sleepy(200).to_string())
        .await
        .expect("save");
    let mut ids = Vec::new();
    for _ in 0..6 {
        let run = docket
            .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
            .await
            .expect("start");
        ids.push(run.id);
    }
    let victim = Worker::start(docket.engine());
    poll_until(Duration::from_secs(10), || !victim.live_claims().is_empty()).await;
    let held = victim.kill();
    assert!(!held.is_empty());
    let survivor_stats = Arc::new(WorkerStats::new());
    let survivor = Worker::builder(docket.engine())
        .stats(survivor_stats.clone())
        .start();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let page = docket
            .list_runs(&RunQuery {
                limit: 100,
                ..RunQuery::default()
            })
            .await
            .expect("list");
        if page.runs.iter().all(|r| r.status.is_terminal()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "runs stuck: {:?}",
            page.runs
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    survivor.shutdown().await;
    for id in &ids {
        let run = docket.fetch_run(id).await.expect("run");
        assert_eq!(run.status, RunStatus::Done);
        let events = docket.all_events(id).await.expect("events");
        assert_eq!(
            check_history(&run, &events),
            Vec::<String>::new(),
            "run {id}"
        );
    }
    assert!(
        survivor_stats.snapshot().recovered_steals >= 1,
        "{:?}",
        survivor_stats.snapshot()
    );
}

/// Scenario 47 of `docs/scenarios.md`: killed after its first superstep committed, a vehicle leaves
/// its claim; the steal is attempt 1 (the commit handed the attempts back), the run resumes from
/// the last committed moment, and the writer that committed before the kill never runs again.
#[tokio::test]
async fn a_vehicle_killed_after_a_commit_is_resumed_from_it_and_the_steal_is_attempt_one() {
    let fx = VFx::new(WorkerConfig::default());
    let graph = serde_json::json!({
        "schema_version": 1, "id": "write_then_nap",
        "fields": {
            "written": {"schema": {"type": "boolean"}},
            "slept": {"schema": {"type": "boolean"}}
        },
        "outputs": {"written": {}, "slept": {}},
        "nodes": {
            "writer": {"implementation": "std.set", "config": {"values": {"written": true}}},
            "nap": {"implementation": "std.sleep_ms", "config": {"ms": 1_500, "values": {"slept": true}}}
        },
        "edges": {
            "begin": {"from": "$start", "to": "writer"},
            "then": {"from": "writer", "to": "nap"},
            "end": {"from": "nap", "to": "$finish"}
        }
    });
    let run = fx.start(&graph).await;
    let lease = fx.claim().await;
    assert_eq!(lease.claim_attempt, 1);
    let vehicle = fx.vehicle();
    let task = tokio::spawn(async move { vehicle.drain(lease).await });
    // The writer's superstep commits; the vehicle then sleeps in `nap`: kill it there.
    poll_until(Duration::from_secs(5), || {
        Scripted::count(&fx.store.claimed_commits) >= 1
    })
    .await;
    task.abort();
    let _ = task.await;
    let info = fx.info(&run.id).await;
    assert!(info.is_claimed(), "the claim outlives the killed vehicle");
    assert_eq!(
        info.run.checkpoint_seq,
        run.checkpoint_seq + 1,
        "the writer's moment"
    );
    assert_eq!(
        info.claim_attempts, 0,
        "committed progress handed the attempt back"
    );

    fx.clock.advance_millis(60_001);
    let steal = fx.claim().await;
    assert_eq!(steal.claim_attempt, 1, "the steal is attempt 1");
    assert_eq!(steal.checkpoint_seq, info.run.checkpoint_seq);
    let drained = fx.drain(steal).await.expect("drain");
    assert!(drained.outcome.is_parked(), "{:?}", drained.outcome);

    let done = fx.info(&run.id).await;
    assert_eq!(done.run.status, RunStatus::Done);
    let events = fx.events(&run.id).await;
    assert!(check_history(&done.run, &events).is_empty());
    let writer_completions = events
        .iter()
        .filter(|e| {
            e.event_type == docket::core::model::EventType::NodeCompleted
                && e.node_id.as_deref() == Some("writer")
        })
        .count();
    assert_eq!(writer_completions, 1, "the writer completed exactly once");
}
