//! End-to-end drains (`docs/implementing-a-store.md`, “The conformance suite”): claim → the real
//! moment loop (`propose_advance`) → `lifecycle::commit_moment` under the double fence →
//! completion, plus signals through `lifecycle::signal`. Built only from `docket-core`, as a
//! worker's vehicle would be.

use std::sync::Arc;

use docket_core::lifecycle::{self, LifecycleError, SignalError, Signalled};
use docket_core::model::{Clock, ManualClock};
use docket_core::runtime::{
    cancel_run, propose_advance, resolve_interrupt, Disposition, ErrorKind, ParkKind, ParkReason,
    Proposal, RuntimeConfig, SequentialIds,
};
use docket_core::store::Backend;
use serde_json::Value;

use crate::cases::prelude::*;
use crate::fixtures::registry;

/// How a drain ended.
#[derive(Debug, PartialEq)]
enum Stop {
    /// A commit released the claim with this disposition.
    Released(Disposition),
    /// Nothing to commit (waiting, parked or terminal); the claim was released.
    Idle,
    /// A commit lost its fence.
    FenceLost,
}

/// What one drain committed.
#[derive(Debug)]
struct Drained {
    run: Run,
    checkpoints: Vec<CheckpointType>,
    stop: Stop,
}

fn config(clock: &ManualClock) -> RuntimeConfig {
    RuntimeConfig::new(Arc::new(clock.clone())).with_ids(Arc::new(SequentialIds::new()))
}

/// Drains `lease` as a vehicle does: at most `budget` moments, the last continuing one
/// narrowed to a drain-budget yield.
async fn drain(
    store: &dyn Backend,
    graph: &Published,
    lease: &ClaimLease,
    clock: &ManualClock,
    budget: usize,
) -> Drained {
    let scope = Scope::from(&lease.owner);
    let mut run = ok(store.fetch_run(&scope, &lease.run_id).await, "fetch_run");
    assert_eq!(
        run.checkpoint_seq, lease.checkpoint_seq,
        "the lease's fence is current"
    );
    let nodes = registry();
    let config = config(clock);
    let mut checkpoints = Vec::new();
    for n in 1..=budget {
        let proposal = ok(
            propose_advance(&graph.rtg, &run, &nodes, &config).await,
            "propose_advance",
        );
        let Proposal::Moment(moment) = proposal else {
            ok(
                store
                    .release_claim(&lease.run_id, &lease.claim_token, clock.now())
                    .await,
                "release_claim",
            );
            return Drained {
                run,
                checkpoints,
                stop: Stop::Idle,
            };
        };
        let moment = if n == budget && moment.disposition == Disposition::Continue {
            ok(moment.yield_for(ParkReason::DrainBudget), "yield_for")
        } else {
            *moment
        };
        let expected = run.checkpoint_seq;
        match lifecycle::commit_moment(
            store,
            &scope,
            moment,
            expected,
            &lease.claim_token,
            clock.now(),
        )
        .await
        {
            Ok(committed) => {
                run = committed.run;
                checkpoints.push(committed.checkpoint_type);
                if committed.disposition != Disposition::Continue {
                    return Drained {
                        run,
                        checkpoints,
                        stop: Stop::Released(committed.disposition),
                    };
                }
            }
            Err(LifecycleError::Store(StoreError::StaleCheckpoint)) => {
                return Drained {
                    run,
                    checkpoints,
                    stop: Stop::FenceLost,
                };
            }
            Err(other) => panic!("commit_moment failed: {other}"),
        }
    }
    panic!("a drain budget of {budget} always ends in a yield")
}

/// Asserts the run's events are numbered 1..=event_seq and its checkpoint events 1..=seq.
async fn assert_event_history(env: &Env<'_>, run: &Run) {
    let events = env.all_events(&run.id).await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=run.event_seq).collect::<Vec<_>>());
    let checkpoints: Vec<u64> = events
        .iter()
        .filter(|e| e.event_type == EventType::CheckpointCommitted)
        .filter_map(|e| e.metadata.get("checkpoint_seq").and_then(Value::as_u64))
        .collect();
    assert_eq!(checkpoints, (1..=run.checkpoint_seq).collect::<Vec<_>>());
}

async fn assert_never_claimed(env: &Env<'_>, now: Timestamp) {
    let batch = env
        .unchanged(env.store().claim_due(&claim_policy(now, 10)))
        .await;
    assert_eq!(batch.outcome_count(), 0);
}

const STEP: CheckpointType = CheckpointType::StepCommitted;

