//! The lifecycle composer over the memory store: start, claimed moments and the complete
//! disposition-to-schedule mapping (`docs/runs-and-moments.md`, “The lifecycle”; scenarios 63, 69,
//! 70 and 80 of `docs/scenarios.md`).

mod common;

use serde_json::json;

use common::*;
use docket_core::lifecycle::{self, Lifecycle, LifecycleError, SignalError, Signalled};
use docket_core::model::{
    CheckpointType, ClaimToken, EventQuery, EventType, OwnerScope, RunStatus, Scope, Timestamp,
};
use docket_core::runtime::{Disposition, Mutation, ParkKind, ParkReason};
use docket_core::store::{RunStore, StoreErrorKind};

fn park(kind: ParkKind, reason: ParkReason) -> Disposition {
    Disposition::Park { kind, reason }
}

// ---- 69: the complete mapping ------------------------------------------------------------

#[tokio::test]
async fn start_wakes_continue_and_immediate_at_proposal_time_and_timed_parks_at_their_time() {
    let cases = [
        (Disposition::Continue, t(10)),
        (park(ParkKind::Immediate, ParkReason::DrainBudget), t(10)),
        (
            park(ParkKind::At(t(5_000)), ParkReason::RetryBackoff),
            t(5_000),
        ),
    ];
    for (i, (disposition, wake)) in cases.into_iter().enumerate() {
        let (store, graph) = store_with_graph().await;
        let mut m = init_moment(&rid(&format!("r{i}")), &graph, t(10));
        m.disposition = disposition;
        let committed = lifecycle::start(&store, &OwnerScope::Tenantless, m.clone())
            .await
            .expect("start");
        assert_eq!(committed, m, "start returns the committed moment");
        let info = store
            .inspect_run(&Scope::System, &m.run.id)
            .await
            .expect("inspect");
        assert_eq!(info.wake_at, Some(wake), "{disposition:?}");
        assert_eq!(info.claimed_at, None);
    }
}

#[tokio::test]
async fn start_refuses_external_and_terminal_first_wakes_without_calling_the_store() {
    for (disposition, label) in [
        (
            park(ParkKind::External, ParkReason::AwaitingInterrupts),
            "external",
        ),
        (
            park(ParkKind::Terminal, ParkReason::RunCompleted),
            "terminal",
        ),
    ] {
        let (store, graph) = store_with_graph().await;
        let mut m = init_moment(&rid("r1"), &graph, t(10));
        m.disposition = disposition;
        let before = store.raw_snapshot();
        let error = lifecycle::start(&store, &OwnerScope::Tenantless, m)
            .await
            .expect_err("unschedulable");
        assert!(
            matches!(error, LifecycleError::UnschedulableStart { disposition } if disposition == label),
            "{error}"
        );
        assert!(error.as_store().is_none());
        assert_eq!(store.raw_snapshot(), before);
    }
}

async fn claimed_run() -> (
    docket_core::memory::MemoryStore,
    docket_core::model::Run,
    ClaimToken,
) {
    let (store, graph) = store_with_graph().await;
    let started = lifecycle::start(
        &store,
        &OwnerScope::Tenantless,
        init_moment(&rid("r1"), &graph, t(0)),
    )
    .await
    .expect("start");
    let lease = claim_one(&store, t(1)).await;
    (store, started.run, lease.claim_token)
}

#[tokio::test]
async fn commit_moment_applies_the_claimed_mapping_for_every_disposition() {
    let cases: [(RunStatus, Disposition, Option<Timestamp>, Option<Timestamp>); 5] = [
        (RunStatus::Running, Disposition::Continue, None, Some(t(20))),
        (
            RunStatus::Running,
            park(ParkKind::Immediate, ParkReason::DrainBudget),
            Some(t(20)),
            None,
        ),
        (
            RunStatus::Running,
            park(ParkKind::At(t(900)), ParkReason::RetryBackoff),
            Some(t(900)),
            None,
        ),
        (
            RunStatus::Waiting,
            park(ParkKind::External, ParkReason::AwaitingInterrupts),
            None,
            None,
        ),
        (
            RunStatus::Done,
            park(ParkKind::Terminal, ParkReason::RunCompleted),
            None,
            None,
        ),
    ];
    for (status, disposition, wake, claimed_at) in cases {
        let (store, run, token) = claimed_run().await;
        let m = next_moment(&run, status, disposition, t(15));
        let committed =
            lifecycle::commit_moment(&store, &Scope::System, m.clone(), 1, &token, t(20))
                .await
                .expect("commit");
        assert_eq!(committed.run, m.run);
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        assert_eq!(
            (info.wake_at, info.claimed_at),
            (wake, claimed_at),
            "{disposition:?}"
        );
        assert_eq!(info.run.status, status);
    }
}

