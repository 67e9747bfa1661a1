//! The facade (scenarios 58, 64–68 and 153–159 of `docs/scenarios.md`).

mod support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use docket::core::lifecycle::{Checkpoint, CheckpointObserver, ObserverError};
use docket::core::model::{
    CheckpointType, Clock, GraphHash, GraphRef, RunStatus, TenantId, ValueMap,
};
use docket::core::runtime::{ErrorKind, ParkKind};
use docket::core::store::{ClaimClass, StoreError};
use docket::engine::{DrainOutcome, WorkerConfig};
use docket::{AwaitOptions, DocketError, StartOptions, TestingMode};

use support::graphs::{approval, flaky, steps};
use support::{builder, Fx, Recorder, VFx};

#[derive(Debug)]
struct Failing;

#[async_trait]
impl CheckpointObserver for Failing {
    async fn observe(&self, _: &Checkpoint) -> Result<(), ObserverError> {
        Err("observer failure".into())
    }
}

#[derive(Debug)]
struct Blocking;

#[async_trait]
impl CheckpointObserver for Blocking {
    async fn observe(&self, _: &Checkpoint) -> Result<(), ObserverError> {
        std::future::pending::<()>().await;
        Ok(())
    }
}

fn now_await() -> AwaitOptions {
    AwaitOptions {
        timeout: Duration::ZERO,
        poll_interval: Duration::from_millis(5),
    }
}

#[tokio::test]
async fn the_durable_facade_starts_fetches_inspects_cancels_and_observes() {
    let clock = docket::core::model::ManualClock::new(support::at(0));
    let recorder = Arc::new(Recorder::default());
    let docket = builder(
        Arc::new(docket::core::memory::MemoryStore::new()),
        docket::nodes::registry(),
        &clock,
    )
    .observer(Arc::new(Failing))
    .observer(recorder.clone())
    .build()
    .expect("facade");
    let graph_ref = docket
        .save_graph_json(&steps(2).to_string())
        .await
        .expect("save");
    let run = docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    assert_eq!(run.status, RunStatus::Running);
    let info = docket.inspect_run(&run.id).await.expect("inspect");
    assert_eq!(info.wake_at, Some(clock.now()));
    assert_eq!(docket.fetch_run(&run.id).await.expect("fetch"), run);
    let cancelled = docket.cancel_run(&run.id).await.expect("cancel");
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert_eq!(
        recorder.wait_for(2).await,
        vec![CheckpointType::RunInitialized, CheckpointType::RunCancelled]
    );
    let awaited = docket.await_run(&run.id, now_await()).await.expect("await");
    assert_eq!(awaited, cancelled);
}

#[tokio::test]
async fn concurrent_cancels_converge_on_one_committed_cancellation() {
    let fx = Fx::manual();
    let graph_ref = fx
        .docket
        .save_graph_json(&steps(1).to_string())
        .await
        .expect("save");
    let run = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    let (a, b) = tokio::join!(fx.docket.cancel_run(&run.id), fx.docket.cancel_run(&run.id));
    let (a, b) = (a.expect("a"), b.expect("b"));
    assert_eq!(a, b);
    let cancels = fx
        .docket
        .all_events(&run.id)
        .await
        .expect("events")
        .iter()
        .filter(|e| e.event_type == docket::core::model::EventType::RunCancelled)
        .count();
    assert_eq!(cancels, 1);
}

#[tokio::test]
async fn tenants_never_see_each_others_runs() {
    let fx = Fx::manual();
    let a = fx.docket.tenant(TenantId::new("a").expect("tenant"));
    let b = fx.docket.tenant(TenantId::new("b").expect("tenant"));
    let graph_ref = a
        .save_graph_json(&steps(1).to_string())
        .await
        .expect("save");
    let run = a
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    for other in [&b, &fx.docket] {
        assert!(matches!(
            other.fetch_run(&run.id).await,
            Err(DocketError::NotFound)
        ));
        assert!(matches!(
            other.inspect_run(&run.id).await,
            Err(DocketError::NotFound)
        ));
        assert!(matches!(
            other.cancel_run(&run.id).await,
            Err(DocketError::NotFound)
        ));
        assert!(matches!(
            other.retry_poisoned_run(&run.id).await,
            Err(DocketError::NotFound)
        ));
        assert!(matches!(
            other.await_run(&run.id, now_await()).await,
            Err(DocketError::NotFound)
        ));
        assert!(matches!(
            other
                .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
                .await,
            Err(DocketError::NotFound)
        ));
    }
    assert_eq!(
        a.fetch_run(&run.id).await.expect("owner sees it").id,
        run.id
    );
}

