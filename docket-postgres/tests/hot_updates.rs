//! Schema version 10: a commit that keeps its claim changes no column any index of `runs`
//! reads, so PostgreSQL writes it as a heap-only (HOT) update, adding no index entries; a
//! commit that releases the claim is an ordinary update. Counted by the server itself
//! (`pg_stat_user_tables`), on a schema of its own, so only this test's writes count.

mod common;

use std::time::{Duration, Instant};

use common::*;
use docket_core::model::{OwnerScope, Run};
use docket_core::store::{ClaimLease, ClaimedSchedule, ReleaseWake};
use docket_postgres::testing::{self, PostgresHarness};
use docket_postgres::PostgresStore;

/// `(updates, HOT updates)` of the schema's `runs` once the server's counters show at least
/// `updates` updates. The store's one connection is asked to publish its counters at the end
/// of its next transaction (`pg_stat_force_next_flush`, PostgreSQL 15 and later; a backend
/// publishes them at most once a second otherwise), then the counters are read until they
/// arrive.
async fn updates_of_runs(store: &PostgresStore, schema: &str, updates: i64) -> (i64, i64) {
    let pool = testing::pool(store);
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .expect("flush the connection's counters");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let counted: (i64, i64) = sqlx::query_as(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
             WHERE schemaname = $1 AND relname = 'runs'",
        )
        .bind(schema)
        .fetch_one(pool)
        .await
        .expect("the table's counters");
        if counted.0 >= updates {
            return counted;
        }
        assert!(
            Instant::now() < deadline,
            "the server counted {} updates of runs, expected {updates}",
            counted.0
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Commits `run`'s next moment under `lease` at `at` with `schedule`; returns the new run.
async fn commit(
    store: &PostgresStore,
    lease: &ClaimLease,
    run: &Run,
    schedule: ClaimedSchedule,
    at: i64,
) -> Run {
    let proposal = next(run, t(at));
    commit_moment(store, &lease.claim_token, run, proposal, schedule, t(at)).await
}

#[tokio::test]
async fn commits_that_keep_their_claim_are_heap_only_updates() {
    // One connection: every write below and the flush run in the same backend.
    let (store, guard) = PostgresHarness::new()
        .pool_size(1)
        .open_store()
        .await
        .expect("the PostgreSQL test server must be reachable (DOCKET_TEST_POSTGRES_URL)");
    let mut run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    const KEPT: i64 = 20;
    for i in 0..KEPT {
        run = commit(&store, &lease, &run, ClaimedSchedule::RetainClaim, 10 + i).await;
    }
    // The claim, then the twenty commits that renewed it.
    let (updates, hot) = updates_of_runs(&store, guard.schema(), 1 + KEPT).await;
    assert_eq!(
        (updates, hot),
        (1 + KEPT, KEPT),
        "every commit that kept the claim is a HOT update, the claim is not"
    );
    let held = testing::operational_state(&store, &run.id)
        .await
        .expect("decode");
    assert_eq!(
        held.claimed_at,
        Some(t(10 + KEPT - 1)),
        "the claim time is the last commit's"
    );

    // A commit that hands the claim back changes the claim and the wake: an ordinary update.
    commit(
        &store,
        &lease,
        &run,
        ClaimedSchedule::Release(ReleaseWake::Immediate),
        100,
    )
    .await;
    let (updates, hot) = updates_of_runs(&store, guard.schema(), 2 + KEPT).await;
    assert_eq!((updates, hot), (2 + KEPT, KEPT));
}