#[tokio::test]
async fn a_signal_applies_the_unclaimed_mapping_so_continue_becomes_an_immediate_wake() {
    let cases: [(RunStatus, Disposition, Option<Timestamp>); 5] = [
        (RunStatus::Running, Disposition::Continue, Some(t(30))),
        (
            RunStatus::Running,
            park(ParkKind::Immediate, ParkReason::InterruptResolved),
            Some(t(30)),
        ),
        (
            RunStatus::Running,
            park(ParkKind::At(t(800)), ParkReason::InterruptResolved),
            Some(t(800)),
        ),
        (
            RunStatus::Waiting,
            park(ParkKind::External, ParkReason::AwaitingInterrupts),
            None,
        ),
        (
            RunStatus::Cancelled,
            park(ParkKind::Terminal, ParkReason::RunCancelled),
            None,
        ),
    ];
    for (status, disposition, wake) in cases {
        let (store, run, _) = claimed_run().await;
        let outcome = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |current| {
            Ok::<_, &str>(Mutation::Commit(Box::new(next_moment(
                current,
                status,
                disposition,
                t(30),
            ))))
        })
        .await
        .expect("signal");
        assert!(outcome.is_committed());
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        assert_eq!(
            (info.wake_at, info.claimed_at),
            (wake, None),
            "{disposition:?}"
        );
    }
}

// ---- 70: failures roll back --------------------------------------------------------------

#[tokio::test]
async fn a_bad_start_stores_nothing_and_a_second_start_of_the_same_moment_conflicts() {
    let (store, graph) = store_with_graph().await;
    let mut bad = init_moment(&rid("r1"), &graph, t(0));
    bad.run.checkpoint_seq = 0;
    let before = store.raw_snapshot();
    let error = lifecycle::start(&store, &OwnerScope::Tenantless, bad)
        .await
        .expect_err("invalid");
    assert_eq!(
        error.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::InvalidTransition)
    );
    assert_eq!(
        store.raw_snapshot(),
        before,
        "no run, no events; the graph stays"
    );

    let m = init_moment(&rid("r1"), &graph, t(0));
    lifecycle::start(&store, &OwnerScope::Tenantless, m.clone())
        .await
        .expect("start");
    let before = store.raw_snapshot();
    let error = lifecycle::start(&store, &OwnerScope::Tenantless, m)
        .await
        .expect_err("again");
    assert_eq!(
        error.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::Conflict)
    );
    assert_eq!(store.raw_snapshot(), before);
}

#[tokio::test]
async fn a_bad_signal_moment_leaves_the_run_unchanged() {
    let (store, run, _) = claimed_run().await;
    let before = store.raw_snapshot();
    let error = lifecycle::signal(&store, &Scope::System, &run.id, |current| {
        let mut m = next_moment(current, RunStatus::Running, Disposition::Continue, t(5));
        m.events[0].run_id = rid("foreign");
        Ok::<_, &str>(Mutation::Commit(Box::new(m)))
    })
    .await
    .expect_err("foreign event");
    assert_eq!(
        error.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::InvalidTransition)
    );
    assert_eq!(store.raw_snapshot(), before);
}

#[tokio::test]
async fn commit_moment_with_a_lost_fence_is_stale_and_changes_nothing() {
    let (store, run, _) = claimed_run().await;
    let m = next_moment(&run, RunStatus::Running, Disposition::Continue, t(5));
    let before = store.raw_snapshot();
    let error = lifecycle::commit_moment(&store, &Scope::System, m, 1, &ClaimToken::mint(), t(5))
        .await
        .expect_err("stale");
    assert_eq!(
        error.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::StaleCheckpoint)
    );
    assert_eq!(store.raw_snapshot(), before);
}

// ---- 80: a committed signal fences out the claim holder ----------------------------------

#[tokio::test]
async fn a_committed_signal_makes_in_flight_claimed_work_lose_its_fence() {
    let (store, run, token) = claimed_run().await;
    let advance = next_moment(&run, RunStatus::Running, Disposition::Continue, t(5));
    let cancelled = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        cancel_mutation(r, t(4))
    })
    .await
    .expect("cancel");
    assert_eq!(cancelled.run().status, RunStatus::Cancelled);
    let before = store.raw_snapshot();
    let error = lifecycle::commit_moment(&store, &Scope::System, advance, 1, &token, t(6))
        .await
        .expect_err("fenced");
    assert_eq!(
        error.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::StaleCheckpoint)
    );
    assert_eq!(store.raw_snapshot(), before);
}

#[tokio::test]
async fn a_moment_committed_first_is_observed_by_a_later_cancellation() {
    let (store, run, token) = claimed_run().await;
    let advance = next_moment(&run, RunStatus::Running, Disposition::Continue, t(5));
    lifecycle::commit_moment(&store, &Scope::System, advance, 1, &token, t(5))
        .await
        .expect("advance");
    let mut seen = Vec::new();
    let outcome = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        seen.push(r.checkpoint_seq);
        cancel_mutation(r, t(6))
    })
    .await
    .expect("cancel");
    assert_eq!(seen, vec![2]);
    assert_eq!(outcome.run().checkpoint_seq, 3);
}

