//! Races with real concurrency: one fence, many committers, exactly one winner.

mod common;

use std::sync::Arc;

use common::*;
use docket_core::model::{OwnerScope, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError};
use tokio::sync::Barrier;

#[tokio::test]
async fn sixteen_concurrent_claimed_commits_at_one_seq_have_exactly_one_winner() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    for round in 0..25 {
        let id = format!("r{round}");
        let run = start(&store, &owner, &id, t(0)).await;
        let lease = store
            .claim_due(&policy(t(1), 1))
            .await
            .expect("claim")
            .leases
            .into_iter()
            .next()
            .expect("lease");
        let barrier = Arc::new(Barrier::new(16));
        let mut tasks = Vec::new();
        for racer in 0..16 {
            let store = store.clone();
            let barrier = barrier.clone();
            let proposal = next(&run, t(2));
            let token = lease.claim_token.clone();
            tasks.push(tokio::spawn(async move {
                let events = vec![event(&proposal, 2, t(2), &format!("racer {racer}"))];
                let commit = claimed(
                    proposal,
                    1,
                    &token,
                    ClaimedSchedule::Release(ReleaseWake::Terminal),
                    t(2),
                );
                let mut commit = commit;
                commit.run = done(&commit.run, t(2)).with_seq(2);
                barrier.wait().await;
                (racer, store.commit_claimed(&SYSTEM, commit, events).await)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (racer, result) = task.await.expect("racer");
            match result {
                Ok(_) => winners.push(racer),
                Err(StoreError::StaleCheckpoint) => {}
                Err(other) => panic!("racer {racer}: unexpected {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let stored = store.fetch_event(&SYSTEM, &run.id, 2).await.expect("event");
        assert_eq!(stored.payload["note"], format!("racer {}", winners[0]));
        assert_eq!(
            store
                .fetch_run(&SYSTEM, &run.id)
                .await
                .expect("run")
                .checkpoint_seq,
            2
        );
    }
}

#[tokio::test]
async fn concurrent_unclaimed_commits_at_one_seq_have_exactly_one_winner() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start(&store, &owner, "r1", t(0)).await;
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for racer in 0..8 {
        let store = store.clone();
        let barrier = barrier.clone();
        let proposal = next(&run, t(2));
        tasks.push(tokio::spawn(async move {
            let events = vec![event(&proposal, 2, t(2), &format!("signal {racer}"))];
            barrier.wait().await;
            let result = store
                .commit_unclaimed(
                    &Scope::Tenantless,
                    1,
                    unclaimed(proposal, ReleaseWake::Immediate, t(2)),
                    events,
                )
                .await;
            (racer, result)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (racer, result) = task.await.expect("racer");
        match result {
            Ok(_) => winners.push(racer),
            Err(StoreError::StaleCheckpoint) => {}
            Err(other) => panic!("racer {racer}: unexpected {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1);
    let stored = store.fetch_event(&SYSTEM, &run.id, 2).await.expect("event");
    assert_eq!(stored.payload["note"], format!("signal {}", winners[0]));
}

trait WithSeq {
    fn with_seq(self, seq: u64) -> Self;
}

impl WithSeq for docket_core::model::Run {
    fn with_seq(mut self, seq: u64) -> Self {
        self.checkpoint_seq = seq;
        self.event_seq = seq;
        self
    }
}
