//! Vehicle drains (scenarios 16–21, 26–27 and 29–30 of `docs/scenarios.md`) and ambiguous commits
//! (`docs/engine.md`, “Ambiguous commits”).

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::json;

use docket::core::graph::{
    compile_effective, CompileError, CompileOptions, GraphDocument, RuntimeGraph,
};
use docket::core::model::{CheckpointType, ClaimToken, Clock, RunId, RunStatus, ValueMap};
use docket::core::node::NodeRegistry;
use docket::core::runtime::ParkKind;
use docket::core::store::StoreError;
use docket::engine::{
    DrainOutcome, GraphCompiler, VehicleError, WorkerConfig, DEFAULT_MAX_SUPERSTEPS,
};
use docket::StartOptions;

use support::graphs::{counter_cycle, endless, flaky, steps};
use support::scripted::{CommitScript, Scripted};
use support::{Parts, VFx};

#[tokio::test]
async fn drains_a_multi_step_run_to_done_with_one_checkpoint_event_per_commit() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(3)).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    let output = info.run.output.clone().expect("output");
    assert_eq!(output.get("f3"), Some(&json!(3)));
    let seqs = fx.checkpoint_seqs(&run.id).await;
    assert_eq!(seqs, (1..=info.run.checkpoint_seq).collect::<Vec<_>>());
    assert_eq!(
        drained.committed_moments as u64,
        info.run.checkpoint_seq - 1
    );
    assert!(!info.is_claimed() && info.wake_at.is_none());
}

#[tokio::test]
async fn post_commit_observers_fire_per_committed_moment() {
    let fx = VFx::new(WorkerConfig::default());
    fx.start(&steps(1)).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    fx.claim_and_drain().await;
    assert_eq!(
        fx.observed.wait_for(2).await,
        vec![CheckpointType::StepCommitted, CheckpointType::RunCompleted]
    );
}

#[tokio::test]
async fn a_cyclic_graph_drains_to_done_bounded_by_its_own_policy() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&counter_cycle(10)).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    assert_eq!(info.run.output.expect("output").get("n"), Some(&json!(10)));
}

#[tokio::test]
async fn a_host_max_supersteps_budget_fails_the_run_terminally() {
    let fx = VFx::new(WorkerConfig {
        max_supersteps: Some(1),
        ..WorkerConfig::default()
    });
    let run = fx.start(&endless(None)).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Failed);
    assert_eq!(
        info.run.failure.expect("failure").code,
        "max_supersteps_exceeded"
    );
}

#[tokio::test]
async fn a_run_that_never_ends_fails_at_the_default_superstep_ceiling() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&endless(None)).await;
    // Each drain yields after its budget of moments; the run is due again at once.
    let mut drains = 0;
    loop {
        let drained = fx.claim_and_drain().await;
        drains += 1;
        if drained.outcome == DrainOutcome::Parked(ParkKind::Terminal) {
            break;
        }
        assert!(drains < 1_000, "still running after {drains} drains");
    }
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Failed);
    assert_eq!(info.run.step, DEFAULT_MAX_SUPERSTEPS);
    assert_eq!(
        info.run.failure.expect("failure").code,
        "max_supersteps_exceeded"
    );
}

#[tokio::test]
async fn retry_parking_commits_retry_scheduled_schedules_the_wake_and_exits_without_sleeping() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&flaky(2, 3, 0)).await;
    let drained = fx.claim_and_drain().await;
    let deadline = fx.clock.now();
    assert_eq!(
        drained.outcome,
        DrainOutcome::Parked(ParkKind::At(deadline))
    );
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Running);
    assert_eq!(info.run.active_tasks.len(), 1);
    assert_eq!(info.run.timers.len(), 1);
    assert_eq!(info.wake_at, Some(deadline));
    assert!(!info.is_claimed());
    // Re-claimed at the deadline: the second attempt fails again, the third completes.
    assert!(matches!(
        fx.claim_and_drain().await.outcome,
        DrainOutcome::Parked(ParkKind::At(_))
    ));
    assert_eq!(
        fx.claim_and_drain().await.outcome,
        DrainOutcome::Parked(ParkKind::Terminal)
    );
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
}

#[tokio::test]
async fn fence_lost_between_claim_and_fetch_stops_without_commit() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    let mut lease = fx.claim().await;
    // A store that hands no run over with the lease: the vehicle reads it and finds the
    // cancel there.
    lease.run = None;
    let cancelled = fx.docket.cancel_run(&run.id).await.expect("cancel");
    fx.observed.wait_for(2).await;
    fx.observed.clear();
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(drained.outcome, DrainOutcome::FenceLost);
    assert_eq!(drained.committed_moments, 0);
    assert_eq!(fx.docket.fetch_run(&run.id).await.expect("run"), cancelled);
    assert!(
        fx.observed.seen().is_empty(),
        "nothing was committed by the vehicle"
    );
    assert_eq!(fx.stats.snapshot().fence_losses, 1);
}