/// A three-node chain drains to done under one claim: three barrier commits and a completion,
/// every commit fenced, the event history gapless, the run never claimable again.
pub async fn a_linear_graph_drains_to_done_under_one_claim(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Linear)
        .await;
    env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(0)).await;
    let drained = drain(&**env.store(), &graph, &lease, &clock, 100).await;
    assert_eq!(
        drained.checkpoints,
        [STEP, STEP, STEP, CheckpointType::RunCompleted]
    );
    assert_eq!(
        drained.stop,
        Stop::Released(crate::fixtures::disposition_for(RunStatus::Done))
    );
    let run = env.fetch(&lease.run_id).await;
    assert_eq!(run, drained.run);
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.output, Some(map(json!({"count": 3}))));
    assert_eq!(run.checkpoint_seq, 5);
    assert_event_history(env, &run).await;
    let info = env.inspect(&run.id).await;
    assert_eq!(
        (info.wake_at, info.claimed_at, info.claim_attempts),
        (None, None, 0)
    );
    assert_never_claimed(env, t(1_000_000)).await;
}

/// A drain-budget yield parks the run for an immediate wake; the next claim continues where
/// it stopped and finishes.
pub async fn a_drain_budget_yield_parks_immediately_and_the_next_claim_continues(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Linear)
        .await;
    env.start(&graph, "r1", t(0)).await;
    let first = env.claim(t(0)).await;
    let drained = drain(&**env.store(), &graph, &first, &clock, 2).await;
    assert_eq!(drained.checkpoints, [STEP, STEP]);
    assert_eq!(
        drained.stop,
        Stop::Released(Disposition::Park {
            kind: ParkKind::Immediate,
            reason: ParkReason::DrainBudget
        })
    );
    assert_eq!(env.inspect(&first.run_id).await.wake_at, Some(t(0)));
    let second = env.claim(t(0)).await;
    assert_eq!(second.checkpoint_seq, 3);
    let rest = drain(&**env.store(), &graph, &second, &clock, 100).await;
    assert_eq!(rest.checkpoints, [STEP, CheckpointType::RunCompleted]);
    assert_eq!(rest.run.output, Some(map(json!({"count": 3}))));
    assert_event_history(env, &rest.run).await;
}

/// A retryable failure parks the run until its backoff; claimed after it, the retry succeeds.
pub async fn a_retry_parks_until_its_backoff_and_then_completes(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Retry)
        .await;
    env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(0)).await;
    let parked = drain(&**env.store(), &graph, &lease, &clock, 100).await;
    assert_eq!(parked.checkpoints, [CheckpointType::RetryScheduled]);
    let due = t(1_000);
    assert_eq!(
        parked.stop,
        Stop::Released(Disposition::Park {
            kind: ParkKind::At(due),
            reason: ParkReason::RetryBackoff
        })
    );
    assert_eq!(env.inspect(&lease.run_id).await.wake_at, Some(due));
    assert_never_claimed(env, due.add_micros(-1)).await;
    clock.set(due);
    let retry = env.claim(due).await;
    let done = drain(&**env.store(), &graph, &retry, &clock, 100).await;
    assert_eq!(done.run.status, RunStatus::Done);
    assert_eq!(done.run.output, Some(map(json!({"result": 7}))));
    assert_event_history(env, &done.run).await;
}

/// An interrupt leaves the run waiting and unclaimable; a resolution signal makes it due and
/// the next drain completes it with the resolved value.
pub async fn an_interrupt_waits_until_a_resolution_signal_resumes_it(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Ask)
        .await;
    let run = env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(0)).await;
    let paused = drain(&**env.store(), &graph, &lease, &clock, 100).await;
    assert_eq!(paused.checkpoints, [CheckpointType::InterruptRequested]);
    assert_eq!(paused.run.status, RunStatus::Waiting);
    assert_never_claimed(env, t(1_000_000)).await;
    clock.set(t(500));
    let rtg = graph.rtg.clone();
    let signalled = lifecycle::signal(&**env.store(), &Scope::Tenantless, &run.id, |current| {
        resolve_interrupt(&rtg, current, "approval", json!(true), t(500))
    })
    .await;
    let signalled = match signalled {
        Ok(s) => s,
        Err(e) => panic!("resolve failed: {e:?}"),
    };
    assert!(signalled.is_committed());
    assert_eq!(signalled.run().status, RunStatus::Running);
    assert_eq!(env.inspect(&run.id).await.wake_at, Some(t(500)));
    let resumed = env.claim(t(500)).await;
    let done = drain(&**env.store(), &graph, &resumed, &clock, 100).await;
    assert_eq!(done.run.status, RunStatus::Done);
    assert_eq!(done.run.output, Some(map(json!({"decision": true}))));
    assert_event_history(env, &done.run).await;
}

