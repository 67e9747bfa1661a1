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
        PostgresStore::open(options.with_url(test_url()))
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

/// Accepts TCP connections on a local port and never answers (nor closes) them.
async fn silent_listener() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a local port");
    let addr = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (addr, task)
}

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_fails_the_connect_within_its_timeout() {
    let (addr, listener) = silent_listener().await;
    for (param, at_least) in [
        (
            "connect_timeout_ms=400",
            std::time::Duration::from_millis(400),
        ),
        ("connect_timeout=1", std::time::Duration::from_secs(1)),
    ] {
        let url = format!("postgres://postgres@{addr}/test?{param}");
        let started = std::time::Instant::now();
        // The outer deadline only turns a hang into a failure; the store must answer first.
        let err = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            PostgresStore::connect(&url),
        )
        .await
        .unwrap_or_else(|_| panic!("{param}: connect still hanging after 30 s"))
        .expect_err("nothing answers");
        let elapsed = started.elapsed();
        assert!(
            matches!(
                err,
                StoreError::Unavailable {
                    retryable: true,
                    ..
                }
            ),
            "{param}: {err}"
        );
        assert!(err.to_string().contains("connect_timeout_ms"), "{err}");
        assert!(elapsed >= at_least, "{param}: gave up after {elapsed:?}");
        assert!(
            elapsed < at_least + std::time::Duration::from_secs(5),
            "{param}: {elapsed:?}"
        );
    }
    listener.abort();
}

/// Docket's sessions never JIT-compile a statement, whatever the server's `jit` (on by
/// default where PostgreSQL is built with LLVM): see `PostgresOptions::session_settings`.
#[tokio::test]
async fn sessions_run_without_jit_compilation() {
    let schema = testing::fresh_schema_name();
    let base = format!("{}?schema={schema}", test_url());
    let store = PostgresStore::connect(&base).await.expect("connect");
    let (server, session): (String, String) = sqlx::query_as(
        "SELECT (SELECT boot_val FROM pg_settings WHERE name = 'jit'), current_setting('jit')",
    )
    .fetch_one(testing::pool(&store))
    .await
    .expect("show");
    assert_eq!(
        server, "on",
        "the server's built-in default, which Docket overrides"
    );
    assert_eq!(session, "off");
    PostgresStore::drop_schema(&base).await.expect("drop");
}

#[tokio::test]
async fn sessions_get_a_statement_timeout_by_default_and_from_the_url() {
    let schema = testing::fresh_schema_name();
    let base = format!("{}?schema={schema}", test_url());
    let plain = PostgresStore::connect(&base).await.expect("connect");
    let shown: String = sqlx::query_scalar("SHOW statement_timeout")
        .fetch_one(testing::pool(&plain))
        .await
        .expect("show");
    assert_eq!(shown, "30s");
    let impatient = PostgresStore::connect(&format!("{base}&statement_timeout_ms=150"))
        .await
        .expect("connect");
    let err = sqlx::query("SELECT pg_sleep(5)")
        .execute(testing::pool(&impatient))
        .await
        .expect_err("cancelled by the statement timeout");
    assert_eq!(
        err.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("57014"),
        "{err}"
    );
    PostgresStore::drop_schema(&base).await.expect("drop");
}
