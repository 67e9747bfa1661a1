//! Races with real concurrency against one server.

use std::collections::BTreeSet;
use std::sync::Arc;

use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, RunStore, StoreErrorKind};
use tokio::sync::Barrier;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_commits_at_one_seq_have_exactly_one_winner() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &owner, "g").await;
    for round in 0..20 {
        let id = format!("r{round}");
        let run = start(&fx.store, &owner, &id, &graph, t(0)).await;
        let lease = claim_one(&fx.store, t(1)).await;
        let barrier = Arc::new(Barrier::new(16));
        let mut tasks = Vec::new();
        for contender in 0..16 {
            let store = fx.store.clone();
            let barrier = barrier.clone();
            let mut proposal = next(&run, RunStatus::Running, t(2));
            proposal.metadata.insert("winner".into(), contender.into());
            let events = vec![event(&proposal, 2, t(2), &format!("c{contender}"))];
            let commit = claimed_commit(
                proposal,
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            );
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store.commit_claimed(&Scope::System, commit, events).await
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            match task.await.expect("task") {
                Ok(run) => winners.push(run),
                Err(e) => assert_eq!(e.kind(), StoreErrorKind::StaleCheckpoint, "{e}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        let stored = fx
            .store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("run");
        assert_eq!(stored, winners[0]);
        let winner = stored.metadata["winner"].clone();
        let event2 = fx
            .store
            .fetch_event(&Scope::System, &run.id, 2)
            .await
            .expect("event");
        assert_eq!(event2.payload["tag"], format!("c{winner}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_claimers_take_each_of_a_hundred_runs_exactly_once() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &owner, "g").await;
    for i in 0..100 {
        start(&fx.store, &owner, &format!("r{i:03}"), &graph, t(i)).await;
    }
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = fx.store.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut mine = Vec::new();
            loop {
                let batch = store
                    .claim_due(&policy(t(1_000), 3, 60_000, 5, None))
                    .await
                    .expect("claim");
                assert_eq!(batch.poisoned, vec![]);
                if batch.leases.is_empty() {
                    return mine;
                }
                mine.extend(batch.leases.into_iter().map(|l| l.run_id));
            }
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("task"));
    }
    let distinct: BTreeSet<_> = all.iter().cloned().collect();
    assert_eq!(all.len(), 100, "every run claimed once, none twice");
    assert_eq!(distinct.len(), 100);
}
