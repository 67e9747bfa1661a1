//! Schema version 10: a commit that keeps its claim changes no column any index of `runs`
//! reads, so PostgreSQL writes it as a heap-only (HOT) update, adding no index entries; a
//! commit that releases the claim is an ordinary update. Counted by the server itself
//! (`pg_stat_user_tables`), on a schema of its own, so only this test's writes count.

mod common;

use common::*;
use docket_core::model::{OwnerScope, Run};
use docket_core::store::{ClaimLease, ClaimedSchedule, ReleaseWake};
use docket_postgres::testing;
use docket_postgres::PostgresStore;

/// `(updates, HOT updates)` of the schema's `runs` once the server shows at least `updates`.
async fn updates_of_runs(store: &PostgresStore, schema: &str, updates: i64) -> (i64, i64) {
    let counted = runs_counters(store, schema, updates).await;
    (counted.updates, counted.hot_updates)
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
    let (store, guard) = open_single_connection().await;
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
