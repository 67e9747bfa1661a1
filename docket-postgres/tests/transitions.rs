//! Claimed commits: validation, fences in the rules' order, schedules, event idempotency.
//! Every rejected write is followed by a raw snapshot comparison.

mod common;

use common::*;
use docket_core::model::{CheckpointType, ClaimToken, GraphHash, OwnerScope, RunStatus, Scope};
use docket_core::store::rules::effects;
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError, StoreErrorKind};
use docket_postgres::testing;

fn kind<T: std::fmt::Debug>(result: Result<T, StoreError>) -> StoreErrorKind {
    result.expect_err("expected an error").kind()
}

#[tokio::test]
async fn claimed_commit_fences_reject_without_writing_in_the_rules_order() {
    let (store, _guard) = open().await;
    let owner = tenant("a");
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let token = lease.claim_token.clone();
    let scope: Scope = (&owner).into();
    let retain = ClaimedSchedule::RetainClaim;
    let good = next(&run, t(2));
    let before = snapshot(&store).await;

    let reject = |scope: Scope, commit, expected| {
        let store = store.clone();
        let before = before.clone();
        async move {
            let result = store.commit_claimed(&scope, commit, vec![]).await;
            assert_eq!(kind(result), expected);
            assert_eq!(
                snapshot(&store).await,
                before,
                "unchanged after {expected:?}"
            );
        }
    };
    reject(
        scope.clone(),
        claimed(good.clone(), 1, &ClaimToken::mint(), retain, t(2)),
        StoreErrorKind::StaleCheckpoint,
    )
    .await;
    let not_uuid = ClaimToken::new("not-a-uuid").expect("token");
    reject(
        scope.clone(),
        claimed(good.clone(), 1, &not_uuid, retain, t(2)),
        StoreErrorKind::StaleCheckpoint,
    )
    .await;
    let upper = ClaimToken::new(token.as_str().to_uppercase()).expect("token");
    reject(
        scope.clone(),
        claimed(good.clone(), 1, &upper, retain, t(2)),
        StoreErrorKind::StaleCheckpoint,
    )
    .await;
    // Seq skip is malformed (validated before lookup).
    let mut skip = next(&run, t(2));
    skip.checkpoint_seq = 4;
    reject(
        scope.clone(),
        claimed(skip, 1, &token, retain, t(2)),
        StoreErrorKind::InvalidTransition,
    )
    .await;
    // Identity beats the fence: a changed started_at is invalid even with a wrong token.
    let mut moved = good.clone();
    moved.started_at = Some(t(-1));
    reject(
        scope.clone(),
        claimed(moved, 1, &ClaimToken::mint(), retain, t(2)),
        StoreErrorKind::InvalidTransition,
    )
    .await;
    let mut rebound = good.clone();
    rebound.graph_hash = GraphHash::new("f".repeat(64)).expect("hash");
    reject(
        scope.clone(),
        claimed(rebound, 1, &token, retain, t(2)),
        StoreErrorKind::InvalidTransition,
    )
    .await;
    // Scope beats identity: another tenant sees nothing.
    let mut foreign = good.clone();
    foreign.graph_hash = GraphHash::new("f".repeat(64)).expect("hash");
    reject(
        tenant("b").into(),
        claimed(foreign, 1, &token, retain, t(2)),
        StoreErrorKind::NotFound,
    )
    .await;
    reject(
        Scope::Tenantless,
        claimed(good.clone(), 1, &token, retain, t(2)),
        StoreErrorKind::NotFound,
    )
    .await;
    let mut unknown = good.clone();
    unknown.id = rid("nope");
    reject(
        SYSTEM,
        claimed(unknown, 1, &token, retain, t(2)),
        StoreErrorKind::NotFound,
    )
    .await;

    store
        .commit_claimed(
            &scope,
            claimed(good.clone(), 1, &token, retain, t(2)),
            vec![event(&good, 2, t(2), "ok")],
        )
        .await
        .expect("the current holder commits");
    let after = snapshot(&store).await;
    // Replaying the same proposal is a stale fence now.
    let result = store
        .commit_claimed(
            &scope,
            claimed(good.clone(), 1, &token, retain, t(3)),
            vec![event(&good, 2, t(2), "ok")],
        )
        .await;
    assert_eq!(kind(result), StoreErrorKind::StaleCheckpoint);
    assert_eq!(snapshot(&store).await, after);
    assert_eq!(
        store.fetch_event(&scope, &run.id, 2).await.expect("event"),
        event(&good, 2, t(2), "ok")
    );
}

