//! The operation registry on PostgreSQL beyond the conformance suite: every write is one round
//! trip (directly and behind a transaction pooler, counted by a proxy), an ending wakes the
//! registry's subscribers through LISTEN/NOTIFY, the `ops_retention` URL option reaches the
//! store, and no registry statement scans its table once the registry has grown past the size
//! its plans were made at.

mod common;

use std::time::Duration;

use common::proxy::Proxy;
use common::*;
use docket_core::ops::{
    OperationId, OperationKind, OperationQuery, OperationResult, OperationSpec, OperationStatus,
    OpsError, OpsLifecycleRegistry, SessionId,
};
use docket_postgres::testing::test_url;
use docket_postgres::{Pooler, PostgresOptions, PostgresStore};
use futures::StreamExt;
use uuid::Uuid;

fn owner(n: u128) -> SessionId {
    SessionId::from_uuid(Uuid::from_u128(n))
}

fn op(n: u128) -> OperationSpec {
    OperationSpec::new(
        OperationId::from_uuid(Uuid::from_u128(1_000 + n)),
        OperationKind::DetachedJobWait,
        format!("op {n}"),
    )
}

/// `test_url()` pointed at `proxy`, without TLS (the proxy reads the plain protocol).
fn through(proxy: &Proxy) -> String {
    let url = test_url();
    let (scheme, rest) = url.split_once("://").expect("scheme");
    let (auth, rest) = rest.rsplit_once('@').map_or(("", rest), |(a, r)| (a, r));
    let (_, path) = rest.split_once('/').expect("a database path");
    let at = if auth.is_empty() {
        String::new()
    } else {
        format!("{auth}@")
    };
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{scheme}://{at}{}/{path}{sep}sslmode=disable", proxy.addr)
}

fn upstream() -> String {
    let url = test_url();
    let rest = url.split_once("://").expect("scheme").1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split_once('/').expect("path").0.to_owned()
}

/// The round trips of each registry write in one life of owner `n`'s operations.
async fn life(store: &PostgresStore, proxy: &Proxy, n: u128) -> Vec<(&'static str, u64)> {
    let mut counts = Vec::new();
    let mut since = proxy.round_trips();
    let mut count = |what: &'static str| {
        let now = proxy.round_trips();
        counts.push((what, now - since));
        since = now;
    };
    let who = owner(n);
    let (a, b) = (op(1), op(2));
    store
        .register_operation(&who, &a, Some(4), t(0))
        .await
        .expect("register");
    count("register");
    store
        .register_operation(&who, &b, None, t(0))
        .await
        .expect("register");
    count("register");
    let taken = store.register_operation(&who, &a, None, t(0)).await;
    assert!(matches!(taken, Err(OpsError::AlreadyRegistered { .. })));
    count("refused register");
    store
        .provisioning_succeeded(&who, &a.id, t(1))
        .await
        .expect("start");
    count("provisioning_succeeded");
    store
        .report_progress(&who, &a.id, t(2))
        .await
        .expect("progress");
    count("report_progress");
    store
        .complete_operation(&who, &a.id, OperationResult::new("done"), t(3))
        .await
        .expect("complete");
    count("complete (mints, evicts, notifies)");
    let refused = store
        .complete_operation(&who, &a.id, OperationResult::new("again"), t(4))
        .await;
    assert!(
        matches!(
            refused,
            Err(OpsError::InvalidTransition {
                status: OperationStatus::Completed,
                ..
            })
        ),
        "{refused:?}"
    );
    count("refused transition");
    store
        .terminate_owner(&who, "stop", t(5))
        .await
        .expect("terminate");
    count("terminate_owner");
    store.collect_completed(&who).await.expect("collect");
    count("collect_completed");
    store
        .retire_owner(&who, "gone", t(6))
        .await
        .expect("retire");
    count("retire_owner");
    let retired = store.register_operation(&who, &op(3), None, t(7)).await;
    assert!(matches!(retired, Err(OpsError::OwnerRetired { .. })));
    count("register on a retired owner");
    counts
}