/// Resolving an already resolved interrupt is refused by the mutation; nothing is written.
pub async fn resolving_a_resolved_interrupt_writes_nothing(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Ask)
        .await;
    let run = env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(0)).await;
    drain(&**env.store(), &graph, &lease, &clock, 100).await;
    let rtg = graph.rtg.clone();
    let resolve = |current: &Run| resolve_interrupt(&rtg, current, "approval", json!(true), t(5));
    ok(
        lifecycle::signal(&**env.store(), &Scope::System, &run.id, resolve)
            .await
            .map_err(|e| format!("{e:?}")),
        "first resolution",
    );
    let before = env.snapshot().await;
    let again = lifecycle::signal(&**env.store(), &Scope::System, &run.id, resolve).await;
    assert!(
        matches!(&again, Err(SignalError::Mutation(e)) if e.kind == ErrorKind::AlreadyResolved),
        "{again:?}"
    );
    crate::env::assert_same_bytes(&before, &env.snapshot().await, "a refused resolution");
}

/// A cancellation signal fences out a vehicle mid-moment: its commit is stale and changes
/// nothing; the run stays cancelled.
pub async fn a_cancel_signal_fences_out_an_in_flight_vehicle(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Linear)
        .await;
    let run = env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(0)).await;
    let proposal = ok(
        propose_advance(&graph.rtg, &run, &registry(), &config(&clock)).await,
        "propose_advance",
    );
    let Proposal::Moment(moment) = proposal else {
        panic!("the first superstep proposes a moment");
    };
    let cancelled = lifecycle::signal(&**env.store(), &Scope::System, &run.id, |current| {
        cancel_run(current, t(1))
    })
    .await;
    assert!(
        matches!(cancelled, Ok(Signalled::Committed(_))),
        "{cancelled:?}"
    );
    env.rejected(
        K::StaleCheckpoint,
        env.store().commit_claimed(
            &Scope::System,
            claimed_commit(&moment, &lease.claim_token, t(2)),
            moment.events.clone(),
        ),
    )
    .await;
    let stored = env.fetch(&run.id).await;
    assert_eq!(stored.status, RunStatus::Cancelled);
    assert_event_history(env, &stored).await;
}

/// Cancelling a cancelled run commits nothing the second time.
pub async fn cancelling_twice_commits_once(env: &Env<'_>) {
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Linear)
        .await;
    let run = env.start(&graph, "r1", t(0)).await;
    let cancel = |current: &Run| cancel_run(current, t(1));
    let first = lifecycle::signal(&**env.store(), &Scope::System, &run.id, cancel).await;
    assert!(matches!(first, Ok(Signalled::Committed(_))), "{first:?}");
    let before = env.snapshot().await;
    let second = lifecycle::signal(&**env.store(), &Scope::System, &run.id, cancel).await;
    assert!(matches!(second, Ok(Signalled::Unchanged(_))), "{second:?}");
    crate::env::assert_same_bytes(&before, &env.snapshot().await, "a repeated cancellation");
}

/// A permanently failing node fails the run: terminal, with its failure, never claimed
/// again, and not recoverable as poison.
pub async fn a_permanently_failing_node_fails_the_run(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Fail)
        .await;
    env.start(&graph, "r1", t(0)).await;
    let lease = env.claim(t(0)).await;
    let drained = drain(&**env.store(), &graph, &lease, &clock, 100).await;
    assert_eq!(drained.checkpoints, [CheckpointType::RunFailed]);
    let run = env.fetch(&lease.run_id).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(
        run.failure.as_ref().map(|f| f.code.as_str()),
        Some("node_failed")
    );
    assert_event_history(env, &run).await;
    assert_never_claimed(env, t(1_000_000)).await;
    env.rejected(
        K::InactiveRun,
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(5)),
    )
    .await;
}

/// A vehicle whose lease was stolen is fenced at its next commit; the thief finishes the run
/// and the history holds each moment once.
pub async fn a_stolen_lease_fences_the_old_vehicle_and_the_thief_finishes(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env.publish_graph(&tenant("a"), SuiteGraph::Linear).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let slow = env.claim(t(0)).await;
    let proposal = ok(
        propose_advance(&graph.rtg, &run, &registry(), &config(&clock)).await,
        "propose_advance",
    );
    let Proposal::Moment(late) = proposal else {
        panic!("the first superstep proposes a moment");
    };
    clock.set(t(60_001));
    let thief = env.claim(t(60_001)).await;
    assert_eq!(thief.claim_attempt, 2);
    let done = drain(&**env.store(), &graph, &thief, &clock, 100).await;
    assert_eq!(done.run.status, RunStatus::Done);
    let before = env.snapshot().await;
    let result = lifecycle::commit_moment(
        &**env.store(),
        &Scope::from(&slow.owner),
        *late,
        run.checkpoint_seq,
        &slow.claim_token,
        t(60_002),
    )
    .await;
    assert!(
        matches!(
            result,
            Err(LifecycleError::Store(StoreError::StaleCheckpoint))
        ),
        "{result:?}"
    );
    crate::env::assert_same_bytes(&before, &env.snapshot().await, "a fenced-out commit");
    assert_eq!(env.fetch(&run.id).await, done.run);
    assert_event_history(env, &done.run).await;
}

