//! Chained completion (`docs/engine.md`, “Chained completion”): a barrier whose run then has
//! nothing left to run is committed with its completion in one store call, each under its own
//! fence, and every way that call can end leaves the history two calls would.

mod support;

use serde_json::Value;

use docket::core::model::{CheckpointType, EventType, RunStatus};
use docket::core::runtime::ParkKind;
use docket::core::store::StoreError;
use docket::engine::{DrainOutcome, WorkerConfig};

use support::graphs::steps;
use support::scripted::{CommitScript, Scripted};
use support::VFx;

/// The checkpoint types of a run's history, in seq order.
async fn history(fx: &VFx, run: &docket::core::model::Run) -> Vec<String> {
    fx.events(&run.id)
        .await
        .iter()
        .filter(|e| e.event_type == EventType::CheckpointCommitted)
        .filter_map(|e| e.metadata.get("checkpoint_type").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_last_barrier_and_the_completion_go_to_the_store_in_one_call() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(drained.committed_moments, 2);
    assert_eq!(
        *fx.store.claimed_batches.lock().expect("lock"),
        vec![2],
        "one batch of the barrier and the completion"
    );
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    assert_eq!(fx.checkpoint_seqs(&run.id).await, vec![1, 2, 3]);
    assert_eq!(
        history(&fx, &run).await,
        vec![
            CheckpointType::RunInitialized.as_str(),
            CheckpointType::StepCommitted.as_str(),
            CheckpointType::RunCompleted.as_str()
        ]
    );
    assert_eq!(
        fx.observed.wait_for(2).await,
        vec![CheckpointType::StepCommitted, CheckpointType::RunCompleted],
        "observers see both checkpoints, in order"
    );
}

#[tokio::test]
async fn only_the_barrier_that_leaves_nothing_to_run_is_chained() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(3)).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(
        *fx.store.claimed_batches.lock().expect("lock"),
        vec![2],
        "the first barriers run nodes after them and go alone"
    );
    // Three barriers and the completion: four commits, the last two in the batch.
    assert_eq!(Scripted::count(&fx.store.claimed_commits), 4);
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
}

#[tokio::test]
async fn a_chain_that_landed_whole_behind_a_lost_answer_is_proven_by_one_reread() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    fx.store.script_commits([
        CommitScript::ApplyThenAmbiguous,
        CommitScript::ApplyThenAmbiguous,
    ]);
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(drained.committed_moments, 2);
    assert_eq!(fx.stats.snapshot().ambiguous_resolved, 2);
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
    assert_eq!(fx.checkpoint_seqs(&run.id).await, vec![1, 2, 3]);
    assert_eq!(
        fx.observed.wait_for(2).await,
        vec![CheckpointType::StepCommitted, CheckpointType::RunCompleted]
    );
}

#[tokio::test]
async fn a_barrier_in_doubt_before_a_completion_that_landed_is_proven_by_it() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    fx.store
        .script_commits([CommitScript::ApplyThenAmbiguous, CommitScript::Apply]);
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(drained.committed_moments, 2);
    // The completion's fence proves the barrier: nothing is re-read.
    assert_eq!(fx.stats.snapshot().ambiguous_resolved, 0);
    assert_eq!(fx.checkpoint_seqs(&run.id).await, vec![1, 2, 3]);
}

#[tokio::test]
async fn a_barrier_that_landed_without_its_completion_goes_on_to_commit_the_completion_alone() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    fx.store.script_commits([
        CommitScript::ApplyThenAmbiguous,
        CommitScript::AmbiguousNotApplied,
    ]);
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(drained.committed_moments, 2);
    assert_eq!(
        *fx.store.claimed_batches.lock().expect("lock"),
        vec![2],
        "the completion went alone the second time"
    );
    assert_eq!(Scripted::count(&fx.store.claimed_commits), 3);
    assert_eq!(fx.stats.snapshot().ambiguous_resolved, 1);
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
    assert_eq!(fx.checkpoint_seqs(&run.id).await, vec![1, 2, 3]);
}

#[tokio::test]
async fn a_completion_lost_after_its_barrier_landed_is_discarded_and_the_next_claim_completes() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    fx.store
        .script_commits([CommitScript::Apply, CommitScript::AmbiguousNotApplied]);
    let drained = fx.claim_and_drain().await;
    assert!(
        matches!(
            drained.outcome,
            DrainOutcome::Discarded(StoreError::Ambiguous { .. })
        ),
        "{:?}",
        drained.outcome
    );
    assert_eq!(drained.committed_moments, 1, "the barrier counts");
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Running);
    assert_eq!(info.run.checkpoint_seq, 2, "the barrier is durable");
    assert!(!info.is_claimed(), "the claim is released");
    let again = fx.claim_and_drain().await;
    assert_eq!(again.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(again.committed_moments, 1, "only the completion is left");
    assert_eq!(fx.checkpoint_seqs(&run.id).await, vec![1, 2, 3]);
}

#[tokio::test]
async fn a_chain_under_a_lost_claim_writes_nothing() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(1)).await;
    let before = fx.docket.fetch_run(&run.id).await.expect("run");
    fx.store.script_commits([
        CommitScript::Fail(StoreError::StaleCheckpoint),
        CommitScript::Fail(StoreError::StaleCheckpoint),
    ]);
    let drained = fx.claim_and_drain().await;
    assert_eq!(
        drained.outcome,
        DrainOutcome::Discarded(StoreError::StaleCheckpoint)
    );
    assert_eq!(drained.committed_moments, 0);
    assert_eq!(fx.info(&run.id).await.run, before);
    assert_eq!(fx.stats.snapshot().fence_losses, 1);
}