#[tokio::test]
async fn every_registry_write_is_one_round_trip_directly_and_behind_a_pooler() {
    let (_direct_store, direct_guard) = open().await;
    let (_pooled_store, pooled_guard) = open().await;
    let direct_proxy = Proxy::start(upstream()).await;
    let pooled_proxy = Proxy::start(upstream()).await;
    let direct = PostgresStore::open(
        PostgresOptions {
            pool_size: 1,
            ..PostgresOptions::with_schema(direct_guard.schema())
        }
        .with_url(through(&direct_proxy)),
    )
    .await
    .expect("connect through the proxy");
    let pooled = PostgresStore::open(
        PostgresOptions {
            pool_size: 1,
            pooler: Pooler::Transaction,
            listen_url: Some(test_url()),
            ..PostgresOptions::with_schema(pooled_guard.schema())
        }
        .with_url(through(&pooled_proxy)),
    )
    .await
    .expect("connect in transaction-pooler mode");
    // The first life prepares each statement on the connection (directly: sqlx's cache;
    // behind the pooler: docket_prepare).
    life(&direct, &direct_proxy, 1).await;
    life(&pooled, &pooled_proxy, 1).await;
    let direct_counts = life(&direct, &direct_proxy, 2).await;
    let pooled_counts = life(&pooled, &pooled_proxy, 2).await;
    for (what, trips) in &direct_counts {
        assert_eq!(
            *trips, 1,
            "{what} costs {trips} round trips: {direct_counts:?}"
        );
    }
    assert_eq!(pooled_counts, direct_counts);
}

#[tokio::test]
async fn an_ending_wakes_the_registry_subscribers_and_the_watch() {
    let (store, _guard) = open().await;
    let mut hints = store
        .operation_wakeups()
        .expect("a direct store offers registry wakeups");
    // The listener announces itself with one hint once it listens.
    tokio::time::timeout(Duration::from_secs(30), hints.next())
        .await
        .expect("the listener's first hint")
        .expect("an open stream");
    let who = owner(7);
    let spec = op(1);
    store
        .register_operation(&who, &spec, None, t(0))
        .await
        .expect("register");
    store
        .provisioning_succeeded(&who, &spec.id, t(1))
        .await
        .expect("start");
    // A watch that would only notice by polling after an hour notices through the hint.
    let watcher = {
        let store = store.clone();
        let id = spec.id;
        tokio::spawn(async move {
            store
                .await_completion(&who, &id, Duration::from_secs(3_600))
                .await
        })
    };
    store
        .complete_operation(&who, &spec.id, OperationResult::new("ok"), t(2))
        .await
        .expect("complete");
    tokio::time::timeout(Duration::from_secs(30), hints.next())
        .await
        .expect("a hint after the ending committed")
        .expect("an open stream");
    let outcome = tokio::time::timeout(Duration::from_secs(30), watcher)
        .await
        .expect("the watch resolves through the hint, not the hour-long poll")
        .expect("the watch task")
        .expect("the outcome");
    assert_eq!(outcome.status(), OperationStatus::Completed);
}

#[tokio::test]
async fn the_ops_retention_url_option_bounds_the_terminal_records_of_an_owner() {
    let (_store, guard) = open().await;
    let url = test_url();
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = PostgresStore::connect(&format!(
        "{url}{sep}schema={}&ops_retention=2",
        guard.schema()
    ))
    .await
    .expect("connect with ops_retention");
    let who = owner(9);
    for n in 1..=3 {
        let spec = op(n);
        store
            .register_operation(&who, &spec, None, t(0))
            .await
            .expect("register");
        store
            .fail_operation(&who, &spec.id, "no".into(), t(n as i64))
            .await
            .expect("fail");
    }
    let first = store
        .operation_snapshot(&who, &op(1).id)
        .await
        .expect("read");
    assert_eq!(first, None, "the oldest terminal record was evicted");
    for n in 2..=3 {
        let kept = store
            .operation_snapshot(&who, &op(n).id)
            .await
            .expect("read")
            .expect("the two newest are kept");
        assert_eq!(kept.completion_seq.map(|s| s.get()), Some(n as u64));
    }
}