#[tokio::test]
async fn graph_saves_are_idempotent_and_forged_references_do_not_start() {
    let fx = Fx::manual();
    let first = fx
        .docket
        .save_graph_json(&steps(2).to_string())
        .await
        .expect("save");
    let again = fx
        .docket
        .save_graph_json(&steps(2).to_string())
        .await
        .expect("save again");
    assert_eq!(first, again);
    let forged = GraphRef {
        graph_id: first.graph_id.clone(),
        graph_hash: GraphHash::new("f".repeat(64)).expect("hash"),
    };
    assert!(matches!(
        fx.docket
            .start_run(&forged, ValueMap::new(), StartOptions::default())
            .await,
        Err(DocketError::NotFound)
    ));
    let broken = json!({"schema_version": 1, "id": "broken", "nodes": {"x": {"implementation": "std.nope"}},
        "edges": {"e": {"from": "$start", "to": "x"}}});
    let err = fx
        .docket
        .save_graph_json(&broken.to_string())
        .await
        .expect_err("does not compile");
    assert!(
        matches!(&err, DocketError::InvalidGraph { diagnostics } if diagnostics.iter().any(|d| d.code == "node_module_not_loaded")),
        "{err}"
    );
}

#[tokio::test]
async fn the_host_context_reaches_nodes_through_drains() {
    use docket::core::node::{FnNode, NodeOutcome};
    let mut nodes = docket::nodes::registry();
    nodes
        .register(
            "test.context",
            FnNode::new(|_, _, ctx| {
                NodeOutcome::update(
                    json!({"tag": ctx.application.get("tag").cloned().unwrap_or_default()}),
                )
            }),
        )
        .expect("register");
    let config = WorkerConfig {
        context: json!({"tag": "blue"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..WorkerConfig::default()
    };
    let fx = Fx::with(TestingMode::Inline, nodes, config);
    let graph = json!({"schema_version": 1, "id": "ctx", "fields": {"tag": {"schema": {"type": "string"}}},
        "outputs": {"tag": {}}, "nodes": {"read": {"implementation": "test.context"}},
        "edges": {"b": {"from": "$start", "to": "read"}, "e": {"from": "read", "to": "$finish"}}});
    let graph_ref = fx
        .docket
        .save_graph_json(&graph.to_string())
        .await
        .expect("save");
    let run = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    assert_eq!(run.output.expect("output").get("tag"), Some(&json!("blue")));
}

#[tokio::test]
async fn a_blocking_observer_cannot_delay_a_committed_api_result() {
    let clock = docket::core::model::ManualClock::new(support::at(0));
    let docket = builder(
        Arc::new(docket::core::memory::MemoryStore::new()),
        docket::nodes::registry(),
        &clock,
    )
    .observer(Arc::new(Blocking))
    .build()
    .expect("facade");
    let graph_ref = docket
        .save_graph_json(&steps(1).to_string())
        .await
        .expect("save");
    let started = tokio::time::timeout(
        Duration::from_secs(5),
        docket.start_run(&graph_ref, ValueMap::new(), StartOptions::default()),
    )
    .await
    .expect("not delayed by the observer");
    assert!(started.is_ok());
}

#[tokio::test]
async fn a_poisoned_await_halts_immediately_and_retry_clears_the_poison() {
    let fx = VFx::new(WorkerConfig {
        max_claim_attempts: 1,
        ..WorkerConfig::default()
    });
    let run = fx.start_with_an_attempt_spent(&steps(1)).await;
    let summary = fx.docket.drain_runs(1).await.expect("drain");
    assert_eq!(summary.poisoned.len(), 1);
    let err = fx
        .docket
        .await_run(
            &run.id,
            AwaitOptions {
                timeout: Duration::from_secs(60),
                poll_interval: Duration::from_secs(1),
            },
        )
        .await
        .expect_err("poisoned");
    assert!(matches!(err, DocketError::Poisoned(_)));
    fx.docket.retry_poisoned_run(&run.id).await.expect("retry");
    let info = fx.info(&run.id).await;
    assert!(!info.is_poisoned());
    assert_eq!(
        (info.claim_attempts, info.wake_at),
        (0, Some(fx.clock.now()))
    );
    fx.docket.drain_runs(10).await.expect("drain");
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
}

#[tokio::test]
async fn inline_testing_drains_in_the_caller() {
    let fx = Fx::with(
        TestingMode::Inline,
        docket::nodes::registry(),
        WorkerConfig::default(),
    );
    let graph_ref = fx
        .docket
        .save_graph_json(&steps(3).to_string())
        .await
        .expect("save");
    let run = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    assert_eq!(run.status, RunStatus::Done);
}

#[tokio::test]
async fn inline_testing_completes_a_named_interrupt_through_the_durable_facade() {
    let fx = Fx::with(
        TestingMode::Inline,
        docket::nodes::registry(),
        WorkerConfig::default(),
    );
    let graph_ref = fx
        .docket
        .save_graph_json(&approval().to_string())
        .await
        .expect("save");
    let run = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    assert_eq!(run.status, RunStatus::Waiting);
    let done = fx
        .docket
        .resolve_interrupt(&run.id, "approve", json!(true))
        .await
        .expect("resolve");
    assert_eq!(done.status, RunStatus::Done);
    let err = fx
        .docket
        .resolve_interrupt(&run.id, "approve", json!(true))
        .await
        .expect_err("again");
    assert!(
        matches!(&err, DocketError::Runtime(e) if e.kind == ErrorKind::InactiveRun),
        "{err}"
    );
}

#[tokio::test]
async fn manual_testing_advances_only_through_bounded_drain_runs() {
    let fx = Fx::manual();
    let graph_ref = fx
        .docket
        .save_graph_json(&steps(1).to_string())
        .await
        .expect("save");
    let run = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("start");
    assert_eq!(run.status, RunStatus::Running);
    let summary = fx.docket.drain_runs(1).await.expect("drain");
    assert_eq!(summary.drained, 1);
    assert_eq!(
        summary.outcomes,
        vec![DrainOutcome::Parked(ParkKind::Terminal)]
    );
    assert!(summary.limit_reached);
    let empty = fx.docket.drain_runs(1).await.expect("drain");
    assert_eq!((empty.drained, empty.limit_reached), (0, false));
}

#[tokio::test]
async fn manual_drains_preserve_retry_attempt_state_across_separate_claims() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&flaky(2, 3, 100)).await;
    let mut attempts = Vec::new();
    for _ in 0..3 {
        fx.docket.drain_runs(1).await.expect("drain");
        let info = fx.info(&run.id).await;
        attempts.push(info.run.active_tasks.values().map(|t| t.attempt).next());
        if let Some(wake) = info.wake_at {
            fx.clock.set(wake);
        }
    }
    assert_eq!(attempts, vec![Some(2), Some(3), None]);
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
    // Each single-run drain is one successful demand-1 scan, so the preferred class
    // alternates: ready, expired, ready.
    let preferences: Vec<_> = fx
        .store
        .policies
        .lock()
        .expect("lock")
        .iter()
        .map(|p| (p.limit.get(), p.preference))
        .collect();
    assert_eq!(
        preferences,
        [
            (1, Some(ClaimClass::Ready)),
            (1, Some(ClaimClass::Expired)),
            (1, Some(ClaimClass::Ready))
        ]
    );
}

