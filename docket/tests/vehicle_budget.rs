//! Drain budgets (scenarios 32–40 of `docs/scenarios.md`).

mod support;

use std::sync::Arc;

use serde_json::Value;

use docket::core::model::{Clock, EventType, RunId, RunStatus};
use docket::core::runtime::ParkKind;
use docket::core::store::StoreError;
use docket::engine::{BudgetFired, DrainBudget, DrainOutcome, ScriptedMonotonic, WorkerConfig};

use support::graphs::{approval, endless, flaky, steps};
use support::scripted::CommitScript;
use support::{Parts, VFx};

fn budget(max_moments: Option<u32>, max_elapsed_ms: u64) -> WorkerConfig {
    WorkerConfig {
        drain_budget: DrainBudget {
            max_moments,
            max_elapsed_ms,
        },
        max_attempt_elapsed_ms: max_elapsed_ms.min(2_000),
        graph_cache: false,
        ..WorkerConfig::default()
    }
}

/// `(checkpoint_type, wake_disposition, park_reason)` of every checkpoint event.
async fn envelopes(fx: &VFx, run_id: &RunId) -> Vec<(String, String, String)> {
    let text = |e: &docket::core::model::Event, k: &str| {
        e.metadata
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    fx.events(run_id)
        .await
        .iter()
        .filter(|e| e.event_type == EventType::CheckpointCommitted)
        .map(|e| {
            (
                text(e, "checkpoint_type"),
                text(e, "wake_disposition"),
                text(e, "park_reason"),
            )
        })
        .collect()
}

fn yields(envelopes: &[(String, String, String)]) -> usize {
    envelopes.iter().filter(|e| e.2 == "drain_budget").count()
}

#[tokio::test]
async fn max_moments_bounds_consecutive_commits_and_yields_the_nth_continuing_moment() {
    let fx = VFx::new(budget(Some(4), 3_000));
    let run = fx.start(&endless(Some(1_000))).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Immediate));
    assert_eq!(
        (drained.committed_moments, drained.budget),
        (4, Some(BudgetFired::MaxMoments))
    );
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.checkpoint_seq, 5, "init + 4");
    let env = envelopes(&fx, &run.id).await;
    assert_eq!(yields(&env), 1);
    assert_eq!(
        env.last().cloned(),
        Some((
            "step_committed".into(),
            "immediate".into(),
            "drain_budget".into()
        ))
    );
    assert!(
        !info.is_claimed() && info.wake_at.is_some(),
        "re-claimable at once"
    );
    fx.claim_and_drain().await;
    assert_eq!(fx.info(&run.id).await.run.checkpoint_seq, 9);
}

#[tokio::test]
async fn max_moments_of_one_still_commits_one_moment_of_progress_per_drain() {
    let fx = VFx::new(budget(Some(1), 3_000));
    let run = fx.start(&endless(Some(1_000))).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.committed_moments, 1);
    let info = fx.info(&run.id).await;
    assert_eq!((info.run.checkpoint_seq, info.run.step), (2, 1));
}

#[tokio::test]
async fn the_elapsed_budget_yields_at_the_first_pre_commit_boundary_observing_expiry() {
    let fx = VFx::with(
        budget(None, 1_000),
        Parts {
            monotonic: Some(Arc::new(ScriptedMonotonic::new([0, 500, 1_500]))),
            ..Parts::default()
        },
    );
    let run = fx.start(&endless(Some(1_000))).await;
    let lease = fx.claim().await;
    // The wall clock running backwards has no effect on the budget.
    fx.clock.set(fx.clock.now().add_millis(-60_000));
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Immediate));
    assert_eq!(
        drained.committed_moments, 2,
        "the second commit is the yield"
    );
    assert_eq!(drained.budget, Some(BudgetFired::MaxElapsed));
    assert_eq!(drained.elapsed_ms, 1_500);
    assert_eq!(yields(&envelopes(&fx, &run.id).await), 1);
}

#[tokio::test]
async fn count_and_elapsed_limits_firing_together_produce_one_yield() {
    let fx = VFx::with(
        budget(Some(1), 1_000),
        Parts {
            monotonic: Some(Arc::new(ScriptedMonotonic::new([0, 1_500]))),
            ..Parts::default()
        },
    );
    let run = fx.start(&endless(Some(1_000))).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(
        (drained.committed_moments, drained.budget),
        (1, Some(BudgetFired::Both))
    );
    assert_eq!(yields(&envelopes(&fx, &run.id).await), 1);
}