/// The registry's statements keep reaching their rows through the keys after the tables
/// grow: eight owners' lives (register, start, progress, complete, cancel, list, collect,
/// read) on a store whose registry tables hold a few rows — more calls of each statement than
/// PostgreSQL plans custom before it may settle on a generic plan — then 20,000 operations of
/// another owner written straight in (no `ANALYZE`, so nothing re-plans), and two more lives
/// must not start a sequential scan of either table.
#[tokio::test]
async fn registry_writes_planned_on_a_small_store_never_scan_it_once_it_has_grown() {
    // One connection: every cached plan is on it, and its counters flush from it.
    let (store, guard) = open_single_connection().await;
    for n in 0..8 {
        registry_life(&store, n + 1).await;
    }
    let pool = docket_postgres::testing::pool(&store);
    sqlx::raw_sql(&format!(
        "INSERT INTO {s}.ops_owners (owner_id, retired, next_completion_seq)
             VALUES ('00000000-0000-0000-0000-00000000ffff', false, 1);
         INSERT INTO {s}.ops_operations (owner_id, op_id, kind, display_name, source_label,
             status, progress_count, created_at, started_at)
         SELECT '00000000-0000-0000-0000-00000000ffff', gen_random_uuid(), 'filler',
                'filler ' || i, '', 'running', 0, 0, 0
         FROM generate_series(1, 20000) AS i",
        s = guard.schema()
    ))
    .execute(pool)
    .await
    .expect("grow the registry");
    let before = registry_seq_scans(&store, guard.schema(), 8 * 2 + 20_000).await;
    for n in 8..10 {
        registry_life(&store, n + 1).await;
    }
    let after = registry_seq_scans(&store, guard.schema(), 10 * 2 + 20_000).await;
    assert_eq!(
        after, before,
        "a registry statement sent after the tables grew scanned one (ops_owners, \
         ops_operations)"
    );
}

/// One owner's operations from registration to collection.
async fn registry_life(store: &PostgresStore, n: u128) {
    let who = owner(n);
    let (a, b) = (op(1), op(2));
    store
        .register_operation(&who, &a, None, t(0))
        .await
        .expect("register");
    store
        .register_operation(&who, &b, None, t(0))
        .await
        .expect("register");
    store
        .provisioning_succeeded(&who, &a.id, t(1))
        .await
        .expect("start");
    store
        .report_progress(&who, &a.id, t(2))
        .await
        .expect("progress");
    store
        .complete_operation(&who, &a.id, OperationResult::new("done"), t(3))
        .await
        .expect("complete");
    store
        .cancel_operation(&who, &b.id, Some("no longer wanted".into()), t(4))
        .await
        .expect("cancel");
    let read = store.operation_snapshot(&who, &a.id).await.expect("read");
    assert_eq!(read.map(|s| s.status), Some(OperationStatus::Completed));
    store
        .list_operations(&who, &OperationQuery::first(10))
        .await
        .expect("list");
    store.collect_completed(&who).await.expect("collect");
}

/// The server's sequential scans of `ops_owners` and `ops_operations`, once its counters show
/// `inserted` operations.
async fn registry_seq_scans(store: &PostgresStore, schema: &str, inserted: i64) -> (i64, i64) {
    let operations =
        table_counters(store, schema, "ops_operations", |c| c.inserts >= inserted).await;
    let owners = table_counters(store, schema, "ops_owners", |_| true).await;
    (owners.seq_scans, operations.seq_scans)
}