#[tokio::test]
async fn a_cancel_between_claim_and_start_is_caught_by_the_first_moments_fence() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    let lease = fx.claim().await;
    assert!(lease.run.is_some(), "the memory store hands the run over");
    let cancelled = fx.docket.cancel_run(&run.id).await.expect("cancel");
    fx.observed.wait_for(2).await;
    fx.observed.clear();
    // The vehicle starts from the run at the lease's checkpoint, without reading it; the
    // cancel is found when its first moment loses the fence, and nothing of it lands.
    let fetches = Scripted::count(&fx.store.fetches);
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(
        Scripted::count(&fx.store.fetches),
        fetches,
        "the vehicle read nothing: it had the run"
    );
    assert_eq!(
        drained.outcome,
        DrainOutcome::Discarded(StoreError::StaleCheckpoint)
    );
    assert_eq!(drained.committed_moments, 0);
    assert_eq!(fx.docket.fetch_run(&run.id).await.expect("run"), cancelled);
    assert!(
        fx.observed.seen().is_empty(),
        "nothing was committed by the vehicle"
    );
    assert_eq!(fx.stats.snapshot().fence_losses, 1);
}

/// Counts compilations.
#[derive(Debug, Default)]
struct Counting {
    compiles: AtomicU32,
}

impl GraphCompiler for Counting {
    fn compile(
        &self,
        doc: &GraphDocument,
        nodes: &NodeRegistry,
        options: CompileOptions,
    ) -> Result<RuntimeGraph, CompileError> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        compile_effective(doc, nodes, options).map(|c| c.runtime)
    }
}

#[tokio::test]
async fn one_compilation_per_drain_even_across_many_committed_moments() {
    let compiler = Arc::new(Counting::default());
    let fx = VFx::with(
        WorkerConfig::default(),
        Parts {
            compiler: Some(compiler.clone()),
            ..Parts::default()
        },
    );
    fx.start(&steps(5)).await;
    compiler.compiles.store(0, Ordering::SeqCst);
    let lease = fx.claim().await;
    let drained = fx
        .vehicle()
        .without_cache()
        .drain(lease)
        .await
        .expect("drain");
    assert!(drained.committed_moments >= 5);
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_graph_cache_eliminates_compilation_on_the_next_drain_of_the_same_version() {
    let compiler = Arc::new(Counting::default());
    let fx = VFx::with(
        WorkerConfig::default(),
        Parts {
            compiler: Some(compiler.clone()),
            ..Parts::default()
        },
    );
    // Another facade (another process: its own engine and graph cache) starts the runs, so
    // the vehicles below meet the version with a cold cache.
    let starter = support::builder(fx.store.clone(), docket::nodes::registry(), &fx.clock)
        .build()
        .expect("starter");
    let graph = starter
        .save_graph_json(&steps(2).to_string())
        .await
        .expect("save");
    for _ in 0..2 {
        starter
            .start_run(&graph, ValueMap::new(), StartOptions::default())
            .await
            .expect("start");
    }
    compiler.compiles.store(0, Ordering::SeqCst);
    let fetches = Scripted::count(&fx.store.graph_fetches);
    fx.claim_and_drain().await;
    fx.claim_and_drain().await;
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 1);
    assert_eq!(
        Scripted::count(&fx.store.graph_fetches),
        fetches + 1,
        "one vehicle fetch"
    );
}

#[tokio::test]
async fn a_claimed_non_runnable_or_missing_row_is_a_claim_invariant_violation() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    let mut lease = fx.claim().await;
    let cancelled = fx.docket.cancel_run(&run.id).await.expect("cancel");
    // A lease that (wrongly) matches the cancelled run's seq, read by the vehicle (no run
    // handed over): status is checked after the fence.
    lease.run = None;
    lease.checkpoint_seq = cancelled.checkpoint_seq;
    let err = fx.drain(lease.clone()).await.expect_err("not runnable");
    assert!(matches!(err, VehicleError::ClaimInvariant { .. }), "{err}");
    lease.run_id = RunId::new("run_missing").expect("id");
    let err = fx.drain(lease).await.expect_err("missing");
    assert!(matches!(err, VehicleError::ClaimInvariant { .. }), "{err}");
    assert_eq!(fx.stats.snapshot().vehicle_crashes, 2);
}

#[tokio::test]
async fn a_rejected_claimed_commit_is_a_claim_invariant_violation_and_keeps_the_claim() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    let before = fx.docket.fetch_run(&run.id).await.expect("run");
    fx.store
        .script_commits([CommitScript::Fail(StoreError::invalid_transition(
            "identity mismatch",
        ))]);
    let lease = fx.claim().await;
    let err = fx.drain(lease).await.expect_err("rejected");
    assert!(
        matches!(&err, VehicleError::ClaimInvariant { reason, .. } if reason.contains("invalid transition")),
        "{err}"
    );
    let info = fx.info(&run.id).await;
    assert_eq!(info.run, before, "run unchanged");
    assert!(info.is_claimed(), "the claim is left to expire");
    assert_eq!(Scripted::count(&fx.store.releases), 0);
}

