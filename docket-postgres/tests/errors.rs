//! Native failures map to the portable algebra: lock and statement timeouts are retryable
//! `Unavailable` errors carrying the SQLSTATE, and they leave the store unchanged.

mod common;

use common::*;
use docket_core::model::OwnerScope;
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreError};
use docket_postgres::testing::{self, test_url};
use docket_postgres::{PostgresOptions, PostgresStore};

fn sqlstate(error: &StoreError) -> Option<String> {
    match error {
        StoreError::Unavailable { source, .. } => source
            .downcast_ref::<docket_postgres::DriverError>()
            .and_then(|d| d.code.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn lock_and_statement_timeouts_are_retryable_and_change_nothing() {
    let (store, guard) = open().await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let impatient = |options: PostgresOptions| async move {
        PostgresStore::connect(&test_url(), options)
            .await
            .expect("connect")
    };
    let by_lock = impatient(PostgresOptions {
        lock_timeout_ms: Some(100),
        ..PostgresOptions::with_schema(guard.schema())
    })
    .await;
    let by_statement = impatient(PostgresOptions {
        statement_timeout_ms: Some(100),
        ..PostgresOptions::with_schema(guard.schema())
    })
    .await;
    let before = snapshot(&store).await;

    let mut holder = testing::pool(&store).begin().await.expect("begin");
    sqlx::query(&format!(
        "SELECT 1 FROM {}.runs WHERE run_id = $1 FOR UPDATE",
        guard.schema()
    ))
    .bind(run.id.as_str())
    .execute(&mut *holder)
    .await
    .expect("hold the row lock");

    for (store, code) in [(&by_lock, "55P03"), (&by_statement, "57014")] {
        let proposal = next(&run, t(2));
        let claimed_result = store
            .commit_claimed(
                &SYSTEM,
                claimed(
                    proposal.clone(),
                    1,
                    &lease.claim_token,
                    ClaimedSchedule::RetainClaim,
                    t(2),
                ),
                vec![],
            )
            .await
            .expect_err("the row is locked");
        assert!(claimed_result.is_retryable(), "{claimed_result:?}");
        assert_eq!(sqlstate(&claimed_result).as_deref(), Some(code));
        let unclaimed_result = store
            .commit_unclaimed(
                &SYSTEM,
                1,
                unclaimed(proposal, ReleaseWake::Immediate, t(2)),
                vec![],
            )
            .await
            .expect_err("the row is locked");
        assert!(unclaimed_result.is_retryable(), "{unclaimed_result:?}");
        assert_eq!(sqlstate(&unclaimed_result).as_deref(), Some(code));
    }
    holder.rollback().await.expect("release the lock");
    assert_eq!(snapshot(&store).await, before);
}