#[tokio::test]
async fn poison_admission_consumes_a_bounded_slot_and_the_drain_continues_to_later_work() {
    let fx = VFx::new(WorkerConfig {
        max_claim_attempts: 1,
        ..WorkerConfig::default()
    });
    let doomed = fx.start_with_an_attempt_spent(&steps(1)).await;
    fx.clock.advance_millis(1);
    let healthy = fx.start(&steps(1)).await;
    let summary = fx.docket.drain_runs(2).await.expect("drain");
    assert_eq!(summary.poisoned.len(), 1);
    assert_eq!(summary.poisoned[0].run_id, doomed.id);
    assert_eq!(summary.drained, 1);
    assert_eq!(fx.info(&healthy.id).await.run.status, RunStatus::Done);
}

#[tokio::test]
async fn manual_cancel_poison_halt_inspection_and_recovery_are_deterministic() {
    let fx = Fx::manual();
    let graph_ref = fx
        .docket
        .save_graph_json(&steps(2).to_string())
        .await
        .expect("save");
    let a = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("a");
    let b = fx
        .docket
        .start_run(&graph_ref, ValueMap::new(), StartOptions::default())
        .await
        .expect("b");
    fx.docket.cancel_run(&a.id).await.expect("cancel");
    let summary = fx.docket.drain_runs(10).await.expect("drain");
    assert_eq!(summary.drained, 1, "only the live run drains");
    assert_eq!(
        fx.docket.fetch_run(&b.id).await.expect("b").status,
        RunStatus::Done
    );
    let err = fx
        .docket
        .retry_poisoned_run(&a.id)
        .await
        .expect_err("terminal");
    assert!(
        matches!(err, DocketError::Store(StoreError::InactiveRun)),
        "{err}"
    );
    assert!(matches!(
        fx.docket.cancel_run(&b.id).await,
        Err(DocketError::Runtime(e)) if e.kind == ErrorKind::InactiveRun
    ));
}

#[tokio::test]
async fn drain_runs_needs_a_testing_mode() {
    let fx = Fx::with(
        TestingMode::Off,
        docket::nodes::registry(),
        WorkerConfig::default(),
    );
    assert!(matches!(
        fx.docket.drain_runs(1).await,
        Err(DocketError::TestingModeRequired)
    ));
}
