//! Races with real concurrency: contested fences have exactly one winner, concurrent claimers
//! get disjoint batches, optimistic increments never lose or duplicate a commit.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use docket_core::model::{EventQuery, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError, StoreErrorKind};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_claimed_commits_at_one_seq_have_exactly_one_winner() {
    let fx = Arc::new(fx().await);
    for round in 0..10 {
        let id = format!("r{round}");
        let run = fx.start(&id, t(0)).await;
        let lease = fx.claim_one(t(1)).await;
        let mut tasks = Vec::new();
        for contender in 0..16 {
            let (fx, run, lease) = (Arc::clone(&fx), run.clone(), lease.clone());
            tasks.push(tokio::spawn(async move {
                let (next, mut events) = advance(&run, RunStatus::Running, t(2));
                events[0]
                    .payload
                    .insert("contender".into(), json!(contender));
                let result = fx
                    .store
                    .commit_claimed(
                        &Scope::System,
                        claimed(
                            next,
                            1,
                            &lease.claim_token,
                            ClaimedSchedule::RetainClaim,
                            t(2),
                        ),
                        events,
                    )
                    .await;
                (contender, result)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (contender, result) = task.await.unwrap();
            match result {
                Ok(_) => winners.push(contender),
                // Every loser must see the moved seq; nothing else is acceptable.
                Err(error) => assert_eq!(error.kind(), StoreErrorKind::StaleCheckpoint),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let stored = fx
            .store
            .fetch_event(&Scope::System, &run.id, 3)
            .await
            .unwrap();
        assert_eq!(
            stored.payload["contender"],
            json!(winners[0]),
            "the winner's event is stored"
        );
        assert_eq!(
            fx.store
                .fetch_run(&Scope::System, &run.id)
                .await
                .unwrap()
                .checkpoint_seq,
            2
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_unclaimed_commits_at_one_seq_have_exactly_one_winner() {
    let fx = Arc::new(fx().await);
    let run = fx.start("r1", t(0)).await;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (fx, run) = (Arc::clone(&fx), run.clone());
        tasks.push(tokio::spawn(async move {
            let (next, events) = advance(&run, RunStatus::Running, t(2));
            fx.store
                .commit_unclaimed(
                    &Scope::System,
                    1,
                    unclaimed(next, ReleaseWake::Immediate, t(2)),
                    events,
                )
                .await
        }));
    }
    let mut ok = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => ok += 1,
            Err(error) => assert_eq!(error.kind(), StoreErrorKind::StaleCheckpoint),
        }
    }
    assert_eq!(ok, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_claimers_over_a_hundred_runs_claim_each_exactly_once() {
    let fx = Arc::new(fx().await);
    for i in 0..100 {
        fx.start(&format!("r{i:03}"), t(i % 7)).await;
    }
    let mut tasks = Vec::new();
    for claimer in 0..8 {
        let fx = Arc::clone(&fx);
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = fx.store.claim_due(&policy(t(10), 3)).await.unwrap();
                if batch.leases.is_empty() {
                    return (claimer, mine);
                }
                mine.extend(batch.leases);
            }
        }));
    }
    let mut owners: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        let (claimer, leases) = task.await.unwrap();
        for lease in leases {
            assert_eq!(lease.claim_attempt, 1);
            let previous = owners.insert(lease.run_id.into_string(), claimer);
            assert!(previous.is_none(), "a run was claimed twice");
        }
    }
    assert_eq!(owners.len(), 100, "every run was claimed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn optimistic_increments_by_eight_workers_lose_and_duplicate_nothing() {
    const WORKERS: usize = 8;
    const INCREMENTS: usize = 25;
    let fx = Arc::new(fx().await);
    let run = fx.start("counter", t(0)).await;
    let mut tasks = Vec::new();
    for worker in 0..WORKERS {
        let (fx, id) = (Arc::clone(&fx), run.id.clone());
        tasks.push(tokio::spawn(async move {
            let mut committed = Vec::new();
            while committed.len() < INCREMENTS {
                let current = fx.store.fetch_run(&Scope::System, &id).await.unwrap();
                let (next, mut events) = advance(&current, RunStatus::Running, t(1));
                events[0].payload.insert("worker".into(), json!(worker));
                let seq = next.checkpoint_seq;
                match fx
                    .store
                    .commit_unclaimed(
                        &Scope::System,
                        current.checkpoint_seq,
                        unclaimed(next, ReleaseWake::Immediate, t(1)),
                        events,
                    )
                    .await
                {
                    Ok(_) => committed.push(seq),
                    Err(StoreError::StaleCheckpoint) => {}
                    Err(other) => panic!("unexpected error: {other}"),
                }
            }
            (worker, committed)
        }));
    }
    let mut by_seq: BTreeMap<u64, usize> = BTreeMap::new();
    for task in tasks {
        let (worker, seqs) = task.await.unwrap();
        for seq in seqs {
            assert!(
                by_seq.insert(seq, worker).is_none(),
                "seq {seq} committed twice"
            );
        }
    }
    let total = (WORKERS * INCREMENTS) as u64;
    assert_eq!(
        by_seq.keys().copied().collect::<Vec<_>>(),
        (2..=total + 1).collect::<Vec<_>>()
    );
    let final_run = fx.store.fetch_run(&Scope::System, &run.id).await.unwrap();
    assert_eq!(final_run.checkpoint_seq, total + 1);
    // Each checkpoint event was written by the worker that committed that seq.
    let mut after_seq = 0;
    let mut checked = 0;
    loop {
        let page = fx
            .store
            .list_events(
                &Scope::System,
                &run.id,
                &EventQuery {
                    after_seq,
                    limit: 100,
                },
            )
            .await
            .unwrap();
        for event in page.events.iter().filter(|e| e.seq > 2) {
            // Event seq n+1 belongs to checkpoint seq n (one event per moment after init).
            let checkpoint = event.seq - 1;
            assert_eq!(event.payload["worker"], json!(by_seq[&checkpoint]));
            checked += 1;
        }
        if !page.has_more {
            break;
        }
        after_seq = page.next_after_seq;
    }
    assert_eq!(checked, WORKERS * INCREMENTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reclaim_racing_a_commit_never_lets_both_land() {
    let fx = Arc::new(fx().await);
    for round in 0..20 {
        let id = format!("r{round}");
        let run = fx.start(&id, t(0)).await;
        let a = fx.claim_one(t(1)).await;
        let mut steal = policy(t(100_000), 1);
        steal.orphan_ttl_ms = 1;
        let commit = {
            let (fx, run, a) = (Arc::clone(&fx), run.clone(), a.clone());
            tokio::spawn(async move {
                let (next, events) = advance(&run, RunStatus::Running, t(2));
                fx.store
                    .commit_claimed(
                        &Scope::System,
                        claimed(next, 1, &a.claim_token, ClaimedSchedule::RetainClaim, t(2)),
                        events,
                    )
                    .await
            })
        };
        let reclaim = {
            let fx = Arc::clone(&fx);
            tokio::spawn(async move { fx.store.claim_due(&steal).await })
        };
        let committed = commit.await.unwrap();
        let batch = reclaim.await.unwrap().unwrap();
        let stolen = batch.leases.into_iter().find(|l| l.run_id == run.id);
        match (&committed, &stolen) {
            // A committed first and retained its claim (claimed_at re-stamped at t(2), which
            // is still expired at t(100_000)): B steals at the new seq.
            (Ok(_), Some(lease)) => assert_eq!(lease.checkpoint_seq, 2),
            (Ok(_), None) => panic!("round {round}: the expired claim was not stolen"),
            (Err(error), Some(lease)) => {
                assert_eq!(error.kind(), StoreErrorKind::StaleCheckpoint);
                assert_eq!(lease.checkpoint_seq, 1);
            }
            (Err(error), None) => panic!("round {round}: nothing happened: {error}"),
        }
    }
}
