//! Unclaimed commits (signals): an optimistic seq CAS that always releases the claim.

mod common;

use common::*;
use docket_core::model::{CheckpointType, GraphHash, Scope, Timestamp};
use docket_core::store::rules::effects;
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError, StoreErrorKind};
use docket_postgres::testing;

fn kind<T: std::fmt::Debug>(result: Result<T, StoreError>) -> StoreErrorKind {
    result.expect_err("expected an error").kind()
}

#[tokio::test]
async fn an_unclaimed_commit_is_a_seq_cas_that_revokes_the_claim() {
    let (store, _guard) = open().await;
    let owner = tenant("a");
    let scope: Scope = (&owner).into();
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let signal = next(&run, t(2));
    let wake = ReleaseWake::Immediate;

    let before = snapshot(&store).await;
    for (scope, expected_seq, proposal, events, expected) in [
        (
            tenant("b").into(),
            1,
            signal.clone(),
            vec![],
            StoreErrorKind::NotFound,
        ),
        (
            scope.clone(),
            0,
            signal.clone(),
            vec![],
            StoreErrorKind::InvalidTransition,
        ),
        (
            scope.clone(),
            0,
            run.clone(),
            vec![],
            StoreErrorKind::StaleCheckpoint,
        ),
        (
            scope.clone(),
            1,
            {
                let mut r = signal.clone();
                r.graph_hash = GraphHash::new("e".repeat(64)).expect("hash");
                r
            },
            vec![],
            StoreErrorKind::InvalidTransition,
        ),
        (
            scope.clone(),
            1,
            signal.clone(),
            vec![
                event(&run, 1, t(0), "contradiction"),
                event(&signal, 2, t(2), "s"),
            ],
            StoreErrorKind::EventConflict,
        ),
    ] {
        let result = store
            .commit_unclaimed(
                &scope,
                expected_seq,
                unclaimed(proposal, wake, t(2)),
                events,
            )
            .await;
        assert_eq!(kind(result), expected);
        assert_eq!(snapshot(&store).await, before);
    }

    let mut ops_before = testing::operational_state(&store, &run.id)
        .await
        .expect("ops");
    store
        .commit_unclaimed(
            &scope,
            1,
            unclaimed(signal.clone(), wake, t(2)),
            vec![event(&signal, 2, t(2), "s")],
        )
        .await
        .expect("signal commits");
    effects::apply_commit(
        &mut ops_before,
        CheckpointType::InterruptResolved,
        ClaimedSchedule::Release(wake),
        t(2),
    );
    assert_eq!(
        testing::operational_state(&store, &run.id)
            .await
            .expect("ops"),
        ops_before
    );
    assert!(matches!(
        store.refresh_claim(&run.id, &lease.claim_token, t(3)).await,
        Err(StoreError::ClaimLost)
    ));
    let after = snapshot(&store).await;
    let replay = store
        .commit_unclaimed(&scope, 1, unclaimed(signal.clone(), wake, t(3)), vec![])
        .await;
    assert_eq!(kind(replay), StoreErrorKind::StaleCheckpoint);
    // The old holder's claimed commit is fenced out too.
    let stale = store
        .commit_claimed(
            &scope,
            claimed(
                signal.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(3),
            ),
            vec![],
        )
        .await;
    assert_eq!(kind(stale), StoreErrorKind::StaleCheckpoint);
    assert_eq!(snapshot(&store).await, after);

    // Terminal runs absorb: done cannot become running again.
    let finished = done(&signal, t(4));
    store
        .commit_unclaimed(
            &scope,
            2,
            unclaimed(finished.clone(), ReleaseWake::Terminal, t(4)),
            vec![],
        )
        .await
        .expect("finish");
    let after = snapshot(&store).await;
    let revive = store
        .commit_unclaimed(
            &scope,
            3,
            unclaimed(next(&signal, t(5)).clone_with_seq(4), wake, t(5)),
            vec![],
        )
        .await;
    assert_eq!(kind(revive), StoreErrorKind::InvalidTransition);
    assert_eq!(snapshot(&store).await, after);
    let _: Timestamp = t(0);
}

trait WithSeq {
    fn clone_with_seq(&self, seq: u64) -> Self;
}

impl WithSeq for docket_core::model::Run {
    fn clone_with_seq(&self, seq: u64) -> Self {
        let mut run = self.clone();
        run.checkpoint_seq = seq;
        run
    }
}
