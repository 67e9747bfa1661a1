//! Races with real concurrency: contested fences have exactly one winner, concurrent claimers
//! get disjoint batches, optimistic increments never lose or duplicate a commit.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use docket_core::model::{EventQuery, RunStatus, Scope};
use docket_core::store::{ReleaseWake, RunStore, StoreError};
use serde_json::json;

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
