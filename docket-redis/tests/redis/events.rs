//! Event reads: single events, the newest one, paging across gaps, scopes, corruption.

use docket_core::model::{EventQuery, OwnerScope, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, RunStore, StoreErrorKind};

use crate::common::*;

/// A run whose retained events are seqs 1, 2, 5, 6, 9 (gaps are legal) with `event_seq` 9.
async fn run_with_gaps(fx: &Fx, owner: &OwnerScope) -> docket_core::model::Run {
    let run = start_simple(&fx.store, owner, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    let mut current = run;
    for (at, seqs, last) in [(2, vec![2], 2), (3, vec![5, 6], 6), (4, vec![9], 9)] {
        let mut proposal = next(&current, RunStatus::Running, t(at));
        proposal.event_seq = last;
        let events = seqs
            .iter()
            .map(|&s| event(&proposal, s, t(at), &format!("e{s}")))
            .collect();
        current = fx
            .store
            .commit_claimed(
                &Scope::System,
                claimed_commit(
                    proposal,
                    current.checkpoint_seq,
                    &lease.claim_token,
                    ClaimedSchedule::RetainClaim,
                    t(at),
                ),
                events,
            )
            .await
            .expect("commit");
    }
    current
}

#[tokio::test]
async fn pages_walk_the_retained_events_across_gaps() {
    let fx = open().await;
    let owner = tenant("acme");
    let run = run_with_gaps(&fx, &owner).await;
    let scope = scope_of(&owner);
    let mut after = 0;
    let mut pages = Vec::new();
    loop {
        let page = fx
            .store
            .list_events(
                &scope,
                &run.id,
                &EventQuery {
                    after_seq: after,
                    limit: 2,
                },
            )
            .await
            .expect("page");
        assert_eq!(page.oldest_available_seq, Some(1));
        assert_eq!(page.latest_available_seq, Some(9));
        assert_eq!(page.latest_seq, 9);
        pages.push(page.events.iter().map(|e| e.seq).collect::<Vec<_>>());
        after = page.next_after_seq;
        if !page.has_more {
            break;
        }
    }
    assert_eq!(pages, vec![vec![1, 2], vec![5, 6], vec![9]]);
    let past = fx
        .store
        .list_events(
            &scope,
            &run.id,
            &EventQuery {
                after_seq: 9,
                limit: 2,
            },
        )
        .await
        .expect("empty page");
    assert!(past.events.is_empty() && !past.has_more);
    assert_eq!(past.next_after_seq, 9);
    let beyond = fx
        .store
        .list_events(
            &scope,
            &run.id,
            &EventQuery {
                after_seq: u64::MAX,
                limit: 2,
            },
        )
        .await
        .expect("empty page");
    assert!(beyond.events.is_empty() && !beyond.has_more);
    let gap = fx
        .store
        .fetch_event(&scope, &run.id, 3)
        .await
        .expect_err("gap");
    assert_eq!(gap.kind(), StoreErrorKind::NotFound);
    let latest = fx
        .store
        .fetch_latest_event(&scope, &run.id)
        .await
        .expect("latest")
        .expect("some");
    assert_eq!(
        (latest.seq, latest.payload["tag"].as_str()),
        (9, Some("e9"))
    );
}

#[tokio::test]
async fn events_are_concealed_from_other_scopes() {
    let fx = open().await;
    let run = run_with_gaps(&fx, &tenant("acme")).await;
    let other = scope_of(&tenant("other"));
    for err in [
        fx.store.fetch_event(&other, &run.id, 1).await.map(|_| ()),
        fx.store
            .fetch_latest_event(&other, &run.id)
            .await
            .map(|_| ()),
        fx.store
            .list_events(
                &other,
                &run.id,
                &EventQuery {
                    after_seq: 0,
                    limit: 5,
                },
            )
            .await
            .map(|_| ()),
        fx.store
            .fetch_event(&Scope::Tenantless, &run.id, 1)
            .await
            .map(|_| ()),
    ] {
        assert_eq!(err.expect_err("concealed").kind(), StoreErrorKind::NotFound);
    }
    let err = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 0,
            },
        )
        .await
        .expect_err("limit 0");
    assert_eq!(err.kind(), StoreErrorKind::InvalidArgument);
}

#[tokio::test]
async fn a_run_without_retained_events_has_no_latest_event() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &owner, "g").await;
    let run = initialized_run("r1", &graph, t(0));
    fx.store
        .initialize(&owner, init_proposal(run.clone(), t(0), t(0)), vec![])
        .await
        .expect("initialize without events");
    let latest = fx
        .store
        .fetch_latest_event(&Scope::System, &run.id)
        .await
        .expect("visible run");
    assert_eq!(latest, None);
    let page = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 5,
            },
        )
        .await
        .expect("page");
    assert_eq!(
        (
            page.oldest_available_seq,
            page.latest_available_seq,
            page.latest_seq
        ),
        (None, None, 1)
    );
}
