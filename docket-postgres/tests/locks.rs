//! Calls that lock a run row inside a transaction release it before they return, also when
//! they write nothing: a claim right after them must not skip the run (`SKIP LOCKED`).

mod common;

use common::*;
use docket_core::model::{OwnerScope, Scope};
use docket_core::store::{ReleaseWake, RunStore, StoreErrorKind};
use docket_postgres::testing::test_url;
use sqlx::{Connection, PgConnection};

/// Whether another session can lock the run row right now, without waiting.
async fn lockable(other: &mut PgConnection, schema: &str, run_id: &str) -> bool {
    let mut tx = other.begin().await.expect("begin");
    let locked = sqlx::query(&format!(
        "SELECT 1 FROM {schema}.runs WHERE run_id = $1 FOR UPDATE NOWAIT"
    ))
    .bind(run_id)
    .fetch_optional(&mut *tx)
    .await;
    tx.rollback().await.expect("rollback");
    match locked {
        Ok(row) => row.is_some(),
        Err(e) if e.to_string().contains("55P03") || e.to_string().contains("could not obtain") => {
            false
        }
        Err(e) => panic!("probe: {e}"),
    }
}

#[tokio::test]
async fn no_op_and_rejected_row_locking_calls_leave_the_row_unlocked() {
    let (store, guard) = open().await;
    let mut other = PgConnection::connect(&test_url()).await.expect("server");
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    for round in 0..20 {
        // Not poisoned: nothing to retry, the transaction only read the locked row.
        store
            .retry_poisoned_run(&Scope::System, &run.id, t(1))
            .await
            .expect("no-op retry");
        assert!(
            lockable(&mut other, guard.schema(), run.id.as_str()).await,
            "round {round}: retry_poisoned_run left the row locked"
        );
        // A stale signal is rejected after the row was locked.
        let error = store
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq + 1,
                unclaimed(next(&next(&run, t(1)), t(1)), ReleaseWake::Immediate, t(1)),
                vec![],
            )
            .await
            .expect_err("stale");
        assert_eq!(error.kind(), StoreErrorKind::StaleCheckpoint);
        assert!(
            lockable(&mut other, guard.schema(), run.id.as_str()).await,
            "round {round}: a rejected commit_unclaimed left the row locked"
        );
    }
    // And the run is still claimable at once.
    let lease = claim_one(&store, t(2)).await;
    assert_eq!(lease.run_id, run.id);
}

/// Scenario 122 of `docs/scenarios.md`: rows another session holds locked are skipped, never waited
/// for, and the claim still fills its demand from the due rows after them (lock-then-rank, not
/// rank-then-lock: ranking the first page before locking would come back short).
#[tokio::test]
async fn a_claim_skips_rows_locked_elsewhere_and_still_fills_its_demand() {
    let (store, guard) = open().await;
    for i in 0..12 {
        start(&store, &OwnerScope::Tenantless, &format!("r{i:02}"), t(i)).await;
    }
    let mut other = PgConnection::connect(&test_url()).await.expect("connect");
    let mut tx = other.begin().await.expect("begin");
    let locked: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT run_id FROM {}.runs ORDER BY wake_at, run_id LIMIT 5 FOR UPDATE",
        guard.schema()
    ))
    .fetch_all(&mut *tx)
    .await
    .expect("lock the first page");
    assert_eq!(locked, ["r00", "r01", "r02", "r03", "r04"]);

    let batch = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.claim_due(&policy(t(100), 5)),
    )
    .await
    .expect("the claim does not wait for the locked rows")
    .expect("claim");
    assert_eq!(lease_ids(&batch), ["r05", "r06", "r07", "r08", "r09"]);

    tx.rollback().await.expect("rollback");
    let rest = store.claim_due(&policy(t(100), 10)).await.expect("claim");
    assert_eq!(
        lease_ids(&rest),
        ["r00", "r01", "r02", "r03", "r04", "r10", "r11"],
        "the once-locked rows are claimed once free"
    );
}
