//! Behind a real PgBouncer in transaction mode (a private one per test): a store in
//! `pooler=transaction` mode serves concurrent clients whose statements interleave on shared
//! server connections, migrates concurrently, keeps its session settings inside each
//! transaction and gets wakeups through `listen_url`; a store in the default mode behind the
//! same pooler fails with errors that name the setting or option that fixes them.

mod common;

use std::time::Duration;

use common::*;
use docket_core::model::{OwnerScope, RunQuery, RunStatus};
use docket_core::store::{
    ClaimPolicy, ClaimRequest, ClaimedSchedule, ReleaseWake, RunStore, StoreError, Wakeups,
};
use docket_postgres::testing::{test_url, PgBouncer, PostgresHarness, SchemaGuard};
use docket_postgres::{driver_options, Pooler, PostgresOptions, PostgresStore};
use futures::StreamExt;
use sqlx::{Connection, PgConnection, Row};

const DEADLINE: Duration = Duration::from_secs(20);

fn bouncer(settings: &[(&str, &str)]) -> PgBouncer {
    PgBouncer::start(settings).expect("a private PgBouncer (apt-get install -y pgbouncer)")
}

/// A store in a fresh schema, everything through `bouncer` but LISTEN.
async fn pooled_store(bouncer: &PgBouncer) -> (PostgresStore, SchemaGuard) {
    PostgresHarness::new()
        .url(bouncer.docket_url())
        .open_store()
        .await
        .expect("a store through PgBouncer")
}

/// Another store on `schema` through `bouncer`, with `options` (schema and pooler set here).
async fn connect_through(
    bouncer: &PgBouncer,
    schema: &str,
    options: PostgresOptions,
) -> Result<PostgresStore, StoreError> {
    PostgresStore::open(
        PostgresOptions {
            schema: schema.to_owned(),
            ..options
        }
        .with_url(bouncer.url()),
    )
    .await
}

fn transaction_pooled(pool_size: u32) -> PostgresOptions {
    PostgresOptions {
        pool_size,
        pooler: Pooler::Transaction,
        listen_url: Some(test_url()),
        ..PostgresOptions::default()
    }
}

