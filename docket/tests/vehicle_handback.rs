//! Vehicle hand-backs and discards (scenarios 22–25, 28 and 43 of `docs/scenarios.md`).

mod support;

use std::sync::Arc;

use docket::core::graph::{
    compile_effective, CompileError, CompileOptions, Diagnostic, GraphDocument, RuntimeGraph,
};
use docket::core::model::{Clock, GraphHash, PoisonReason, RunStatus};
use docket::core::node::NodeRegistry;
use docket::core::runtime::{ErrorKind, ParkKind};
use docket::core::store::{AbandonOutcome, StoreError};
use docket::engine::{DrainOutcome, GraphCompiler, IncompatibleReason, WorkerConfig};

use support::graphs::{flaky, steps, timed};
use support::scripted::{CommitScript, Scripted};
use support::{Parts, VFx};

#[tokio::test]
async fn commit_fence_loss_mid_drain_discards_the_moment_and_releases_the_claim() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    let before = fx.docket.fetch_run(&run.id).await.expect("run");
    fx.store
        .script_commits([CommitScript::Fail(StoreError::StaleCheckpoint)]);
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Discarded(StoreError::StaleCheckpoint)
    ));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run, before, "run unchanged");
    assert!(!info.is_claimed(), "claim cleared");
    assert_eq!(info.wake_at, Some(fx.clock.now()), "wake set");
    assert!(
        fx.observed.seen().is_empty(),
        "no observers for a discarded moment"
    );
    assert_eq!(fx.stats.snapshot().fence_losses, 1);
}

#[tokio::test]
async fn an_event_append_failure_rolls_back_the_commit_and_releases() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&steps(2)).await;
    fx.observed.wait_for(1).await;
    fx.observed.clear();
    let before = fx.docket.fetch_run(&run.id).await.expect("run");
    fx.store
        .script_commits([CommitScript::Fail(StoreError::EventConflict { seq: 9 })]);
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Discarded(StoreError::EventConflict { .. })
    ));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run, before);
    assert!(!info.is_claimed());
    assert!(info.wake_at.is_some());
    assert!(fx.observed.seen().is_empty());
    assert_eq!(fx.stats.snapshot().discards, 1);

    // Nothing of the discarded moment survives: the next healthy drain finishes the run from
    // the last committed moment with one event per seq.
    let drained = fx.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    assert_eq!(
        fx.checkpoint_seqs(&run.id).await,
        (1..=info.run.checkpoint_seq).collect::<Vec<_>>()
    );
}

/// A compiler that always fails, or one that compiles to another hash.
#[derive(Debug)]
enum Broken {
    Fails,
    OtherHash,
}

impl GraphCompiler for Broken {
    fn compile(
        &self,
        doc: &GraphDocument,
        nodes: &NodeRegistry,
        options: CompileOptions,
    ) -> Result<RuntimeGraph, CompileError> {
        match self {
            Broken::Fails => Err(CompileError {
                diagnostics: vec![Diagnostic::error(
                    "node_module_not_loaded",
                    "/nodes/s1",
                    "gone",
                )],
            }),
            Broken::OtherHash => compile_effective(doc, nodes, options).map(|c| {
                let mut rtg = c.runtime;
                rtg.graph_hash = GraphHash::new("0".repeat(64)).expect("hash");
                rtg
            }),
        }
    }
}

#[tokio::test]
async fn a_compilation_failure_abandons_then_poisons_past_max_claim_abandons() {
    let store = Scripted::new();
    let healthy = VFx::with(
        WorkerConfig::default(),
        Parts {
            store: Some(store.clone()),
            ..Parts::default()
        },
    );
    let run = healthy.start(&steps(1)).await;
    let config = WorkerConfig {
        max_claim_abandons: 1,
        ..WorkerConfig::default()
    };
    let fx = VFx::with(
        config,
        Parts {
            compiler: Some(Arc::new(Broken::Fails)),
            store: Some(store),
            clock: Some(healthy.clock.clone()),
            ..Parts::default()
        },
    );
    let now = fx.clock.now();
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        &drained.outcome,
        DrainOutcome::Abandoned {
            disposition: AbandonOutcome::Rescheduled,
            reason: IncompatibleReason::GraphCompilationFailed { .. }
        }
    ));
    let info = fx.info(&run.id).await;
    assert_eq!((info.claim_abandons, info.claim_attempts), (1, 0));
    assert_eq!(
        info.wake_at,
        Some(now.add_millis(30_000)),
        "now + base, jitter 0"
    );
    fx.clock.advance_millis(30_000);
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Abandoned {
            disposition: AbandonOutcome::Poisoned,
            ..
        }
    ));
    let info = fx.info(&run.id).await;
    assert_eq!(
        info.poison.map(|p| p.reason),
        Some(PoisonReason::MaxClaimAbandonsExceeded)
    );
    assert!(info.wake_at.is_none() && !info.is_claimed());
    assert_eq!(fx.stats.snapshot().poisons, 1);
    assert!(
        fx.try_claim().await.is_none(),
        "a poisoned run is never claimed"
    );

    // Once the host can compile the graph again, an operator's retry makes the run due and
    // a healthy drain completes it.
    let retried = healthy
        .docket
        .retry_poisoned_run(&run.id)
        .await
        .expect("retry");
    assert_eq!(
        retried.checkpoint_seq, run.checkpoint_seq,
        "no moment consumed"
    );
    let info = healthy.info(&run.id).await;
    assert!(info.poison.is_none());
    assert_eq!((info.claim_abandons, info.claim_attempts), (0, 0));
    let drained = healthy.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    assert_eq!(healthy.info(&run.id).await.run.status, RunStatus::Done);
}