/// Four concurrent vehicles drain twenty runs: every run completes exactly once.
pub async fn four_vehicles_drain_twenty_runs_each_exactly_once(env: &Env<'_>) {
    let clock = ManualClock::new(t(0));
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Linear)
        .await;
    for i in 0..20 {
        env.start(&graph, &format!("r{i:02}"), t(0)).await;
    }
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(env.store());
            let graph = graph.clone();
            let clock = clock.clone();
            tokio::spawn(async move {
                let mut completed = 0;
                loop {
                    let batch = ok(store.claim_due(&claim_policy(t(0), 2)).await, "claim_due");
                    if batch.leases.is_empty() {
                        return completed;
                    }
                    for lease in &batch.leases {
                        let drained = drain(&*store, &graph, lease, &clock, 100).await;
                        assert_eq!(drained.run.status, RunStatus::Done);
                        completed += 1;
                    }
                }
            })
        })
        .collect();
    let mut completed = 0;
    for task in tasks {
        completed += match task.await {
            Ok(n) => n,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("a vehicle was cancelled: {e}"),
        };
    }
    assert_eq!(completed, 20);
    for i in 0..20 {
        let run = env.fetch(&rid(&format!("r{i:02}"))).await;
        assert_eq!((run.status, run.checkpoint_seq), (RunStatus::Done, 5));
        assert_event_history(env, &run).await;
    }
}

/// Cancellation is a serialized signal that wins over a claim and over poison: a claimed run
/// and a poisoned run both end cancelled with no wake, no claim, zero counters and no poison,
/// and each history is the initialization moment followed by `run_cancelled, checkpoint`.
pub async fn cancelling_revokes_a_claim_and_clears_poison(env: &Env<'_>) {
    let graph = env
        .publish_graph(&OwnerScope::Tenantless, SuiteGraph::Linear)
        .await;
    let claimed = env.start(&graph, "claimed", t(0)).await;
    let lease = env.claim(t(0)).await;
    assert_eq!(lease.run_id, claimed.id);

    let poisoned = env.start(&graph, "poisoned", t(10)).await;
    let doomed = env.claim(t(10)).await;
    assert_eq!(doomed.run_id, poisoned.id);
    let policy = abandon_policy(doomed.checkpoint_seq, t(10), t(20), 1);
    let first = ok(
        env.store()
            .abandon_claim(&doomed.run_id, &doomed.claim_token, &policy)
            .await,
        "abandon",
    );
    assert_eq!(first, AbandonOutcome::Rescheduled);
    let again = env.claim(t(20)).await;
    let policy = abandon_policy(again.checkpoint_seq, t(20), t(30), 1);
    let second = ok(
        env.store()
            .abandon_claim(&again.run_id, &again.claim_token, &policy)
            .await,
        "abandon",
    );
    assert_eq!(second, AbandonOutcome::Poisoned);

    for run in [&claimed, &poisoned] {
        let cancelled = lifecycle::signal(&**env.store(), &Scope::System, &run.id, |current| {
            cancel_run(current, t(40))
        })
        .await;
        assert!(
            matches!(cancelled, Ok(Signalled::Committed(_))),
            "{}: {cancelled:?}",
            run.id
        );
        let info = env.inspect(&run.id).await;
        assert_eq!(info.run.status, RunStatus::Cancelled, "{}", run.id);
        assert_eq!((info.wake_at, info.claimed_at), (None, None), "{}", run.id);
        assert_eq!(
            (info.claim_attempts, info.claim_abandons),
            (0, 0),
            "{}",
            run.id
        );
        assert!(info.poison.is_none(), "{}", run.id);
        let types: Vec<EventType> = env
            .all_events(&run.id)
            .await
            .iter()
            .map(|e| e.event_type)
            .collect();
        // Two moments: initialization (its events end in a checkpoint) and the cancellation.
        assert_eq!(
            types.first(),
            Some(&EventType::RunInitialized),
            "{}",
            run.id
        );
        assert!(
            types.ends_with(&[EventType::RunCancelled, EventType::CheckpointCommitted]),
            "{}: {types:?}",
            run.id
        );
        let checkpoints = types
            .iter()
            .filter(|t| **t == EventType::CheckpointCommitted)
            .count();
        assert_eq!((checkpoints, info.run.checkpoint_seq), (2, 2), "{}", run.id);
        assert_event_history(env, &info.run).await;
    }
    // The revoked holder is fenced out.
    env.assert_fenced_out(&lease.run_id, &lease.claim_token, t(41))
        .await;
    assert_never_claimed(env, t(10_000_000)).await;
}