#[tokio::test]
async fn concurrent_clients_share_two_server_connections_without_meeting_each_others_statements() {
    // Six stores of six connections each over two server connections: every statement of
    // every client lands on a server connection other clients use in between.
    let bouncer = bouncer(&[("default_pool_size", "2")]);
    let (first, guard) = pooled_store(&bouncer).await;
    let mut stores = vec![first];
    for _ in 0..5 {
        stores.push(
            connect_through(&bouncer, guard.schema(), transaction_pooled(6))
                .await
                .expect("connect"),
        );
    }
    let owner = OwnerScope::Tenantless;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, store) in stores.iter().enumerate() {
        let store = store.clone();
        let owner = owner.clone();
        tasks.spawn(async move {
            for n in 0..8 {
                let run = start(&store, &owner, &format!("s{i}r{n}"), t(0)).await;
                let read = store.fetch_run(&SYSTEM, &run.id).await.expect("fetch");
                assert_eq!(read, run);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("a starter task");
    }
    // Now every store drains concurrently: claim (every other store tenant-fair, through the
    // claim function), read, finish.
    for (i, store) in stores.iter().enumerate() {
        let store = store.clone();
        let request = ClaimRequest {
            policy: if i % 2 == 0 {
                ClaimPolicy::TenantFair
            } else {
                ClaimPolicy::Oldest
            },
            ..policy(t(1), 2)
        };
        tasks.spawn(async move {
            loop {
                let batch = store.claim_due(&request).await.expect("claim");
                if batch.leases.is_empty() {
                    return;
                }
                for lease in batch.leases {
                    let run = store.fetch_run(&SYSTEM, &lease.run_id).await.expect("read");
                    let finished = done(&run, t(2));
                    store
                        .commit_claimed(
                            &SYSTEM,
                            claimed(
                                finished.clone(),
                                lease.checkpoint_seq,
                                &lease.claim_token,
                                ClaimedSchedule::Release(ReleaseWake::Terminal),
                                t(2),
                            ),
                            vec![event(&finished, finished.event_seq, t(2), "done")],
                        )
                        .await
                        .expect("finish");
                }
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("a draining task");
    }
    let page = stores[0]
        .list_runs(
            &SYSTEM,
            &RunQuery {
                limit: 100,
                statuses: Some(vec![RunStatus::Done]),
                ..RunQuery::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(page.runs.len(), 48, "every run finished exactly once");
}

#[tokio::test]
async fn concurrent_starters_migrate_one_schema_through_the_pooler() {
    let bouncer = bouncer(&[]);
    let (_store, guard) = pooled_store(&bouncer).await;
    let schema = format!("{}_m", guard.schema());
    let starters = (0..4).map(|_| connect_through(&bouncer, &schema, transaction_pooled(1)));
    let outcomes = futures::future::join_all(starters).await;
    let dropped =
        PostgresStore::drop_schema(&format!("{}&schema={schema}", bouncer.docket_url())).await;
    for outcome in outcomes {
        outcome.expect("every starter finds the schema migrated");
    }
    dropped.expect("drop the schema through the pooler");
}

#[tokio::test]
async fn session_settings_hold_inside_each_transaction_and_never_leak_to_the_server_connection() {
    // One server connection: anything a statement left behind would be seen by the next client.
    let bouncer = bouncer(&[("default_pool_size", "1")]);
    let (store, guard) = pooled_store(&bouncer).await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let impatient = connect_through(
        &bouncer,
        guard.schema(),
        PostgresOptions {
            lock_timeout_ms: Some(100),
            ..transaction_pooled(1)
        },
    )
    .await
    .expect("connect");
    let before = snapshot(&store).await;
    // The row lock is held on a direct connection, so the pooler's one server connection stays
    // free for the commit that must wait for it.
    let mut admin = PgConnection::connect(&test_url())
        .await
        .expect("the PostgreSQL test server must be reachable");
    let mut holder = admin.begin().await.expect("begin");
    sqlx::query(&format!(
        "SELECT 1 FROM {}.runs WHERE run_id = $1 FOR UPDATE",
        guard.schema()
    ))
    .bind(run.id.as_str())
    .execute(&mut *holder)
    .await
    .expect("hold the row lock");
    let second = next(&run, t(2));
    let waited = impatient
        .commit_claimed(
            &SYSTEM,
            claimed(
                second.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            vec![event(&second, 2, t(2), "late")],
        )
        .await;
    holder.rollback().await.expect("release the lock");
    let Err(StoreError::Unavailable {
        retryable: true,
        source,
    }) = &waited
    else {
        panic!("expected a lock timeout, got {waited:?}");
    };
    assert!(source.to_string().contains("55P03"), "{source}");
    assert_eq!(snapshot(&store).await, before, "nothing was written");
    // Through the same single server connection, a plain client sees the server's default.
    let (options, _) = driver_options(&bouncer.docket_url()).expect("options");
    let mut plain = PgConnection::connect_with(&options).await.expect("connect");
    let row = sqlx::raw_sql("SHOW lock_timeout")
        .fetch_one(&mut plain)
        .await
        .expect("show");
    assert_eq!(row.try_get::<String, _>(0).expect("value"), "0");
}

async fn next_hint(wakeups: &mut Wakeups) {
    tokio::time::timeout(DEADLINE, wakeups.next())
        .await
        .expect("a hint before the deadline")
        .expect("the stream is open");
}

#[tokio::test]
async fn wakeups_come_through_listen_url_while_statements_go_through_the_pooler() {
    let bouncer = bouncer(&[]);
    let (store, _guard) = pooled_store(&bouncer).await;
    assert!(store.is_transaction_pooled() && !store.is_poll_only());
    let mut wakeups = store.wakeups().expect("wakeups are offered");
    next_hint(&mut wakeups).await; // the listener is live
    start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    next_hint(&mut wakeups).await; // the commit through the pooler made the run due
}

#[tokio::test]
async fn a_listen_url_that_does_not_answer_fails_at_connect() {
    let bouncer = bouncer(&[]);
    let (_store, guard) = pooled_store(&bouncer).await;
    let error = connect_through(
        &bouncer,
        guard.schema(),
        PostgresOptions {
            listen_url: Some("postgres://postgres@127.0.0.1:1/test".into()),
            ..transaction_pooled(1)
        },
    )
    .await
    .expect_err("nothing listens on port 1");
    assert!(error.to_string().contains("listen_url"), "{error}");
}

#[tokio::test]
async fn a_refused_startup_parameter_names_the_pooler_setting_and_the_url_option() {
    let bouncer = bouncer(&[]);
    let (_store, guard) = pooled_store(&bouncer).await;
    let refused = connect_through(&bouncer, guard.schema(), PostgresOptions::default())
        .await
        .expect_err("PgBouncer refuses extra_float_digits");
    let message = refused.to_string();
    for fix in [
        "ignore_startup_parameters = extra_float_digits",
        "pooler=transaction",
    ] {
        assert!(message.contains(fix), "{message}");
    }
    assert!(
        !refused.is_retryable(),
        "a configuration error is not retried: {refused:?}"
    );
}

#[tokio::test]
async fn prepared_statements_behind_a_transaction_pooler_fail_naming_the_url_option() {
    // The pooler accepts the default mode's startup parameters, so the failure shows later:
    // a statement's Parse and its Bind are two exchanges, and this pooler resets the server
    // connection (DISCARD ALL) whenever a transaction ends — what a client sees whenever its
    // next exchange lands on another server connection, made deterministic.
    // It also ignores `options`, which carries the default mode's statement timeout.
    let bouncer = bouncer(&[
        ("ignore_startup_parameters", "extra_float_digits,options"),
        ("server_reset_query", "DISCARD ALL"),
        ("server_reset_query_always", "1"),
    ]);
    let (pooled, guard) = pooled_store(&bouncer).await;
    let run = start(&pooled, &OwnerScope::Tenantless, "r1", t(0)).await;
    assert_eq!(
        pooled
            .fetch_run(&SYSTEM, &run.id)
            .await
            .expect("pooled read"),
        run,
        "inline statements survive the reset"
    );
    let direct_mode = connect_through(
        &bouncer,
        guard.schema(),
        PostgresOptions {
            pool_size: 1,
            ..PostgresOptions::default()
        },
    )
    .await
    .expect("the default mode connects when the pooler ignores extra_float_digits");
    let error = direct_mode
        .fetch_run(&SYSTEM, &run.id)
        .await
        .expect_err("the prepared statement is gone before it is bound");
    let message = error.to_string();
    assert!(
        message.contains("pooler=transaction") && message.contains("pool_mode = transaction"),
        "{message}"
    );
}

/// The statements and memory a plain client sees on the pooler's one server connection.
async fn server_connection_state(bouncer: &PgBouncer) -> (i64, i64) {
    let (options, _) = driver_options(&bouncer.docket_url()).expect("options");
    let mut plain = PgConnection::connect_with(&options).await.expect("connect");
    let row = sqlx::raw_sql(
        "SELECT count(*), COALESCE(sum(generic_plans + custom_plans), 0)::bigint
         FROM pg_prepared_statements WHERE starts_with(name, 'docket_')",
    )
    .fetch_one(&mut plain)
    .await
    .expect("prepared statements");
    (
        row.try_get(0).expect("count"),
        row.try_get(1).expect("executions"),
    )
}

#[tokio::test]
async fn statements_stay_prepared_on_the_server_connection_and_survive_its_resets() {
    // One server connection, so a plain client sees what the store left there.
    let bouncer = bouncer(&[("default_pool_size", "1")]);
    let (store, _guard) = pooled_store(&bouncer).await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    for _ in 0..3 {
        store.fetch_run(&SYSTEM, &run.id).await.expect("read");
    }
    let (kept, executions) = server_connection_state(&bouncer).await;
    assert!(kept > 0, "statements are kept prepared");
    for _ in 0..5 {
        store.fetch_run(&SYSTEM, &run.id).await.expect("read");
    }
    let (kept_after, executions_after) = server_connection_state(&bouncer).await;
    assert_eq!(kept_after, kept, "reads reuse the prepared read");
    assert_eq!(
        executions_after,
        executions + 5,
        "each read ran the prepared statement"
    );
    // The session's memory of its statements goes wrong when they are dropped without a
    // RESET; the store notices and prepares again. DISCARD ALL resets both.
    let (options, _) = driver_options(&bouncer.docket_url()).expect("options");
    let mut plain = PgConnection::connect_with(&options).await.expect("connect");
    for reset in ["DEALLOCATE ALL", "DISCARD ALL"] {
        sqlx::raw_sql(reset)
            .execute(&mut plain)
            .await
            .expect("reset the server connection");
        assert_eq!(
            store
                .fetch_run(&SYSTEM, &run.id)
                .await
                .expect("read after the reset"),
            run
        );
    }
}

#[tokio::test]
async fn a_server_connection_keeps_a_bounded_number_of_statements() {
    // The procedure behind the cache, called directly with a bound of two.
    let (store, guard) = PostgresHarness::new().open_store().await.expect("store");
    let mut conn = PgConnection::connect(&test_url())
        .await
        .expect("the PostgreSQL test server must be reachable");
    let mut names = Vec::new();
    for n in 0..3 {
        let name = format!("docket_bound_test_{n}");
        sqlx::raw_sql(&format!(
            "CALL {}.docket_prepare('{name}', 'PREPARE {name} AS SELECT {n}', 2, false)",
            guard.schema()
        ))
        .execute(&mut conn)
        .await
        .expect("prepare");
        names.push(name);
        let kept: Vec<String> = sqlx::query_scalar(
            "SELECT name::text FROM pg_prepared_statements
             WHERE starts_with(name, 'docket_') ORDER BY name",
        )
        .fetch_all(&mut conn)
        .await
        .expect("kept");
        let expected = if n < 2 {
            names.clone()
        } else {
            vec![names[2].clone()]
        };
        assert_eq!(kept, expected, "after preparing {n}");
    }
    drop(store);
}

#[tokio::test]
async fn a_kept_statement_whose_table_changed_shape_is_prepared_again() {
    let bouncer = bouncer(&[("default_pool_size", "1")]);
    let (store, guard) = pooled_store(&bouncer).await;
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    store.fetch_run(&SYSTEM, &run.id).await.expect("read");
    let mut admin = PgConnection::connect(&test_url())
        .await
        .expect("the PostgreSQL test server must be reachable");
    let alter = |to: &str| {
        format!(
            "ALTER TABLE {}.runs ALTER COLUMN started_at TYPE {to}",
            guard.schema()
        )
    };
    sqlx::raw_sql(&alter("numeric"))
        .execute(&mut admin)
        .await
        .expect("reshape");
    // The kept read now returns numeric times: prepared again, it reads them (as corrupt).
    let reshaped = store.fetch_run(&SYSTEM, &run.id).await;
    assert!(
        matches!(reshaped, Err(StoreError::Corrupt { .. })),
        "{reshaped:?}"
    );
    sqlx::raw_sql(&alter("bigint"))
        .execute(&mut admin)
        .await
        .expect("shape back");
    assert_eq!(
        store
            .fetch_run(&SYSTEM, &run.id)
            .await
            .expect("read after the change"),
        run
    );
}

/// The private PgBouncer is only handed out once it is *its* process that listens: on a port
/// something else holds (another test's PgBouncer started at the same moment), the port
/// answers for the other one while this one exits, and that must be an error (which
/// `PgBouncer::start` answers with another port), not a PgBouncer whose test finds its
/// connections refused once the other test ends.
#[test]
fn a_private_pgbouncer_on_a_taken_port_is_an_error_not_the_other_listener() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("its address").port();
    let error = PgBouncer::start_on(port, &[]).expect_err("the port is taken");
    assert!(
        error.contains("exited") && error.contains("in use"),
        "{error}"
    );
}