#[tokio::test]
async fn an_effective_identity_mismatch_abandons() {
    let store = Scripted::new();
    let healthy = VFx::with(
        WorkerConfig::default(),
        Parts {
            store: Some(store.clone()),
            ..Parts::default()
        },
    );
    healthy.start(&steps(1)).await;
    let fx = VFx::with(
        WorkerConfig::default(),
        Parts {
            compiler: Some(Arc::new(Broken::OtherHash)),
            store: Some(store),
            clock: Some(healthy.clock.clone()),
            ..Parts::default()
        },
    );
    let drained = fx.claim_and_drain().await;
    assert!(matches!(
        drained.outcome,
        DrainOutcome::Abandoned {
            disposition: AbandonOutcome::Rescheduled,
            reason: IncompatibleReason::EffectiveIdentityMismatch { .. }
        }
    ));
}

#[tokio::test]
async fn a_deferred_hand_back_when_the_active_superstep_has_no_due_attempt() {
    let fx = VFx::new(WorkerConfig::default());
    let run = fx.start(&flaky(1, 2, 1_000)).await;
    let drained = fx.claim_and_drain().await;
    let DrainOutcome::Parked(ParkKind::At(deadline)) = drained.outcome else {
        panic!("retry park expected, got {:?}", drained.outcome);
    };
    fx.clock.set(deadline);
    let mut lease = fx.claim().await;
    // Doctor an early claim and clock: the attempt is not due yet from the vehicle's view.
    let early = deadline.add_millis(-500);
    lease.claimed_at = early;
    fx.clock.set(early);
    let drained = fx.drain(lease).await.expect("drain");
    assert_eq!(
        drained.outcome,
        DrainOutcome::Deferred(AbandonOutcome::Rescheduled)
    );
    let info = fx.info(&run.id).await;
    assert_eq!(info.wake_at, Some(deadline));
    assert_eq!(info.claim_abandons, 1);
}

#[tokio::test]
async fn host_timeout_incompatibility_reschedules_with_exponential_pushback_and_no_poison() {
    let store = Scripted::new();
    let incompatible = WorkerConfig {
        max_attempt_elapsed_ms: 100,
        abandon_backoff_ms: 100,
        abandon_backoff_cap_ms: 300,
        max_claim_abandons: 2,
        ..WorkerConfig::default()
    };
    let fx = VFx::with(
        incompatible,
        Parts {
            store: Some(store.clone()),
            ..Parts::default()
        },
    );
    let run = fx.start(&timed(101)).await;
    for (abandons, backoff) in [(1, 100), (2, 200), (3, 300), (4, 300)] {
        let now = fx.clock.now();
        let drained = fx.claim_and_drain().await;
        assert!(
            matches!(&drained.outcome, DrainOutcome::HostIncompatible(e) if e.kind == ErrorKind::IncompatibleExecutionPolicy),
            "{:?}",
            drained.outcome
        );
        let info = fx.info(&run.id).await;
        assert_eq!(info.wake_at, Some(now.add_millis(backoff)));
        assert_eq!((info.claim_abandons, info.claim_attempts), (abandons, 0));
        assert!(!info.is_poisoned());
        fx.clock.set(now.add_millis(backoff));
    }
    let compatible = VFx::with(
        WorkerConfig {
            max_attempt_elapsed_ms: 101,
            ..WorkerConfig::default()
        },
        Parts {
            store: Some(store),
            clock: Some(fx.clock.clone()),
            ..Parts::default()
        },
    );
    let drained = compatible.claim_and_drain().await;
    assert_eq!(drained.outcome, DrainOutcome::Parked(ParkKind::Terminal));
    let info = compatible.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    assert_eq!(
        info.claim_abandons, 0,
        "committed progress resets the abandon count"
    );
}