/// Every schedule's effect on the row equals `rules::effects::apply_commit`.
#[tokio::test]
async fn claimed_schedules_have_the_effects_of_the_shared_rules() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let schedules = [
        (ClaimedSchedule::RetainClaim, RunStatus::Running),
        (
            ClaimedSchedule::Release(ReleaseWake::Immediate),
            RunStatus::Running,
        ),
        (
            ClaimedSchedule::Release(ReleaseWake::At(t(500))),
            RunStatus::Running,
        ),
        (
            ClaimedSchedule::Release(ReleaseWake::External),
            RunStatus::Waiting,
        ),
        (
            ClaimedSchedule::Release(ReleaseWake::Terminal),
            RunStatus::Done,
        ),
    ];
    for (i, (schedule, status)) in schedules.into_iter().enumerate() {
        let id = format!("r{i}");
        let run = start(&store, &owner, &id, t(0)).await;
        let lease = store
            .claim_due(&policy(t(1), 10))
            .await
            .expect("claim")
            .leases
            .into_iter()
            .find(|l| l.run_id == run.id)
            .expect("lease");
        // Pretend earlier trouble, to see the reset.
        let mut before = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        before.claim_abandons = 3;
        testing::write_operational_state(&store, &run.id, &before)
            .await
            .expect("write");
        let mut proposed = match status {
            RunStatus::Done => done(&run, t(2)),
            _ => next(&run, t(2)),
        };
        proposed.status = status;
        let mut commit = claimed(proposed.clone(), 1, &lease.claim_token, schedule, t(3));
        commit.checkpoint_type = CheckpointType::RetryScheduled;
        store
            .commit_claimed(&SYSTEM, commit, vec![])
            .await
            .expect("commit");
        let mut expected = before.clone();
        effects::apply_commit(
            &mut expected,
            CheckpointType::RetryScheduled,
            schedule,
            t(3),
        );
        assert_eq!(
            testing::operational_state(&store, &run.id)
                .await
                .expect("ops"),
            expected,
            "{schedule:?}"
        );
        assert_eq!(
            store.fetch_run(&SYSTEM, &run.id).await.expect("fetch"),
            proposed
        );
        let refreshed = store.refresh_claim(&run.id, &lease.claim_token, t(4)).await;
        assert_eq!(refreshed.is_ok(), schedule == ClaimedSchedule::RetainClaim);
    }
}

#[tokio::test]
async fn a_claimed_commit_accepts_identical_stored_events_and_rejects_different_ones_atomically() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let retain = ClaimedSchedule::RetainClaim;
    let second = next(&run, t(2));
    let stored_init = event(&run, 1, t(0), "init");
    let before = snapshot(&store).await;
    // A contradiction at seq 1 plus a fresh seq 2: nothing is written, not even seq 2.
    let result = store
        .commit_claimed(
            &SYSTEM,
            claimed(second.clone(), 1, &lease.claim_token, retain, t(2)),
            vec![
                event(&run, 1, t(0), "different"),
                event(&second, 2, t(2), "fresh"),
            ],
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::EventConflict { seq: 1 })),
        "{result:?}"
    );
    assert_eq!(snapshot(&store).await, before);
    // The identical stored event is accepted alongside the new one.
    store
        .commit_claimed(
            &SYSTEM,
            claimed(second.clone(), 1, &lease.claim_token, retain, t(2)),
            vec![stored_init.clone(), event(&second, 2, t(2), "fresh")],
        )
        .await
        .expect("identical replay is accepted");
    let page = store
        .list_events(
            &SYSTEM,
            &run.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("events");
    assert_eq!(
        page.events,
        vec![stored_init, event(&second, 2, t(2), "fresh")]
    );
}
