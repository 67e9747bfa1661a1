//! Wakeups: NOTIFY after commits that make a run due, silence otherwise, and the store's
//! listener delivering hints to subscribers.

mod common;

use std::time::Duration;

use common::*;
use docket_core::model::OwnerScope;
use docket_core::store::{
    AbandonMode, AbandonPolicy, ClaimedSchedule, ReleaseWake, RunStore, Wakeups,
};
use docket_postgres::testing::test_url;
use docket_postgres::{listener_application_name, WAKE_CHANNEL};
use futures::{FutureExt, StreamExt};
use sqlx::postgres::PgListener;
use sqlx::{Connection, PgConnection};

const DEADLINE: Duration = Duration::from_secs(20);

async fn next_hint(wakeups: &mut Wakeups) {
    tokio::time::timeout(DEADLINE, wakeups.next())
        .await
        .expect("a hint before the deadline")
        .expect("the stream is open");
}

#[tokio::test]
async fn subscribers_get_a_hint_when_a_commit_makes_a_run_due() {
    let (store, _guard) = open().await;
    let mut wakeups = store.wakeups().expect("wakeups are offered");
    next_hint(&mut wakeups).await; // the listener is live
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    next_hint(&mut wakeups).await; // initialize with a due wake
    let lease = claim_one(&store, t(1)).await;
    let second = next(&run, t(2));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                second,
                1,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
                t(2),
            ),
            vec![],
        )
        .await
        .expect("commit");
    next_hint(&mut wakeups).await;
}

/// Scenario 161 of `docs/scenarios.md`: the listener is an isolated fast path. Killing its
/// connection from the server side disturbs nothing else: it reconnects on its own (announcing
/// itself with a hint), the store keeps serving, and hints flow again.
#[tokio::test]
async fn the_listener_reconnects_after_its_connection_is_killed() {
    let (store, guard) = open().await;
    let mut wakeups = store.wakeups().expect("wakeups are offered");
    next_hint(&mut wakeups).await; // the listener is live
    let mut admin = PgConnection::connect(&test_url())
        .await
        .expect("the PostgreSQL test server must be reachable");
    let name = listener_application_name(guard.schema());
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&name)
    .fetch_all(&mut admin)
    .await
    .expect("terminate");
    assert_eq!(killed, [true], "exactly one listener connection, {name:?}");

    next_hint(&mut wakeups).await; // back, and saying so
    while wakeups.next().now_or_never().flatten().is_some() {}
    start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    next_hint(&mut wakeups).await;
    let listening: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
            .bind(&name)
            .fetch_one(&mut admin)
            .await
            .expect("count");
    assert_eq!(listening, 1, "one listener again");
}

/// The next notification about this schema (or the marker) must carry `expected`.
async fn expect_next(raw: &mut PgListener, schema: &str, marker: &str, expected: &str) {
    loop {
        let n = tokio::time::timeout(DEADLINE, raw.recv())
            .await
            .expect("a notification before the deadline")
            .expect("recv");
        if n.payload() == schema || n.payload() == marker {
            assert_eq!(n.payload(), expected);
            return;
        }
    }
}

/// Payload-tagged observation through a raw listener: silent operations are followed by a
/// marker, and the marker must be the first thing seen.
#[tokio::test]
async fn only_due_wakes_notify_and_only_after_commit() {
    let (store, guard) = open().await;
    let mut raw = PgListener::connect(&test_url()).await.expect("listener");
    raw.listen(WAKE_CHANNEL).await.expect("listen");
    let schema = guard.schema().to_owned();
    let marker = format!("marker:{schema}");
    let pool = docket_postgres::testing::pool(&store).clone();
    let send_marker = || {
        let pool = pool.clone();
        let marker = marker.clone();
        async move {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(WAKE_CHANNEL)
                .bind(marker)
                .execute(&pool)
                .await
                .expect("marker");
        }
    };

    // A future first wake is silent; a due one notifies.
    let future = start(&store, &OwnerScope::Tenantless, "future", t(10_000)).await;
    send_marker().await;
    expect_next(&mut raw, &schema, &marker, &marker).await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    expect_next(&mut raw, &schema, &marker, &schema).await;

    // Claims, releases, retained claims, future/external wakes, abandons and failed commits
    // are silent.
    let lease = claim_one(&store, t(1)).await;
    store
        .release_claim(&run.id, &lease.claim_token, t(2))
        .await
        .expect("release");
    let lease = claim_one(&store, t(3)).await;
    let second = next(&run, t(4));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                second.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(4),
            ),
            vec![],
        )
        .await
        .expect("retain");
    let third = next(&second, t(5));
    let conflict = store
        .commit_claimed(
            &SYSTEM,
            claimed(
                third.clone(),
                2,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
                t(5),
            ),
            vec![event(&run, 1, t(9), "contradiction")],
        )
        .await;
    assert!(conflict.is_err(), "a rolled-back commit");
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                third.clone(),
                2,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::At(t(10_000))),
                t(5),
            ),
            vec![],
        )
        .await
        .expect("future wake");
    let mut fourth = next(&third, t(6));
    fourth.status = docket_core::model::RunStatus::Waiting;
    store
        .commit_unclaimed(
            &SYSTEM,
            3,
            unclaimed(fourth.clone(), ReleaseWake::External, t(6)),
            vec![],
        )
        .await
        .expect("external");
    let lease = claim_one(&store, t(20_000)).await; // the future run
    let policy = AbandonPolicy {
        expected_seq: 1,
        now: t(20_000),
        retry_at: t(20_001),
        max_claim_abandons: std::num::NonZeroU32::new(3).expect("max"),
        mode: AbandonMode::Poisoning,
    };
    store
        .abandon_claim(&future.id, &lease.claim_token, &policy)
        .await
        .expect("abandon");
    send_marker().await;
    expect_next(&mut raw, &schema, &marker, &marker).await;

    // A signal that makes the run due notifies; so does a due `at` and poison recovery.
    let mut fifth = next(&fourth, t(7));
    fifth.status = docket_core::model::RunStatus::Running;
    store
        .commit_unclaimed(
            &SYSTEM,
            4,
            unclaimed(fifth, ReleaseWake::At(t(7)), t(7)),
            vec![],
        )
        .await
        .expect("due signal");
    expect_next(&mut raw, &schema, &marker, &schema).await;
    let mut poisoned = docket_postgres::testing::operational_state(&store, &run.id)
        .await
        .expect("ops");
    poisoned.wake_at = None;
    docket_core::store::rules::effects::apply_claim_poison(&mut poisoned, t(8));
    docket_postgres::testing::write_operational_state(&store, &run.id, &poisoned)
        .await
        .expect("poison");
    store
        .retry_poisoned_run(&SYSTEM, &run.id, t(9))
        .await
        .expect("recover");
    expect_next(&mut raw, &schema, &marker, &schema).await;
}

#[tokio::test]
async fn poll_only_stores_offer_no_wakeups() {
    let (store, _guard) = docket_postgres::testing::PostgresHarness::new()
        .poll_only()
        .open_store()
        .await
        .expect("the PostgreSQL test server must be reachable");
    assert!(store.wakeups().is_none());
    assert!(store.is_poll_only());
}