#[tokio::test]
async fn an_ambiguous_commit_that_landed_is_resolved_by_rereading_and_the_drain_continues() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(3)).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    fx.store.script_commits([CommitScript::ApplyThenAmbiguous]);
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    let seqs = fx.checkpoint_seqs(&run.id).await;
    assert_eq!(
        seqs,
        (1..=info.run.checkpoint_seq).collect::<Vec<_>>(),
        "no moment twice"
    );
    assert_eq!(fx.stats.snapshot().ambiguous_resolved, 1);
    // The moment proven durable by the re-read is announced like any other: observers see
    // every committed checkpoint of the drain, the ambiguous one included.
    let committed_by_the_drain = usize::try_from(info.run.checkpoint_seq - 1).expect("small");
    assert_eq!(
        fx.observed.wait_for(committed_by_the_drain).await.len(),
        committed_by_the_drain
    );
}

#[tokio::test]
async fn an_ambiguous_commit_that_did_not_land_is_discarded_and_the_claim_released() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(3)).await;
    let before = fx.docket.fetch_run(&run.id).await.expect("run");
    fx.store.script_commits([CommitScript::AmbiguousNotApplied]);
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Discarded(StoreError::Ambiguous { .. })
    ));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run, before);
    assert!(!info.is_claimed());
    assert_eq!(info.wake_at, Some(fx.clock.now()));
    assert_eq!(
        Scripted::count(&fx.store.claimed_commits),
        1,
        "never retried blindly"
    );
    // A later healthy drain completes the run.
    assert_eq!(
        fx.claim_and_drain().await.outcome,
        DrainOutcome::Parked(ParkKind::Terminal)
    );
}

#[tokio::test]
async fn a_lease_with_a_stale_token_cannot_commit_and_does_not_disturb_the_holder() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    let mut lease = fx.claim().await;
    lease.claim_token = ClaimToken::mint();
    let drained = fx.drain(lease).await.expect("drain");
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Discarded(StoreError::StaleCheckpoint)
    ));
    assert!(
        fx.info(&run.id).await.is_claimed(),
        "the real holder keeps its claim"
    );
}

/// Scenario 46 of `docs/scenarios.md`: an attempt that outlives `max_attempt_elapsed_ms` is aborted
/// and, under a retry policy, parked durably: `retry_scheduled` committed, a future wake, the claim
/// released.
#[tokio::test]
async fn an_attempt_timeout_commits_durable_retry_state_and_releases_the_claim() {
    let fx = VFx::new(WorkerConfig {
        max_attempt_elapsed_ms: 50,
        ..WorkerConfig::default()
    });
    let graph = json!({
        "schema_version": 1, "id": "stuck",
        "fields": {"x": {"schema": {"type": "boolean"}}},
        "outputs": {"x": {}},
        "nodes": {"stuck": {
            "implementation": "std.sleep_ms",
            "config": {"ms": 600_000, "values": {"x": true}},
            "policies": {"retry": {"max_attempts": 3, "backoff_ms": 1_000}}
        }},
        "edges": {"begin": {"from": "$start", "to": "stuck"}, "end": {"from": "stuck", "to": "$finish"}}
    });
    let run = fx.start(&graph).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    let drained = fx.claim_and_drain().await;
    let info = fx.info(&run.id).await;
    let DrainOutcome::Parked(ParkKind::At(deadline)) = drained.outcome else {
        panic!("expected a timed park, got {:?}", drained.outcome);
    };
    assert!(deadline > fx.clock.now(), "the retry waits for its backoff");
    assert_eq!(info.wake_at, Some(deadline));
    assert!(!info.is_claimed(), "the claim is released");
    assert_eq!(info.run.status, RunStatus::Running);
    assert_eq!(
        info.run.checkpoint_seq,
        run.checkpoint_seq + 1,
        "one moment"
    );
    assert_eq!(
        fx.observed.wait_for(1).await,
        vec![CheckpointType::RetryScheduled]
    );
    assert!(
        fx.try_claim().await.is_none(),
        "not due before its deadline"
    );
}

/// Scenario 31 of `docs/scenarios.md`: the launcher the dispatcher uses hands back the whole drain
/// as one future: nothing runs until it is polled (the dispatcher spawns it on its task set), and
/// polled to the end it drains the claimed run to its park.
#[tokio::test]
async fn the_vehicle_launcher_returns_the_drain_as_a_future_the_caller_runs() {
    use docket::engine::{Launcher, VehicleLauncher};

    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    let lease = fx.claim().await;
    let launched = VehicleLauncher::new(fx.vehicle())
        .launch(lease)
        .expect("a vehicle launch never refuses");
    assert_eq!(
        fx.info(&run.id).await.run.checkpoint_seq,
        run.checkpoint_seq,
        "nothing ran before the future was polled"
    );
    tokio::spawn(launched).await.expect("the drain task ends");
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    assert!(!info.is_claimed());
}