// ---- 63: durable interrupt resolution ----------------------------------------------------

#[tokio::test]
async fn an_interrupt_parks_the_run_and_a_resolution_signal_resumes_it() {
    let (store, run, token) = claimed_run().await;
    // An invalid moment (a foreign event) is refused and changes nothing.
    let mut waiting = next_moment(
        &run,
        RunStatus::Waiting,
        park(ParkKind::External, ParkReason::AwaitingInterrupts),
        t(5),
    );
    waiting
        .run
        .interrupts
        .insert("approve".into(), open_interrupt("approve", t(5)));
    let mut foreign = waiting.clone();
    foreign
        .events
        .push(event(&rid("elsewhere"), 4, EventType::NodeCompleted, t(5)));
    let before = store.raw_snapshot();
    let error = lifecycle::commit_moment(&store, &Scope::System, foreign, 1, &token, t(5))
        .await
        .expect_err("foreign event");
    assert_eq!(
        error.as_store().map(|e| e.kind()),
        Some(StoreErrorKind::InvalidTransition)
    );
    assert_eq!(store.raw_snapshot(), before);

    // The valid waiting moment commits and parks externally.
    lifecycle::commit_moment(&store, &Scope::System, waiting, 1, &token, t(5))
        .await
        .expect("waiting");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.run.status, info.wake_at, info.claimed_at),
        (RunStatus::Waiting, None, None)
    );

    let resolved = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        resolve_mutation(r, "approve", t(9))
    })
    .await
    .expect("resolve");
    let resumed = resolved.run();
    assert_eq!(resumed.status, RunStatus::Running);
    assert_eq!(resumed.interrupts["approve"].resolved_at, Some(t(9)));
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.wake_at, Some(t(9)));

    let page = store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 100,
            },
        )
        .await
        .expect("events");
    let checkpoints: Vec<_> = page
        .events
        .iter()
        .filter(|e| e.event_type == EventType::CheckpointCommitted)
        .map(|e| e.metadata["checkpoint_type"].clone())
        .collect();
    assert_eq!(
        checkpoints,
        vec![
            json!("run_initialized"),
            json!("interrupt_requested"),
            json!("interrupt_resolved")
        ]
    );

    // A second resolution is refused by the mutation and writes nothing.
    let before = store.raw_snapshot();
    let error = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        resolve_mutation(r, "approve", t(10))
    })
    .await
    .expect_err("already resolved");
    assert!(matches!(error, SignalError::Mutation("already_resolved")));
    assert_eq!(store.raw_snapshot(), before);
}

#[tokio::test]
async fn resolution_of_a_poisoned_run_wakes_it_and_clears_the_poison() {
    let (store, graph) = store_with_graph().await;
    let mut m = init_moment(&rid("r1"), &graph, t(0));
    m.run
        .interrupts
        .insert("approve".into(), open_interrupt("approve", t(0)));
    let run = lifecycle::start(&store, &OwnerScope::Tenantless, m)
        .await
        .expect("start")
        .run;
    let mut policy = claim_policy(t(1), 1);
    policy.max_claim_attempts = std::num::NonZeroU32::new(1).expect("nonzero");
    policy.orphan_ttl_ms = 0;
    store.claim_due(&policy).await.expect("claim");
    policy.now = t(2);
    assert_eq!(
        store
            .claim_due(&policy)
            .await
            .expect("poison")
            .poisoned
            .len(),
        1
    );
    let outcome = lifecycle::signal(&store, &Scope::Tenantless, &run.id, |r| {
        resolve_mutation(r, "approve", t(3))
    })
    .await
    .expect("resolve");
    assert!(matches!(outcome, Signalled::Committed(_)));
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert!(info.poison.is_none());
    assert_eq!(
        (info.wake_at, info.claim_attempts, info.claim_abandons),
        (Some(t(3)), 0, 0)
    );
    assert_eq!(info.run.checkpoint_seq, 2);
}

#[tokio::test]
async fn the_lifecycle_composer_without_observers_behaves_like_the_free_functions() {
    let (store, graph) = store_with_graph().await;
    let composer = Lifecycle::new();
    assert_eq!(composer.observer_count(), 0);
    let started = composer
        .start(
            &store,
            &OwnerScope::Tenantless,
            init_moment(&rid("r1"), &graph, t(0)),
        )
        .await
        .expect("start");
    assert_eq!(started.checkpoint_type, CheckpointType::RunInitialized);
    assert_eq!(composer.observer_failures(), 0);
}
