//! Races with real concurrency (`docs/reliability.md`, “Races”; scenarios 10 and 12 of
//! `docs/scenarios.md`): many tasks on a multi-threaded runtime against one store, with exact
//! outcomes.

use std::collections::BTreeSet;
use std::sync::Arc;

use docket_core::runtime::Moment;
use docket_core::store::Backend;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::cases::prelude::*;

/// Awaits a spawned task, re-raising its panic so the case fails with the task's message.
async fn joined<T>(handle: JoinHandle<T>) -> T {
    match handle.await {
        Ok(value) => value,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => panic!("a race task was cancelled: {error}"),
    }
}

/// A proposal after `prev` carrying `writer` in its document and first event, so the stored
/// winner is identifiable.
fn tagged(prev: &Run, writer: usize, at: Timestamp) -> Moment {
    let mut moment = moment_to(prev, RunStatus::Running, at);
    moment.run.metadata = map(json!({ "writer": writer }));
    moment.events[0].payload = map(json!({ "writer": writer }));
    moment
}

fn writer_of(map: &ValueMap) -> Option<u64> {
    map.get("writer").and_then(Value::as_u64)
}

/// Sixteen concurrent claimed commits at one fence (same token, same seq): exactly one wins,
/// fifteen are stale, and the stored run and the event at the contested seq are the winner's.
/// Repeated 50 times.
pub async fn sixteen_concurrent_claimed_commits_have_exactly_one_winner(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for round in 0..50 {
        let run = env.start(&graph, &format!("r{round}"), t(0)).await;
        let lease = env.claim(t(1)).await;
        assert_eq!(lease.run_id, run.id);
        let tasks: Vec<_> = (0..16)
            .map(|writer| {
                let store = Arc::clone(env.store());
                let moment = tagged(&run, writer, t(1_000));
                let proposal = claimed_commit(&moment, &lease.claim_token, t(1_000));
                tokio::spawn(async move {
                    let result = store
                        .commit_claimed(&Scope::System, proposal, moment.events)
                        .await;
                    (writer, result.map_err(|e| e.kind()))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            match joined(task).await {
                (writer, Ok(_)) => winners.push(writer as u64),
                (_, Err(kind)) => assert_eq!(kind, K::StaleCheckpoint, "round {round}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let stored = env.fetch(&run.id).await;
        assert_eq!(
            writer_of(&stored.metadata),
            Some(winners[0]),
            "round {round}"
        );
        assert_eq!(stored.checkpoint_seq, run.checkpoint_seq + 1);
        let contested = ok(
            env.store()
                .fetch_event(&Scope::System, &run.id, run.event_seq + 1)
                .await,
            "fetch_event",
        );
        assert_eq!(
            writer_of(&contested.payload),
            Some(winners[0]),
            "round {round}"
        );
    }
}

/// Eight concurrent signal commits at one seq: exactly one wins and its event is stored.
/// Repeated 20 times.
pub async fn concurrent_unclaimed_commits_have_exactly_one_winner(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for round in 0..20 {
        let run = env.start(&graph, &format!("r{round}"), t(0)).await;
        let tasks: Vec<_> = (0..8)
            .map(|writer| {
                let store = Arc::clone(env.store());
                let moment = tagged(&run, writer, t(1_000));
                let proposal = unclaimed_commit(&moment, t(1_000));
                let expected = run.checkpoint_seq;
                tokio::spawn(async move {
                    let result = store
                        .commit_unclaimed(&Scope::System, expected, proposal, moment.events)
                        .await;
                    (writer, result.map_err(|e| e.kind()))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            match joined(task).await {
                (writer, Ok(_)) => winners.push(writer as u64),
                (_, Err(kind)) => assert_eq!(kind, K::StaleCheckpoint, "round {round}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let stored = env.fetch(&run.id).await;
        assert_eq!(writer_of(&stored.metadata), Some(winners[0]));
        let contested = ok(
            env.store()
                .fetch_event(&Scope::System, &run.id, run.event_seq + 1)
                .await,
            "fetch_event",
        );
        assert_eq!(writer_of(&contested.payload), Some(winners[0]));
    }
}

const WORKERS: usize = 8;
const INCREMENTS: usize = 25;
/// Retries one worker may spend before the case declares the store livelocked.
const MAX_ATTEMPTS: usize = 200_000;

/// One increment: load, propose `count + 1`, commit (signal path for even workers, claim +
/// claimed commit for odd ones), retry on a lost race.
async fn increment(store: Arc<dyn Backend>, id: RunId, worker: usize, i: usize) -> usize {
    let now = t(1_000);
    for attempt in 1..=MAX_ATTEMPTS {
        let current = ok(store.fetch_run(&Scope::System, &id).await, "fetch_run");
        let count = current
            .metadata
            .get("count")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut moment = moment_to(&current, RunStatus::Running, now);
        moment.run.metadata = map(json!({ "count": count + 1 }));
        moment.events[0].payload = map(json!({ "count": count + 1, "worker": worker, "i": i }));
        let result = if worker % 2 == 0 {
            store
                .commit_unclaimed(
                    &Scope::System,
                    current.checkpoint_seq,
                    unclaimed_commit(&moment, now),
                    moment.events,
                )
                .await
        } else {
            let batch = ok(store.claim_due(&claim_policy(now, 1)).await, "claim_due");
            let Some(lease) = batch.leases.into_iter().next() else {
                tokio::task::yield_now().await;
                continue;
            };
            let proposal = with_schedule(
                claimed_commit(&moment, &lease.claim_token, now),
                ClaimedSchedule::Release(ReleaseWake::Immediate),
            );
            let result = store
                .commit_claimed(&Scope::System, proposal, moment.events)
                .await;
            if result.is_err() {
                // A lost race may leave our claim current; hand it back so nobody starves.
                ok(
                    store
                        .release_claim(&lease.run_id, &lease.claim_token, now)
                        .await,
                    "release_claim",
                );
            }
            result
        };
        match result {
            Ok(_) => return attempt,
            Err(StoreError::StaleCheckpoint) => tokio::task::yield_now().await,
            Err(other) => panic!("worker {worker} increment {i}: unexpected {other}"),
        }
    }
    panic!("worker {worker} increment {i}: no progress after {MAX_ATTEMPTS} attempts")
}

/// Eight workers × 25 increments through load → commit → retry-on-stale (half through
/// signals, half through claims) end at exactly 200, with every count 1..=200 committed once
/// and every checkpoint seq present once.
pub async fn eight_workers_times_twenty_five_increments_land_exactly_once(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "counter", t(0)).await;
    let tasks: Vec<_> = (0..WORKERS)
        .map(|worker| {
            let store = Arc::clone(env.store());
            let id = run.id.clone();
            tokio::spawn(async move {
                for i in 0..INCREMENTS {
                    increment(Arc::clone(&store), id.clone(), worker, i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        joined(task).await;
    }
    let total = (WORKERS * INCREMENTS) as u64;
    let stored = env.fetch(&run.id).await;
    assert_eq!(stored.metadata.get("count"), Some(&json!(total)));
    assert_eq!(stored.checkpoint_seq, run.checkpoint_seq + total);
    let events = env.all_events(&run.id).await;
    let numbered: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(numbered, (1..=stored.event_seq).collect::<Vec<_>>());
    let mut counts = Vec::new();
    let mut increments = BTreeSet::new();
    for event in &events {
        if let Some(count) = event.payload.get("count").and_then(Value::as_u64) {
            counts.push(count);
            let key = (
                event.payload.get("worker").cloned(),
                event.payload.get("i").cloned(),
            );
            assert!(
                increments.insert(format!("{key:?}")),
                "an increment landed twice"
            );
        }
    }
    assert_eq!(counts, (1..=total).collect::<Vec<_>>());
    let checkpoints: Vec<u64> = events
        .iter()
        .filter(|e| e.event_type == EventType::CheckpointCommitted)
        .filter_map(|e| e.metadata.get("checkpoint_seq").and_then(Value::as_u64))
        .collect();
    assert_eq!(checkpoints, (1..=stored.checkpoint_seq).collect::<Vec<_>>());
}

/// Eight concurrent claimers draining 100 due runs claim each exactly once.
pub async fn eight_claimers_claim_each_of_a_hundred_runs_exactly_once(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for i in 0..100 {
        env.start(&graph, &format!("r{i:03}"), t(0)).await;
    }
    let tasks: Vec<_> = (0..8u32)
        .map(|claimer| {
            let store = Arc::clone(env.store());
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let policy = claim_policy(t(10), 1 + claimer % 4);
                    let batch = ok(store.claim_due(&policy).await, "claim_due");
                    assert!(batch.poisoned.is_empty());
                    if batch.leases.is_empty() {
                        return mine;
                    }
                    mine.extend(
                        batch
                            .leases
                            .into_iter()
                            .map(|l| (l.run_id, l.claim_attempt)),
                    );
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.extend(joined(task).await);
    }
    assert_eq!(claimed.len(), 100, "every run claimed, none twice");
    let distinct: BTreeSet<&RunId> = claimed.iter().map(|(id, _)| id).collect();
    assert_eq!(distinct.len(), 100);
    assert!(claimed.iter().all(|(_, attempt)| *attempt == 1));
}

/// Eight concurrent claims of one due run leave exactly one lease. Repeated 20 times.
pub async fn concurrent_claims_of_one_run_leave_exactly_one_lease(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for round in 0..20 {
        let run = env.start(&graph, &format!("r{round}"), t(0)).await;
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let store = Arc::clone(env.store());
                tokio::spawn(async move {
                    ok(store.claim_due(&claim_policy(t(1), 4)).await, "claim_due").leases
                })
            })
            .collect();
        let mut leases = Vec::new();
        for task in tasks {
            leases.extend(joined(task).await);
        }
        assert_eq!(leases.len(), 1, "round {round}");
        assert_eq!(leases[0].run_id, run.id);
        let info = env.inspect(&run.id).await;
        assert_eq!((info.claim_attempts, info.claimed_at), (1, Some(t(1))));
    }
}

/// A steal racing the holder's commit: either the commit lands and the thief claims the
/// committed seq (at once, or — when it skipped the row the commit held locked — on its next
/// claim), or the steal lands and the commit is stale — never both. Repeated 30 times.
pub async fn a_steal_racing_a_commit_never_lets_both_win(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for round in 0..30 {
        let run = env.start(&graph, &format!("r{round}"), t(0)).await;
        let holder = env.claim(t(1)).await;
        let race_at = t(1 + 60_001);
        let moment = moment_to(&run, RunStatus::Running, race_at);
        let proposal = with_schedule(
            claimed_commit(&moment, &holder.claim_token, race_at),
            ClaimedSchedule::Release(ReleaseWake::Immediate),
        );
        let store = Arc::clone(env.store());
        let commit = tokio::spawn(async move {
            store
                .commit_claimed(&Scope::System, proposal, moment.events)
                .await
                .map_err(|e| e.kind())
        });
        let store = Arc::clone(env.store());
        let steal = tokio::spawn(async move { store.claim_due(&claim_policy(race_at, 1)).await });
        let committed = joined(commit).await;
        let mut stolen = ok(joined(steal).await, "claim_due");
        if stolen.leases.is_empty() {
            // A claimer skips a row another writer holds locked (`docs/claim-order.md`,
            // PostgreSQL's `SKIP LOCKED`): only the commit can have held it, so the commit won, and
            // the next claim finds the run it released.
            assert!(
                committed.is_ok(),
                "round {round}: the thief found nothing, so the commit must have landed"
            );
            stolen = ok(
                env.store().claim_due(&claim_policy(race_at, 1)).await,
                "claim_due",
            );
        }
        assert_eq!(
            stolen.leases.len(),
            1,
            "round {round}: the thief always gets the run"
        );
        let thief = &stolen.leases[0];
        match committed {
            Ok(_) => assert_eq!(
                thief.checkpoint_seq,
                run.checkpoint_seq + 1,
                "round {round}: the commit landed first, so the thief sees it"
            ),
            Err(kind) => {
                assert_eq!(kind, K::StaleCheckpoint, "round {round}");
                assert_eq!(thief.checkpoint_seq, run.checkpoint_seq, "round {round}");
            }
        }
        let current = env.fetch(&run.id).await;
        assert_eq!(current.checkpoint_seq, thief.checkpoint_seq);
        env.commit_to(thief, &current, RunStatus::Done, race_at.add_millis(1))
            .await;
    }
}

/// An abandon racing a steal has exactly one effect: rescheduled (and nothing to steal) or
/// stolen (and the abandon is stale). Repeated 30 times.
pub async fn an_abandon_racing_a_steal_has_exactly_one_effect(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    for round in 0..30 {
        let run = env.start(&graph, &format!("r{round}"), t(0)).await;
        let holder = env.claim(t(1)).await;
        let race_at = t(1 + 60_001);
        let policy = abandon_policy(
            holder.checkpoint_seq,
            race_at,
            race_at.add_millis(60_000),
            5,
        );
        let store = Arc::clone(env.store());
        let token = holder.claim_token.clone();
        let id = run.id.clone();
        let abandon = tokio::spawn(async move { store.abandon_claim(&id, &token, &policy).await });
        let store = Arc::clone(env.store());
        let steal = tokio::spawn(async move { store.claim_due(&claim_policy(race_at, 1)).await });
        let outcome = ok(joined(abandon).await, "abandon_claim");
        let stolen = ok(joined(steal).await, "claim_due");
        match outcome {
            AbandonOutcome::Rescheduled => {
                assert!(
                    stolen.leases.is_empty(),
                    "round {round}: rescheduled and stolen"
                )
            }
            AbandonOutcome::Stale => {
                assert_eq!(
                    stolen.leases.len(),
                    1,
                    "round {round}: stale but not stolen"
                )
            }
            AbandonOutcome::Poisoned => panic!("round {round}: one abandon cannot poison at max 5"),
        }
        let current = env.fetch(&run.id).await;
        let moment = moment_to(&current, RunStatus::Cancelled, race_at.add_millis(1));
        ok(
            env.store()
                .commit_unclaimed(
                    &Scope::System,
                    current.checkpoint_seq,
                    unclaimed_commit(&moment, race_at.add_millis(1)),
                    moment.events.clone(),
                )
                .await,
            "cancel",
        );
    }
}

/// Eight concurrent initializes of one run id: exactly one wins, seven conflict, and the
/// stored run is the winner's.
pub async fn concurrent_initializes_of_one_run_id_have_one_winner(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let tasks: Vec<_> = (0..8i64)
        .map(|writer| {
            let store = Arc::clone(env.store());
            let moment = init_moment(&graph, &rid("r1"), map(json!({ "amount": writer })), t(0));
            let owner = graph.owner.clone();
            tokio::spawn(async move {
                let result = store
                    .initialize(&owner, init_proposal(&moment, t(0)), moment.events)
                    .await;
                (writer, result.map_err(|e| e.kind()))
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        match joined(task).await {
            (writer, Ok(_)) => winners.push(writer),
            (_, Err(kind)) => assert_eq!(kind, K::Conflict),
        }
    }
    assert_eq!(winners.len(), 1, "winners {winners:?}");
    let stored = env.fetch(&rid("r1")).await;
    assert_eq!(stored.input.get("amount"), Some(&json!(winners[0])));
}

/// The first runs of an owner the store has never seen, started concurrently under distinct
/// ids, all land: no first-insert race loses a run or lets one leak to another owner.
pub async fn concurrent_first_starts_for_a_new_owner_all_land(env: &Env<'_>) {
    let owner = tenant("newcomer");
    let graph = tiny_graph(&owner);
    env.publish(&graph, t(0)).await;
    let tasks: Vec<_> = (0..12i64)
        .map(|n| {
            let store = Arc::clone(env.store());
            let moment = init_moment(
                &graph,
                &rid(&format!("n{n}")),
                map(json!({ "amount": n })),
                t(0),
            );
            let owner = owner.clone();
            tokio::spawn(async move {
                let result = store
                    .initialize(&owner, init_proposal(&moment, t(0)), moment.events)
                    .await;
                (n, result.map_err(|e| e.kind()))
            })
        })
        .collect();
    for task in tasks {
        let (n, result) = joined(task).await;
        assert!(result.is_ok(), "start n{n}: {result:?}");
    }
    let page = ok(
        env.store()
            .list_runs(&tenant_scope("newcomer"), &run_query(100))
            .await,
        "list_runs",
    );
    let mut ids: Vec<String> = page.runs.iter().map(|r| r.id.to_string()).collect();
    ids.sort();
    let mut expected: Vec<String> = (0..12).map(|n| format!("n{n}")).collect();
    expected.sort();
    assert_eq!(ids, expected);
    for n in 0..12i64 {
        let stored = env.fetch(&rid(&format!("n{n}"))).await;
        assert_eq!(stored.input.get("amount"), Some(&json!(n)));
    }
    let other = ok(
        env.store()
            .list_runs(&tenant_scope("bystander"), &run_query(100))
            .await,
        "list_runs",
    );
    assert!(other.runs.is_empty(), "leaked: {:?}", other.runs);
}

/// Claims every due run of `store` at `policy.now` (one claimer, until nothing is due).
async fn claim_until_none(store: &Arc<dyn Backend>, policy: &ClaimRequest) -> usize {
    let mut claimed = 0;
    loop {
        let batch = ok(store.claim_due(policy).await, "claim_due");
        if batch.outcome_count() == 0 {
            return claimed;
        }
        claimed += batch.outcome_count();
    }
}

/// Eight concurrent claimers over a mix of every class — ready runs, expired claims to steal
/// and expired claims out of attempts (to poison) — account for each run exactly once: ready
/// runs leased at attempt 1, steals at attempt 2, the exhausted runs poisoned, nothing twice.
pub async fn concurrent_claimers_account_for_a_mix_of_ready_steal_and_poison_exactly_once(
    env: &Env<'_>,
) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let at = |now: Timestamp| ClaimRequest {
        max_claim_attempts: nz(2),
        ..claim_policy(now, 8)
    };
    // Exhausted: claimed at t(0), stolen at t(70 000): two attempts, the maximum.
    for i in 0..10 {
        env.start(&graph, &format!("exhausted{i:02}"), t(0)).await;
    }
    assert_eq!(claim_until_none(env.store(), &at(t(0))).await, 10);
    assert_eq!(claim_until_none(env.store(), &at(t(70_000))).await, 10);
    // Orphaned: claimed once at t(70 000), never committed.
    for i in 0..30 {
        env.start(&graph, &format!("orphaned{i:02}"), t(70_000))
            .await;
    }
    assert_eq!(claim_until_none(env.store(), &at(t(70_000))).await, 30);
    // Ready: due, never claimed.
    for i in 0..30 {
        env.start(&graph, &format!("ready{i:02}"), t(100_000)).await;
    }

    let now = t(140_001); // every claim above is now older than the 60 s TTL
    let tasks: Vec<_> = (0..8u32)
        .map(|claimer| {
            let store = Arc::clone(env.store());
            let policy = ClaimRequest {
                policy: Default::default(),
                limit: nz(1 + claimer % 4),
                ..at(now)
            };
            tokio::spawn(async move {
                let (mut leased, mut poisoned) = (Vec::new(), Vec::new());
                loop {
                    let batch = ok(store.claim_due(&policy).await, "claim_due");
                    if batch.outcome_count() == 0 {
                        return (leased, poisoned);
                    }
                    leased.extend(
                        batch
                            .leases
                            .into_iter()
                            .map(|l| (l.run_id.to_string(), l.claim_attempt)),
                    );
                    poisoned.extend(batch.poisoned.into_iter().map(|p| p.run_id.to_string()));
                }
            })
        })
        .collect();
    let (mut leased, mut poisoned) = (Vec::new(), Vec::new());
    for task in tasks {
        let (l, p) = joined(task).await;
        leased.extend(l);
        poisoned.extend(p);
    }
    leased.sort();
    poisoned.sort();
    let expected_leases: Vec<(String, u32)> = (0..30)
        .map(|i| (format!("orphaned{i:02}"), 2))
        .chain((0..30).map(|i| (format!("ready{i:02}"), 1)))
        .collect();
    assert_eq!(
        leased, expected_leases,
        "each steal and each ready run leased once"
    );
    let expected_poisons: Vec<String> = (0..10).map(|i| format!("exhausted{i:02}")).collect();
    assert_eq!(
        poisoned, expected_poisons,
        "each exhausted run poisoned once"
    );
    for id in &expected_poisons {
        let info = env.inspect(&rid(id)).await;
        assert_eq!(
            info.poison.map(|p| (p.poisoned_at, p.reason)),
            Some((now, PoisonReason::MaxClaimAttemptsExceeded)),
            "{id}"
        );
        assert_eq!((info.wake_at, info.claimed_at), (None, None), "{id}");
    }
    assert_eq!(
        claim_until_none(env.store(), &at(now)).await,
        0,
        "nothing left"
    );
}

/// Event pages read while commits append stay coherent: every page is gapless from its
/// cursor, and its bounds, `has_more` and `latest_seq` come from one snapshot (the newest
/// retained event is the run's `event_seq`, because both are written by one commit). Paging
/// to the end afterwards yields every seq exactly once.
///
/// The reader is bounded by progress, not by time or a page count: once it has caught up it
/// waits for the writer's next commit, so every page either returns events or follows a
/// commit, however slow the store's commits are.
pub async fn event_pages_stay_coherent_while_commits_append(env: &Env<'_>) {
    const MOMENTS: usize = 30;
    /// How long a caught-up reader waits for the writer's next commit before failing.
    const COMMIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "appending", t(0)).await;
    let (committed, mut commits) = tokio::sync::watch::channel(run.event_seq);
    let writer = {
        let store = Arc::clone(env.store());
        let mut current = run.clone();
        tokio::spawn(async move {
            for i in 0..MOMENTS {
                let at = t(10 + i as i64);
                let moment = moment_to(&current, RunStatus::Running, at);
                current = ok(
                    store
                        .commit_unclaimed(
                            &Scope::System,
                            current.checkpoint_seq,
                            unclaimed_commit(&moment, at),
                            moment.events,
                        )
                        .await,
                    "commit_unclaimed",
                );
                committed.send_replace(current.event_seq);
                tokio::task::yield_now().await;
            }
            current.event_seq
        })
    };
    let store = Arc::clone(env.store());
    let (mut after, mut seen, mut empty_pages) = (0u64, Vec::new(), 0usize);
    loop {
        // Checked before the read: a page read after the writer finished sees every event.
        // The writer drops its sender after its last commit, before its task counts as
        // finished, so a closed channel means done too.
        let writer_done = writer.is_finished() || commits.has_changed().is_err();
        let page = ok(
            store
                .list_events(&Scope::System, &run.id, &event_query(after, 3))
                .await,
            "list_events",
        );
        let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
        let expected: Vec<u64> = (after + 1..).take(seqs.len()).collect();
        assert_eq!(
            seqs, expected,
            "page after {after}: gapless from the cursor"
        );
        assert_eq!(page.next_after_seq, seqs.last().copied().unwrap_or(after));
        assert_eq!(page.oldest_available_seq, Some(1), "page after {after}");
        assert_eq!(
            page.latest_available_seq,
            Some(page.latest_seq),
            "page after {after}: bounds and latest_seq from one snapshot"
        );
        assert_eq!(
            page.has_more,
            page.latest_seq > page.next_after_seq,
            "page after {after}: {page:?}"
        );
        if seqs.is_empty() {
            empty_pages += 1;
            // Each commit can leave at most one page with nothing new (read just before it
            // landed), so more empty pages than commits means paging stopped advancing.
            assert!(
                empty_pages <= MOMENTS + 1,
                "paging stopped advancing at {after}"
            );
        }
        seen.extend(seqs);
        after = page.next_after_seq;
        if writer_done && !page.has_more {
            break;
        }
        if !page.has_more {
            // Caught up: unless a newer commit already landed, wait for the next one (or the
            // writer's end: a dropped sender ends the wait) instead of spinning.
            let newest = *commits.borrow_and_update();
            if newest <= page.latest_seq
                && tokio::time::timeout(COMMIT_DEADLINE, commits.changed())
                    .await
                    .is_err()
            {
                panic!("no commit within {COMMIT_DEADLINE:?} while paging at {after}");
            }
        }
    }
    let final_seq = joined(writer).await;
    assert_eq!(seen, (1..=final_seq).collect::<Vec<_>>());
}
