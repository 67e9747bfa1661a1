//! Real concurrency against the memory store on a multi-thread runtime (`docs/reliability.md`,
//! “Races”; scenarios 10, 12 and 133 of `docs/scenarios.md`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::json;

use common::*;
use docket_core::model::{EventQuery, OwnerScope, Run, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

/// A proposal after `prev` that carries `writer` in its document and event, so the winner is
/// identifiable from what was stored.
fn tagged(prev: &Run, writer: usize) -> (Run, Vec<docket_core::model::Event>) {
    let at = t(1_000 + i64::try_from(writer).expect("small"));
    let mut run = next_run(prev, RunStatus::Running, at);
    run.metadata = map(json!({ "writer": writer }));
    let disposition = disposition_for(RunStatus::Running);
    let mut checkpoint = checkpoint_event(
        &run,
        checkpoint_type_for(RunStatus::Running),
        disposition,
        at,
    );
    checkpoint.payload = map(json!({ "writer": writer }));
    (run, vec![checkpoint])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_claimed_commits_at_one_fence_have_exactly_one_winner() {
    for round in 0..100 {
        let (store, graph) = store_with_graph().await;
        let store = Arc::new(store);
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
        let lease = claim_one(&store, t(0)).await;
        let tasks: Vec<_> = (0..16)
            .map(|writer| {
                let store = Arc::clone(&store);
                let (proposed, events) = tagged(&run, writer);
                let token = lease.claim_token.clone();
                tokio::spawn(async move {
                    let proposal = docket_core::store::ClaimedCommit {
                        run: proposed,
                        expected_seq: 1,
                        claim_token: token,
                        checkpoint_type: checkpoint_type_for(RunStatus::Running),
                        schedule: ClaimedSchedule::RetainClaim,
                        now: t(1_000),
                    };
                    (
                        writer,
                        store.commit_claimed(&Scope::System, proposal, events).await,
                    )
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            let (writer, result) = task.await.expect("task");
            match result {
                Ok(_) => winners.push(writer),
                Err(e) => assert_eq!(e.kind(), StoreErrorKind::StaleCheckpoint, "round {round}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let winner = winners[0];
        let stored = store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("fetch");
        assert_eq!(stored.metadata, map(json!({ "writer": winner })));
        let event = store
            .fetch_event(&Scope::System, &run.id, 3)
            .await
            .expect("event");
        assert_eq!(event.payload, map(json!({ "writer": winner })));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_unclaimed_commits_at_one_seq_have_exactly_one_winner() {
    for _ in 0..50 {
        let (store, graph) = store_with_graph().await;
        let store = Arc::new(store);
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
        let tasks: Vec<_> = (0..2)
            .map(|writer| {
                let store = Arc::clone(&store);
                let (proposed, events) = tagged(&run, writer);
                tokio::spawn(async move {
                    let proposal = docket_core::store::UnclaimedCommit {
                        run: proposed,
                        checkpoint_type: checkpoint_type_for(RunStatus::Running),
                        wake: ReleaseWake::Immediate,
                        now: t(1_000),
                    };
                    (
                        writer,
                        store
                            .commit_unclaimed(&Scope::Tenantless, 1, proposal, events)
                            .await,
                    )
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            let (writer, result) = task.await.expect("task");
            match result {
                Ok(_) => winners.push(writer),
                Err(e) => assert_eq!(e.kind(), StoreErrorKind::StaleCheckpoint),
            }
        }
        assert_eq!(winners.len(), 1);
        let event = store
            .fetch_event(&Scope::System, &run.id, 3)
            .await
            .expect("event");
        assert_eq!(event.payload, map(json!({ "writer": winners[0] })));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_times_twenty_five_increments_land_exactly_once_each() {
    let (store, graph) = store_with_graph().await;
    let store = Arc::new(store);
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "counter", t(0)).await;
    let tasks: Vec<_> = (0..8)
        .map(|worker| {
            let store = Arc::clone(&store);
            let id = run.id.clone();
            tokio::spawn(async move {
                let mut done = 0;
                while done < 25 {
                    let current = store.fetch_run(&Scope::System, &id).await.expect("load");
                    let (proposed, events) = tagged(&current, worker);
                    let proposal = docket_core::store::UnclaimedCommit {
                        run: proposed,
                        checkpoint_type: checkpoint_type_for(RunStatus::Running),
                        wake: ReleaseWake::Immediate,
                        now: t(1_000),
                    };
                    match store
                        .commit_unclaimed(&Scope::System, current.checkpoint_seq, proposal, events)
                        .await
                    {
                        Ok(_) => done += 1,
                        Err(e) => assert_eq!(e.kind(), StoreErrorKind::StaleCheckpoint),
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("worker");
    }
    let final_run = store
        .fetch_run(&Scope::System, &run.id)
        .await
        .expect("fetch");
    assert_eq!(final_run.checkpoint_seq, 1 + 200);
    let page = store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 2,
                limit: 1000,
            },
        )
        .await
        .expect("events");
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (3..=202).collect::<Vec<u64>>(),
        "one checkpoint event per increment"
    );
    let mut per_writer: BTreeMap<String, usize> = BTreeMap::new();
    for event in &page.events {
        *per_writer
            .entry(event.payload["writer"].to_string())
            .or_default() += 1;
    }
    assert!(per_writer.values().all(|n| *n == 25), "{per_writer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_claimers_claim_each_of_a_hundred_runs_exactly_once() {
    let (store, graph) = store_with_graph().await;
    let store = Arc::new(store);
    for i in 0..100 {
        start_run(
            &store,
            &OwnerScope::Tenantless,
            &graph,
            &format!("r{i:03}"),
            t(i),
        )
        .await;
    }
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = store
                        .claim_due(&claim_policy(t(1_000), 3))
                        .await
                        .expect("claim");
                    assert!(batch.poisoned.is_empty());
                    if batch.leases.is_empty() {
                        return mine;
                    }
                    mine.extend(batch.leases.into_iter().map(|l| l.run_id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("claimer"));
    }
    assert_eq!(all.len(), 100, "no run claimed twice while leases are live");
    assert_eq!(
        all.iter().collect::<BTreeSet<_>>().len(),
        100,
        "no run starved"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_of_one_run_leave_exactly_one_current_lease() {
    for _ in 0..50 {
        let (store, graph) = store_with_graph().await;
        let store = Arc::new(store);
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.claim_due(&claim_policy(t(1), 1)).await })
            })
            .collect();
        let mut leases = Vec::new();
        for task in tasks {
            leases.extend(task.await.expect("task").expect("claim").leases);
        }
        assert_eq!(leases.len(), 1);
        store
            .refresh_claim(&run.id, &leases[0].claim_token, t(2))
            .await
            .expect("the one lease is current");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_steal_racing_a_commit_never_lets_both_win() {
    for _ in 0..100 {
        let (store, graph) = store_with_graph().await;
        let store = Arc::new(store);
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
        let a = claim_one(&store, t(0)).await;
        let committer = {
            let store = Arc::clone(&store);
            let (proposal, events) = claimed(
                &run,
                RunStatus::Running,
                &a.claim_token,
                ClaimedSchedule::RetainClaim,
                t(10),
            );
            tokio::spawn(
                async move { store.commit_claimed(&Scope::System, proposal, events).await },
            )
        };
        let thief = {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut policy = claim_policy(t(20), 1);
                policy.orphan_ttl_ms = 5;
                store.claim_due(&policy).await
            })
        };
        let committed = committer.await.expect("task");
        let stolen = thief.await.expect("task").expect("claim");
        // Either order steals (A's re-stamped claim at t(10) is also older than the TTL); the
        // order only decides which seq the thief sees and whether A's commit lands.
        assert_eq!(stolen.leases.len(), 1);
        let stored = store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("fetch");
        match committed {
            Ok(_) => {
                assert_eq!(
                    stolen.leases[0].checkpoint_seq, 2,
                    "the steal came after A's commit"
                );
                assert_eq!(stored.checkpoint_seq, 2);
            }
            Err(e) => {
                assert_eq!(e.kind(), StoreErrorKind::StaleCheckpoint);
                assert_eq!(
                    stolen.leases[0].checkpoint_seq, 1,
                    "A was fenced by the steal"
                );
                assert_eq!(stored.checkpoint_seq, 1);
            }
        }
    }
}
