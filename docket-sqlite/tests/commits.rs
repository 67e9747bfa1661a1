//! `commit_claimed` / `commit_unclaimed`: identity, fences, status matrix, schedules' fit,
//! events, counter resets — in the shared validation order.

mod common;

use common::*;
use docket_core::model::{ClaimToken, EventQuery, EventType, GraphHash, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError, StoreErrorKind};
use serde_json::json;

fn kind(error: &StoreError) -> StoreErrorKind {
    error.kind()
}

#[tokio::test]
async fn claimed_commit_with_current_fences_replaces_the_document_and_appends_events() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let (next, events) = advance(&run, RunStatus::Running, t(2));
    let stored = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed(
                next.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(stored, next);
    // Read through a reader connection: read-your-writes across connections.
    assert_eq!(
        fx.store
            .fetch_run(&Scope::Tenantless, &run.id)
            .await
            .unwrap(),
        next
    );
    let latest = fx
        .store
        .fetch_latest_event(&Scope::Tenantless, &run.id)
        .await
        .unwrap();
    assert_eq!(latest, events.last().cloned());
}

#[tokio::test]
async fn claimed_commit_with_a_wrong_token_is_stale_and_changes_nothing() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    fx.claim_one(t(1)).await;
    let (next, events) = advance(&run, RunStatus::Running, t(2));
    let error = fx
        .rejected(fx.store.commit_claimed(
            &Scope::System,
            claimed(
                next,
                1,
                &ClaimToken::mint(),
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn claimed_commit_with_a_past_or_future_seq_is_stale_and_changes_nothing() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let moved = fx
        .commit_next(
            &lease,
            RunStatus::Running,
            ClaimedSchedule::RetainClaim,
            t(2),
        )
        .await
        .unwrap();
    // Stale: builds on seq 1 while seq 2 is committed.
    let (stale, events) = advance(&run, RunStatus::Running, t(3));
    let error = fx
        .rejected(fx.store.commit_claimed(
            &Scope::System,
            claimed(
                stale,
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(3),
            ),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
    // From the future: builds on seq 3 which does not exist yet.
    let (ahead, _) = advance(&moved, RunStatus::Running, t(3));
    let (ahead, events) = advance(&ahead, RunStatus::Running, t(3));
    let error = fx
        .rejected(fx.store.commit_claimed(
            &Scope::System,
            claimed(
                ahead,
                3,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(3),
            ),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn claimed_commit_on_an_unclaimed_run_is_stale() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (next, events) = advance(&run, RunStatus::Running, t(2));
    let error = fx
        .rejected(fx.store.commit_claimed(
            &Scope::System,
            claimed(
                next,
                1,
                &ClaimToken::mint(),
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn identity_mismatch_is_invalid_even_when_the_fence_is_also_stale() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    fx.claim_one(t(1)).await;
    let (next, events) = advance(&run, RunStatus::Running, t(2));
    let mut other_hash = next.clone();
    other_hash.graph_hash = GraphHash::new("f".repeat(64)).unwrap();
    let mut other_start = next.clone();
    other_start.started_at = Some(t(1));
    for proposal in [other_hash, other_start] {
        let error = fx
            .rejected(fx.store.commit_claimed(
                &Scope::System,
                claimed(
                    proposal,
                    1,
                    &ClaimToken::mint(),
                    ClaimedSchedule::RetainClaim,
                    t(2),
                ),
                events.clone(),
            ))
            .await;
        assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
    }
}

#[tokio::test]
async fn commit_on_a_missing_run_is_not_found() {
    let fx = fx().await;
    let run = initial_run("ghost", &fx.graph, t(0));
    let (next, events) = advance(&run, RunStatus::Running, t(2));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(2)),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn a_proposal_that_is_not_expected_plus_one_is_invalid() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (mut next, events) = advance(&run, RunStatus::Running, t(2));
    next.checkpoint_seq = 5;
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(2)),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
    let (next, events) = advance(&run, RunStatus::Running, t(2));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            u64::MAX,
            unclaimed(next, ReleaseWake::Immediate, t(2)),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
}

#[tokio::test]
async fn an_event_conflict_rolls_back_the_whole_commit() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let (next, mut events) = advance(&run, RunStatus::Running, t(2));
    let mut clash = init_events(&run)[1].clone();
    clash.payload.insert("n".into(), json!("rewritten history"));
    events.insert(0, clash);
    let error = fx
        .rejected(fx.store.commit_claimed(
            &Scope::System,
            claimed(
                next,
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events,
        ))
        .await;
    assert!(
        matches!(error, StoreError::EventConflict { seq: 2 }),
        "{error:?}"
    );
}

#[tokio::test]
async fn replaying_an_identical_stored_event_is_accepted_once() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (next, mut events) = advance(&run, RunStatus::Running, t(2));
    events.insert(0, init_events(&run)[1].clone());
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next.clone(), ReleaseWake::Immediate, t(2)),
            events,
        )
        .await
        .unwrap();
    let page = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

#[tokio::test]
async fn the_status_matrix_is_checked_after_the_fences() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (waiting, events) = advance(&run, RunStatus::Waiting, t(1));
    let waiting = fx
        .store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(waiting, ReleaseWake::External, t(1)),
            events,
        )
        .await
        .unwrap();
    // waiting → done is not in the matrix.
    let (done, events) = advance(&waiting, RunStatus::Done, t(2));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            2,
            unclaimed(done.clone(), ReleaseWake::Terminal, t(2)),
            events.clone(),
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
    // With a stale seq the fence wins: a racing signal surfaces as stale, not invalid.
    let (done_stale, events) = advance(&run, RunStatus::Done, t(2));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(done_stale, ReleaseWake::Terminal, t(2)),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn terminal_statuses_are_absorbing() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (cancelled, events) = advance(&run, RunStatus::Cancelled, t(1));
    let cancelled = fx
        .store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(cancelled, ReleaseWake::Terminal, t(1)),
            events,
        )
        .await
        .unwrap();
    let (revived, events) = advance(&cancelled, RunStatus::Running, t(2));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            2,
            unclaimed(revived, ReleaseWake::Immediate, t(2)),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
}

#[tokio::test]
async fn a_schedule_that_does_not_fit_the_status_is_invalid() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let cases = [
        (RunStatus::Waiting, ClaimedSchedule::RetainClaim),
        (
            RunStatus::Running,
            ClaimedSchedule::Release(ReleaseWake::External),
        ),
        (
            RunStatus::Running,
            ClaimedSchedule::Release(ReleaseWake::Terminal),
        ),
        (
            RunStatus::Done,
            ClaimedSchedule::Release(ReleaseWake::Immediate),
        ),
        (
            RunStatus::Waiting,
            ClaimedSchedule::Release(ReleaseWake::At(t(9))),
        ),
    ];
    for (status, schedule) in cases {
        let (next, events) = advance(&run, status, t(2));
        let error = fx
            .rejected(fx.store.commit_claimed(
                &Scope::System,
                claimed(next, 1, &lease.claim_token, schedule, t(2)),
                events,
            ))
            .await;
        assert_eq!(
            kind(&error),
            StoreErrorKind::InvalidTransition,
            "{status} {schedule:?}"
        );
    }
}

#[tokio::test]
async fn an_unclaimed_commit_fences_out_the_current_holder() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    let (signal, events) = advance(&run, RunStatus::Running, t(2));
    fx.store
        .commit_unclaimed(
            &Scope::Tenantless,
            1,
            unclaimed(signal, ReleaseWake::Immediate, t(2)),
            events,
        )
        .await
        .unwrap();
    let info = fx.store.inspect_run(&Scope::System, &run.id).await.unwrap();
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(2))));
    let error = fx
        .rejected(fx.commit_next(
            &lease,
            RunStatus::Running,
            ClaimedSchedule::RetainClaim,
            t(3),
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn an_unclaimed_commit_with_a_moved_seq_is_stale() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (first, events) = advance(&run, RunStatus::Running, t(1));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(first, ReleaseWake::Immediate, t(1)),
            events,
        )
        .await
        .unwrap();
    let (late, events) = advance(&run, RunStatus::Running, t(2));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(late, ReleaseWake::Immediate, t(2)),
            events,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn every_commit_resets_attempts_abandons_and_poison() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let mut policy = policy(t(1), 1);
    policy.max_claim_attempts = std::num::NonZeroU32::new(1).unwrap();
    policy.orphan_ttl_ms = 0;
    let batch = fx.store.claim_due(&policy).await.unwrap();
    assert_eq!(batch.leases.len(), 1);
    policy.now = t(2);
    let batch = fx.store.claim_due(&policy).await.unwrap();
    assert_eq!(batch.poisoned.len(), 1);
    let info = fx.store.inspect_run(&Scope::System, &run.id).await.unwrap();
    assert!(info.is_poisoned());
    assert_eq!(info.claim_attempts, 1);

    let (signal, events) = advance(&run, RunStatus::Running, t(3));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(signal, ReleaseWake::Immediate, t(3)),
            events,
        )
        .await
        .unwrap();
    let info = fx.store.inspect_run(&Scope::System, &run.id).await.unwrap();
    assert!(!info.is_poisoned());
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert_eq!(info.wake_at, Some(t(3)));
}

#[tokio::test]
async fn the_checkpoint_event_type_round_trips_exactly() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    let (next, mut events) = advance(&run, RunStatus::Running, t(1));
    events[0].event_type = EventType::InterruptResolved;
    events[0].node_id = Some("ask".into());
    events[0].payload.insert("ratio".into(), json!(0.1 + 0.2));
    events[0].metadata.insert(
        "nested".into(),
        json!({"b": [1, 2.5e-300, null], "a": true}),
    );
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(1)),
            events.clone(),
        )
        .await
        .unwrap();
    let stored = fx
        .store
        .fetch_event(&Scope::System, &run.id, 3)
        .await
        .unwrap();
    assert_eq!(stored, events[0]);
}
