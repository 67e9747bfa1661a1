//! `WarmPool` under contention: a connection handed back while a caller waits on sqlx's pool
//! goes to that caller (never to the warm list, where the caller would not see it), and a
//! caller of the bare pool always gets a connection however full the warm list is.

use std::time::Duration;

use docket_postgres::testing::test_url;
use docket_postgres::WarmPool;
use sqlx::postgres::PgPoolOptions;

/// A pool of `size` connections to the test server, giving up on a connection after `wait`.
async fn pool(size: u32, wait: Duration) -> WarmPool {
    let (connect, _) = docket_postgres::driver_options(&test_url()).expect("the test URL parses");
    let pool = PgPoolOptions::new()
        .max_connections(size)
        .test_before_acquire(false)
        .acquire_timeout(wait)
        .connect_with(connect)
        .await
        .expect("the PostgreSQL test server must be reachable (DOCKET_TEST_POSTGRES_URL)");
    WarmPool::new(pool, size)
}

/// Polls until `warm` counts `n` callers waiting on sqlx's pool (deadline 10 s).
async fn until_waiting(warm: &WarmPool, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while warm.waiting() != n {
        assert!(
            std::time::Instant::now() < deadline,
            "expected {n} waiting caller(s), saw {}",
            warm.waiting()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_handed_back_while_a_caller_waits_goes_to_that_caller() {
    // A caller left waiting while the connection sits warm fails at this timeout.
    let warm = pool(2, Duration::from_secs(3)).await;
    let first = warm.acquire().await.expect("a connection");
    let second = warm.acquire().await.expect("a connection");
    // A caller that gives up while waiting is no longer counted.
    let gave_up = tokio::time::timeout(Duration::from_millis(20), warm.acquire()).await;
    assert!(gave_up.is_err(), "both connections are held");
    assert_eq!(
        warm.waiting(),
        0,
        "a cancelled acquire is no longer counted"
    );
    let waiter = tokio::spawn({
        let warm = warm.clone();
        async move {
            let mut conn = warm.acquire().await?;
            sqlx::query_scalar::<_, i32>("SELECT 3")
                .fetch_one(&mut *conn)
                .await
        }
    });
    until_waiting(&warm, 1).await;
    first.reuse();
    let three = waiter
        .await
        .expect("the waiter finished")
        .expect("the waiter got the connection handed back");
    assert_eq!(three, 3);
    assert_eq!(
        warm.waiting(),
        0,
        "no caller is counted as waiting after it got one"
    );
    drop(second);
    // Many callers on few connections, most handing back warm: every call gets one.
    let callers: Vec<_> = (0..12)
        .map(|caller| {
            let warm = warm.clone();
            tokio::spawn(async move {
                for round in 0..40 {
                    let mut conn = warm.acquire().await.expect("a connection");
                    sqlx::query("SELECT 1")
                        .execute(&mut *conn)
                        .await
                        .expect("SELECT 1");
                    if (caller + round) % 5 == 0 {
                        drop(conn);
                    } else {
                        conn.reuse();
                    }
                }
            })
        })
        .collect();
    for caller in callers {
        caller
            .await
            .expect("every call got a connection within the timeout");
    }
    until_waiting(&warm, 0).await;
    warm.close().await;
}

#[tokio::test]
async fn the_bare_pool_has_a_connection_while_the_warm_list_is_full() {
    let warm = pool(3, Duration::from_secs(2)).await;
    // Three at once, then all handed back: the list keeps two (the pool's size less one).
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(warm.acquire().await.expect("a connection"));
    }
    for conn in held {
        conn.reuse();
    }
    let bare: i32 = sqlx::query_scalar("SELECT 2")
        .fetch_one(warm.pool())
        .await
        .expect("the bare pool gives a connection within its timeout");
    assert_eq!(bare, 2);
    // And the warm list still serves its two at once.
    let (a, b) = (warm.acquire().await, warm.acquire().await);
    assert!(a.is_ok() && b.is_ok());
    drop((a, b));
    warm.close().await;
}