#[tokio::test]
async fn a_terminal_moment_wins_at_the_exact_budget_boundary() {
    // steps(1): a step (continue) then the completion (terminal) as the 2nd commit.
    let fx = VFx::new(budget(Some(2), 3_000));
    let run = fx.start(&steps(1)).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!((drained.committed_moments, drained.budget), (2, None));
    assert_eq!(fx.info(&run.id).await.run.status, RunStatus::Done);
}

#[tokio::test]
async fn retry_and_external_wait_parks_win_at_the_exact_budget_boundary() {
    let fx = VFx::new(budget(Some(1), 3_000));
    let retry = fx.start(&flaky(1, 2, 500)).await;
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Parked(ParkKind::At(_))
    ));
    assert_eq!(drained.budget, None);
    assert_eq!(yields(&envelopes(&fx, &retry.id).await), 0);

    let gate = fx.start(&approval()).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::External));
    assert_eq!(drained.budget, None);
    assert_eq!(fx.info(&gate.id).await.run.status, RunStatus::Waiting);
}

#[tokio::test]
async fn a_max_supersteps_failure_wins_over_a_coincident_drain_budget() {
    // Two continuing supersteps, then the max_supersteps failure as the 3rd commit.
    let fx = VFx::new(budget(Some(3), 3_000));
    let run = fx.start(&endless(Some(2))).await;
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!((drained.committed_moments, drained.budget), (3, None));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Failed);
    assert_eq!(yields(&envelopes(&fx, &run.id).await), 0);
}

#[tokio::test]
async fn cancellation_wins_over_the_drain_budget_as_fence_loss_never_a_yield() {
    let fx = VFx::new(budget(Some(1), 3_000));
    let run = fx.start(&endless(Some(1_000))).await;
    let mut lease = fx.claim().await;
    fx.docket.cancel_run(&run.id).await.expect("cancel");
    // The vehicle reads the run (no run handed over with the lease) and finds the cancel.
    lease.run = None;
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(drained.outcome, DrainOutcome::FenceLost);
    assert_eq!((drained.committed_moments, drained.budget), (0, None));
    assert_eq!(yields(&envelopes(&fx, &run.id).await), 0);
}

#[tokio::test]
async fn a_failed_yield_commit_reports_no_committed_yield() {
    for failure in [
        StoreError::StaleCheckpoint,
        StoreError::EventConflict { seq: 3 },
    ] {
        let fx = VFx::new(budget(Some(1), 3_000));
        let run = fx.start(&endless(Some(1_000))).await;
        let before = fx.docket.fetch_run(&run.id).await.expect("run");
        fx.store.script_commits([CommitScript::Fail(failure)]);
        let drained = fx.claim_and_drain().await;
        assert!(matches!(drained.outcome, DrainOutcome::Discarded(_)));
        assert_eq!((drained.committed_moments, drained.budget), (0, None));
        assert_eq!(fx.docket.fetch_run(&run.id).await.expect("run"), before);
    }
}

/// Scenario 56 of `docs/scenarios.md`: one claim at a time (concurrency one), an endless cycle that
/// was claimed first yields at its budget with a wake of *now*, so the shorter run — due since
/// before — is the older candidate and completes next; the cycle gets its next turn afterwards.
#[tokio::test]
async fn at_concurrency_one_an_endless_cycle_yields_and_the_older_due_run_completes() {
    let fx = VFx::new(budget(Some(3), 3_000));
    let endless_run = fx.start(&endless(None)).await;
    fx.clock.advance_millis(1);
    let short = fx.start(&steps(2)).await;
    fx.clock.advance_millis(10);

    let lease = fx.claim().await;
    assert_eq!(lease.run_id, endless_run.id, "the cycle was due first");
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(drained.budget, Some(BudgetFired::MaxMoments));
    assert_eq!(
        fx.info(&endless_run.id).await.wake_at,
        Some(fx.clock.now()),
        "yielded: due again at once, but not before the older run"
    );

    let lease = fx.claim().await;
    assert_eq!(lease.run_id, short.id, "the older due run is claimed next");
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(fx.info(&short.id).await.run.status, RunStatus::Done);

    let lease = fx.claim().await;
    assert_eq!(lease.run_id, endless_run.id, "the cycle resumes after");
}
