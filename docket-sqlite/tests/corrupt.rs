//! Corrupt stored rows are typed `Corrupt` errors: never a panic, never "absent", and they
//! never spill onto other runs.

mod common;

use common::*;
use docket_core::model::{ClaimToken, EventQuery, RunQuery, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};
use docket_sqlite::testing::{corrupt_event, corrupt_run, execute_sql};

#[tokio::test]
async fn an_undecodable_document_is_corrupt_for_every_reader_and_a_fenced_commit_replaces_it() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    fx.start("healthy", t(0)).await;
    corrupt_run(fx.guard.path(), &run.id).unwrap();
    let error = fx
        .store
        .fetch_run(&Scope::Tenantless, &run.id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert!(error.to_string().contains("r1"), "names the row: {error}");
    let error = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    let error = fx
        .rejected(fx.store.retry_poisoned_run(&Scope::System, &run.id, t(1)))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    // Transitions compare columns only, so a commit whose fence matches replaces the
    // undecodable document and the run reads again.
    let (next, events) = advance(&run, RunStatus::Running, t(1));
    let committed = fx
        .store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed(next, ReleaseWake::Immediate, t(1)),
            events,
        )
        .await
        .unwrap();
    assert_eq!(
        fx.store.fetch_run(&Scope::System, &run.id).await.unwrap(),
        committed
    );
    // Other runs and summary listings are unaffected.
    assert!(fx
        .store
        .fetch_run(&Scope::System, &rid("healthy"))
        .await
        .is_ok());
    let page = fx
        .store
        .list_runs(
            &Scope::System,
            &RunQuery {
                limit: 10,
                ..RunQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.runs.len(), 2);
}

#[tokio::test]
async fn columns_that_disagree_with_the_document_are_corrupt() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    execute_sql(fx.guard.path(), "UPDATE docket_runs SET step = 7").unwrap();
    let error = fx
        .store
        .fetch_run(&Scope::System, &run.id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert!(error.to_string().contains("step"), "{error}");
}

#[tokio::test]
async fn a_document_that_breaks_durable_validity_is_corrupt() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    execute_sql(
        fx.guard.path(),
        "UPDATE docket_runs SET document = json_set(document, '$.output', json('{}'))",
    )
    .unwrap();
    let error = fx
        .store
        .fetch_run(&Scope::System, &run.id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
}

#[tokio::test]
async fn an_unknown_operational_value_is_corrupt_for_claim_operations() {
    let fx = fx().await;
    fx.start("r1", t(0)).await;
    let lease = fx.claim_one(t(1)).await;
    execute_sql(
        fx.guard.path(),
        "UPDATE docket_runs SET latest_checkpoint_type = 'teleported'",
    )
    .unwrap();
    let error = fx
        .rejected(
            fx.store
                .release_claim(&lease.run_id, &lease.claim_token, t(2)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    let error = fx
        .rejected(
            fx.store
                .release_claim(&lease.run_id, &ClaimToken::mint(), t(2)),
        )
        .await;
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    let error = fx
        .rejected(fx.store.claim_due(&policy(t(10_000_000), 5)))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
}

#[tokio::test]
async fn a_corrupt_event_is_corrupt_for_reads_and_a_conflict_for_replays_of_its_seq() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    corrupt_event(fx.guard.path(), &run.id, 2).unwrap();
    let error = fx
        .store
        .fetch_event(&Scope::System, &run.id, 2)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    // The newest row is corrupt: reported, never skipped in favour of an older one.
    let error = fx
        .store
        .fetch_latest_event(&Scope::System, &run.id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    let error = fx
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
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert!(fx
        .store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .is_ok());
    // A commit that replays the corrupt seq cannot be the fact stored there: an event
    // conflict, rolled back.
    let lease = fx.claim_one(t(1)).await;
    let (next, mut events) = advance(&run, RunStatus::Running, t(2));
    events.insert(0, init_events(&run)[1].clone());
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
    assert_eq!(error.kind(), StoreErrorKind::EventConflict);
}

#[tokio::test]
async fn an_event_payload_that_is_not_a_map_is_corrupt() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    execute_sql(
        fx.guard.path(),
        "UPDATE docket_events SET metadata = '[1,2]' WHERE seq = 1",
    )
    .unwrap();
    let error = fx
        .store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
}

#[tokio::test]
async fn a_lease_carries_its_run_unless_the_document_is_undecodable() {
    let fx = fx().await;
    let bad = fx.start("bad", t(0)).await;
    let good = fx.start("good", t(1)).await;
    corrupt_run(fx.guard.path(), &bad.id).unwrap();
    let batch = fx
        .store
        .claim_due(&policy(t(2), 10))
        .await
        .expect("one bad document blocks no claim");
    let carried: Vec<_> = batch
        .leases
        .iter()
        .map(|l| (l.run_id.clone(), l.run.clone()))
        .collect();
    assert_eq!(
        carried,
        vec![
            (bad.id.clone(), None),
            (good.id.clone(), Some(good.clone()))
        ],
        "the sound run travels with its lease, the damaged one is left to fetch_run"
    );
}
