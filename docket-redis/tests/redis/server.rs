//! Server-level behaviour: script cache loss, unreachable servers, forbidden CONFIG, lost
//! replies, wake hints and their reconnection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use docket_core::model::{OwnerScope, Scope};
use docket_core::store::{RunStore, StoreErrorKind, Wakeups};
use docket_redis::testing::{fresh_namespace, test_url, RedisGuard};
use docket_redis::{RedisOptions, RedisStore};
use futures::{FutureExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::*;
use crate::proxy::spawn_proxy;

const DEADLINE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn operations_survive_a_flushed_script_cache() {
    let fx = open().await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    fx.guard
        .command::<()>(redis::cmd("SCRIPT").arg("FLUSH"))
        .await
        .expect("flush");
    let lease = claim_one(&fx.store, t(1)).await;
    assert_eq!(lease.run_id, rid("r1"));
    fx.guard
        .command::<()>(redis::cmd("SCRIPT").arg("FLUSH"))
        .await
        .expect("flush");
    start_simple(&fx.store, &OwnerScope::Tenantless, "r2").await;
}

#[tokio::test]
async fn an_unreachable_server_is_a_retryable_unavailable_error() {
    let err = RedisStore::open(RedisOptions::new("redis://127.0.0.1:1", fresh_namespace()))
        .await
        .expect_err("nothing listens on port 1");
    assert_eq!(err.kind(), StoreErrorKind::Unavailable);
    assert!(err.is_retryable());
}

#[tokio::test]
async fn invalid_namespaces_and_urls_are_refused_before_connecting() {
    let err = RedisStore::open(RedisOptions::new(test_url(), "bad*ns"))
        .await
        .expect_err("namespace");
    assert_eq!(err.kind(), StoreErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("namespace"), "{err}");
    let err = RedisStore::open(RedisOptions::new("nope://x", "ns"))
        .await
        .expect_err("url");
    assert_eq!(err.kind(), StoreErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("Redis URL"), "{err}");
}

/// A throwaway ACL user, deleted on drop.
struct AclUser {
    name: String,
    url: String,
}

impl AclUser {
    async fn create(rules: &[&str]) -> Self {
        let name = fresh_namespace();
        let admin = redis::Client::open(test_url()).expect("url");
        let mut conn = admin
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER").arg(&name).arg("on").arg(">secret");
        for rule in rules {
            cmd.arg(*rule);
        }
        cmd.query_async::<()>(&mut conn).await.expect("ACL SETUSER");
        let base = test_url();
        let (scheme, rest) = base.split_once("://").expect("scheme");
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        let url = format!("{scheme}://{name}:secret@{host}");
        AclUser { name, url }
    }

    async fn kill_connections(&self) {
        let admin = redis::Client::open(test_url()).expect("url");
        let mut conn = admin
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        redis::cmd("CLIENT")
            .arg("KILL")
            .arg("USER")
            .arg(&self.name)
            .query_async::<()>(&mut conn)
            .await
            .expect("CLIENT KILL USER");
    }
}

impl Drop for AclUser {
    fn drop(&mut self) {
        if let Ok(client) = redis::Client::open(test_url()) {
            if let Ok(mut conn) = client.get_connection() {
                let _ = redis::cmd("ACL")
                    .arg("DELUSER")
                    .arg(&self.name)
                    .query::<()>(&mut conn);
            }
        }
    }
}

/// The eviction check itself is `check_eviction_policy` (unit-tested with every evicting
/// policy): changing the shared server's policy would make every parallel test's connect fail.
/// Here the other branch runs for real: where CONFIG is forbidden the store warns and works.
#[tokio::test]
async fn a_server_that_forbids_config_is_used_with_a_warning() {
    let user = AclUser::create(&["~*", "&*", "+@all", "-config"]).await;
    let fx = open().await;
    let store = RedisStore::open(RedisOptions::new(&user.url, fx.store.namespace()))
        .await
        .expect("CONFIG forbidden is not fatal");
    start_simple(&store, &OwnerScope::Tenantless, "r1").await;
    assert_eq!(claim_one(&store, t(1)).await.run_id, rid("r1"));
}

async fn subscribers(guard: &RedisGuard, channel: &str) -> i64 {
    let reply: (String, i64) = guard
        .command(redis::cmd("PUBSUB").arg("NUMSUB").arg(channel))
        .await
        .expect("numsub");
    reply.1
}

async fn await_subscribers(guard: &RedisGuard, channel: &str) {
    tokio::time::timeout(DEADLINE, async {
        while subscribers(guard, channel).await < 1 {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the wake-hint subscriber connects");
}

async fn next_hint(hints: &mut Wakeups) {
    tokio::time::timeout(DEADLINE, hints.next())
        .await
        .expect("a hint arrives before the deadline")
        .expect("the stream stays open");
}

fn drain(hints: &mut Wakeups) {
    while let Some(Some(())) = hints.next().now_or_never() {}
}

#[tokio::test]
async fn a_due_initialization_publishes_a_wake_hint() {
    let fx = open().await;
    let mut hints = fx.store.wakeups().expect("redis offers wakeups");
    // The first hint says "subscribed": anything published before may have been missed.
    next_hint(&mut hints).await;
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    next_hint(&mut hints).await;
}

#[tokio::test]
async fn the_wake_subscriber_reconnects_after_its_connection_is_killed() {
    let user = AclUser::create(&["~*", "&*", "+@all"]).await;
    let fx = open().await;
    let store = RedisStore::open(RedisOptions::new(&user.url, fx.store.namespace()))
        .await
        .expect("connect as the test user");
    let channel = store.keys().wake_channel();
    let mut hints = store.wakeups().expect("wakeups");
    next_hint(&mut hints).await;
    await_subscribers(&fx.guard, &channel).await;
    user.kill_connections().await;
    // The subscriber comes back on its own (and says so with a hint).
    next_hint(&mut hints).await;
    await_subscribers(&fx.guard, &channel).await;
    drain(&mut hints);
    // Written through another connection: the killed store's next write would be ambiguous.
    start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    next_hint(&mut hints).await;
}

/// A TCP proxy that, once armed, forwards the next `EVALSHA` to the server, waits for the
/// server's reply (so the script has run) and then drops the client connection instead of
/// relaying it — a connection lost after the write was sent. `NOSCRIPT` replies are relayed.
async fn lossy_proxy(armed: Arc<AtomicBool>) -> String {
    spawn_proxy(move |client, server| relay(client, server, armed.clone())).await
}

async fn relay(mut client: TcpStream, mut server: TcpStream, armed: Arc<AtomicBool>) {
    let (mut cbuf, mut sbuf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let mut cut_after_reply = false;
    loop {
        tokio::select! {
            n = client.read(&mut cbuf) => {
                let Ok(n) = n else { return };
                if n == 0 { return; }
                if armed.load(Ordering::SeqCst) && cbuf[..n].windows(7).any(|w| w == b"EVALSHA") {
                    cut_after_reply = true;
                }
                if server.write_all(&cbuf[..n]).await.is_err() { return; }
            }
            n = server.read(&mut sbuf) => {
                let Ok(n) = n else { return };
                if n == 0 { return; }
                if cut_after_reply && !sbuf[..n].starts_with(b"-NOSCRIPT") {
                    armed.store(false, Ordering::SeqCst);
                    return;
                }
                if client.write_all(&sbuf[..n]).await.is_err() { return; }
            }
        }
    }
}

#[tokio::test]
async fn a_reply_lost_after_a_write_was_sent_is_ambiguous() {
    let fx = open().await;
    let armed = Arc::new(AtomicBool::new(false));
    let url = lossy_proxy(armed.clone()).await;
    let proxied = RedisStore::open(RedisOptions::new(url, fx.store.namespace()))
        .await
        .expect("connect through the proxy");
    let owner = OwnerScope::Tenantless;
    let graph = publish(&proxied, &owner, "g").await;
    armed.store(true, Ordering::SeqCst);
    let run = initialized_run("r1", &graph, t(0));
    let err = proxied
        .initialize(&owner, init_proposal(run.clone(), t(0), t(0)), vec![])
        .await
        .expect_err("the reply is lost");
    assert_eq!(err.kind(), StoreErrorKind::Ambiguous, "{err}");
    assert!(
        !err.is_retryable(),
        "an ambiguous write is resolved by re-reading"
    );
    // It did apply: re-reading resolves the ambiguity.
    assert_eq!(
        fx.store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("applied"),
        run
    );
    // The connection manager reconnects for the next call.
    let again = tokio::time::timeout(DEADLINE, async {
        loop {
            match proxied.fetch_run(&Scope::System, &run.id).await {
                Ok(found) => return found,
                Err(e) => assert!(e.is_retryable(), "{e}"),
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("reconnects");
    assert_eq!(again, run);
}

#[tokio::test]
async fn a_registry_reply_lost_after_the_write_was_sent_is_ambiguous() {
    use docket_core::ops::{
        OperationId, OperationKind, OperationSpec, OperationStatus, OpsErrorKind,
        OpsLifecycleRegistry, SessionId,
    };
    let fx = open().await;
    let armed = Arc::new(AtomicBool::new(false));
    let url = lossy_proxy(armed.clone()).await;
    let proxied = RedisStore::open(RedisOptions::new(url, fx.store.namespace()))
        .await
        .expect("connect through the proxy");
    let owner = SessionId::from_uuid(uuid::Uuid::from_u128(1));
    let id = OperationId::from_uuid(uuid::Uuid::from_u128(2));
    let spec = OperationSpec::new(id, OperationKind::DetachedJobWait, "wait");
    proxied
        .register_operation(&owner, &spec, None, t(0))
        .await
        .expect("register through the proxy");
    let err = tokio::time::timeout(DEADLINE, async {
        loop {
            // Loads the transition script on the server (directly), so the proxied call is
            // one EVALSHA whose reply the proxy drops.
            let other = OperationId::from_uuid(uuid::Uuid::new_v4());
            let probe = OperationSpec::new(other, OperationKind::DetachedJobWait, "probe");
            fx.store
                .register_operation(&owner, &probe, None, t(0))
                .await
                .expect("register directly");
            fx.store
                .provisioning_succeeded(&owner, &other, t(0))
                .await
                .expect("start directly");
            armed.store(true, Ordering::SeqCst);
            match proxied.provisioning_succeeded(&owner, &id, t(1)).await {
                Err(e) if e.kind() == OpsErrorKind::Ambiguous => return e,
                // A script cache flushed by another test in between: the reload's reply was
                // cut, and the transition has not run. Try again.
                Err(e) if e.is_retryable() => armed.store(false, Ordering::SeqCst),
                other => panic!("expected an ambiguous outcome, got {other:?}"),
            }
        }
    })
    .await
    .expect("the reply is lost in time");
    assert!(!err.is_retryable(), "{err}");
    // It did apply: re-reading resolves the ambiguity.
    let record = fx
        .store
        .operation_snapshot(&owner, &id)
        .await
        .expect("read")
        .expect("registered");
    assert_eq!(record.status, OperationStatus::Running);
}

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_fails_the_connect_within_its_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let config = docket_redis::parse_url(&format!(
        "redis://{addr}?namespace={}&connect_timeout_ms=400",
        fresh_namespace()
    ))
    .expect("valid url");
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(30), RedisStore::open(config))
        .await
        .expect("connect answers before the outer deadline")
        .expect_err("nothing answers");
    let elapsed = started.elapsed();
    assert_eq!(err.kind(), StoreErrorKind::Unavailable, "{err}");
    assert!(err.is_retryable());
    assert!(err.to_string().contains("connect_timeout_ms"), "{err}");
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    silent.abort();
}

/// A TCP proxy that relays both ways until `stalled` is set, then swallows every reply.
async fn stalling_proxy(stalled: Arc<AtomicBool>) -> String {
    spawn_proxy(move |mut client, mut server| {
        let stalled = stalled.clone();
        async move {
            let (mut cbuf, mut sbuf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
            loop {
                tokio::select! {
                    n = client.read(&mut cbuf) => {
                        let Ok(n) = n else { return };
                        if n == 0 || server.write_all(&cbuf[..n]).await.is_err() { return; }
                    }
                    n = server.read(&mut sbuf) => {
                        let Ok(n) = n else { return };
                        if n == 0 { return; }
                        if !stalled.load(Ordering::SeqCst)
                            && client.write_all(&sbuf[..n]).await.is_err()
                        {
                            return;
                        }
                    }
                }
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_reply_that_never_comes_fails_the_call_after_the_statement_timeout() {
    let fx = open().await;
    let stalled = Arc::new(AtomicBool::new(false));
    let proxy = stalling_proxy(stalled.clone()).await;
    let config = docket_redis::parse_url(&format!(
        "{proxy}?namespace={}&statement_timeout_ms=300",
        fx.store.namespace()
    ))
    .expect("valid url");
    let proxied = RedisStore::open(config)
        .await
        .expect("connect through the proxy");
    let owner = OwnerScope::Tenantless;
    start_simple(&fx.store, &owner, "r1").await;
    stalled.store(true, Ordering::SeqCst);
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        proxied.fetch_run(&Scope::System, &rid("r1")),
    )
    .await
    .expect("the read answers before the outer deadline")
    .expect_err("no reply comes");
    let elapsed = started.elapsed();
    assert_eq!(err.kind(), StoreErrorKind::Unavailable, "{err}");
    assert!(err.is_retryable(), "a read that timed out can be retried");
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}
