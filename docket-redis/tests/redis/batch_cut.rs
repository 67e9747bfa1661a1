//! A commit batch whose connection is lost part-way through its pipeline. Redis runs each
//! member's script on its own (a pipeline is not a transaction), so a cut can land some
//! members and not others: every member must then be `Ambiguous`, and a re-read must settle
//! each one by itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::{BatchedCommit, ClaimedSchedule, RunStore, StoreErrorKind};
use docket_redis::{RedisOptions, RedisStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;
use crate::proxy::spawn_proxy;

/// Where the second command of a pipeline starts in `bytes` (the `*` of its array header),
/// if `bytes` holds the start of at least two `EVALSHA` commands.
fn second_evalsha(bytes: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"$7\r\nEVALSHA\r\n";
    let mut found = bytes
        .windows(NAME.len())
        .enumerate()
        .filter(|(_, w)| *w == NAME)
        .map(|(i, _)| i);
    found.next()?;
    let second = found.next()?;
    bytes[..second].iter().rposition(|b| *b == b'*')
}

/// A TCP proxy that, once armed, forwards only the first command of the next pipeline of
/// `EVALSHA` calls, waits for that command's reply (so its script has run), and then closes
/// both connections: the rest of the pipeline never reaches the server, and the client hears
/// nothing.
async fn cutting_proxy(armed: Arc<AtomicBool>) -> String {
    spawn_proxy(move |client, server| relay(client, server, armed.clone())).await
}

async fn relay(mut client: TcpStream, mut server: TcpStream, armed: Arc<AtomicBool>) {
    let (mut cbuf, mut sbuf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    // Client bytes held back while an armed cut waits to see the pipeline's second command.
    let mut held = Vec::new();
    loop {
        tokio::select! {
            n = client.read(&mut cbuf) => {
                let Ok(n) = n else { return };
                if n == 0 { return; }
                if !armed.load(Ordering::SeqCst) {
                    if server.write_all(&cbuf[..n]).await.is_err() { return; }
                    continue;
                }
                held.extend_from_slice(&cbuf[..n]);
                let Some(cut) = second_evalsha(&held) else { continue };
                armed.store(false, Ordering::SeqCst);
                if server.write_all(&held[..cut]).await.is_err() { return; }
                // The first member's reply: its script has run. Then drop everything.
                let _ = server.read(&mut sbuf).await;
                return;
            }
            n = server.read(&mut sbuf) => {
                let Ok(n) = n else { return };
                if n == 0 { return; }
                if client.write_all(&sbuf[..n]).await.is_err() { return; }
            }
        }
    }
}

#[test]
fn the_second_command_of_a_pipeline_is_found_at_its_array_header() {
    let one = b"*4\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n0\r\n$1\r\n*\r\n";
    let mut two = one.to_vec();
    two.extend_from_slice(one);
    assert_eq!(second_evalsha(one), None);
    assert_eq!(second_evalsha(&two), Some(one.len()));
}

#[tokio::test]
async fn a_batch_cut_part_way_through_its_pipeline_is_ambiguous_for_every_member_and_each_re_read_settles_it(
) {
    let fx = two_claimed_runs().await;
    let armed = Arc::new(AtomicBool::new(false));
    let url = cutting_proxy(armed.clone()).await;
    let proxied = RedisStore::open(RedisOptions::new(url, fx.fx.store.namespace()))
        .await
        .expect("connect through the proxy");

    armed.store(true, Ordering::SeqCst);
    let outcomes = proxied.commit_claimed_batch(fx.members.clone()).await;
    assert!(!armed.load(Ordering::SeqCst), "the proxy cut the pipeline");
    assert_eq!(outcomes.len(), 2);
    for outcome in &outcomes {
        let error = outcome.as_ref().expect_err("no member heard its reply");
        assert_eq!(error.kind(), StoreErrorKind::Ambiguous, "{error}");
        assert!(
            !error.is_retryable(),
            "an ambiguous write is settled by reading"
        );
    }

    // The first member's script ran; the second never reached the server. Each re-read says
    // so on its own.
    let expected = [
        (&fx.members[0].proposal.run, "the first member landed"),
        (&fx.runs[1], "the second member did not"),
    ];
    for (run, (want, why)) in fx.runs.iter().zip(expected) {
        let stored = fx
            .fx
            .store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("re-read");
        assert_eq!(&stored, want, "{why}");
    }

    // The unsent member still holds its claim and its seq: sent again, it lands; the landed
    // one sent again is stale.
    let again = fx.fx.store.commit_claimed_batch(fx.members.clone()).await;
    assert_eq!(
        again[0].as_ref().expect_err("already applied").kind(),
        StoreErrorKind::StaleCheckpoint
    );
    assert_eq!(
        again[1].as_ref().expect("the unsent member lands"),
        &fx.members[1].proposal.run
    );
}

/// A fresh namespace with runs `a` and `b` claimed, and a batch advancing both.
struct TwoClaimed {
    fx: Fx,
    runs: Vec<docket_core::model::Run>,
    members: Vec<BatchedCommit>,
}

async fn two_claimed_runs() -> TwoClaimed {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = publish(&fx.store, &owner, "g").await;
    let mut runs = Vec::new();
    for id in ["a", "b", "warm"] {
        runs.push(start(&fx.store, &owner, id, &graph, t(0)).await);
    }
    let leases = fx
        .store
        .claim_due(&policy(t(1), 3, 60_000, 5, None))
        .await
        .expect("claim")
        .leases;
    assert_eq!(leases.len(), 3);
    let token = |run: &docket_core::model::Run| {
        leases
            .iter()
            .find(|l| l.run_id == run.id)
            .expect("leased")
            .claim_token
            .clone()
    };
    // One commit first, so the server has the commit script cached and the pipeline never
    // meets NOSCRIPT.
    let warm = runs.pop().expect("warm");
    commit_as_holder(
        &fx.store,
        &warm,
        &token(&warm),
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(2),
    )
    .await;
    let members = runs
        .iter()
        .map(|run| {
            let proposal = next(run, RunStatus::Running, t(3));
            let events = vec![next_event(&proposal, t(3))];
            BatchedCommit {
                scope: Scope::System,
                proposal: claimed_commit(
                    proposal,
                    run.checkpoint_seq,
                    &token(run),
                    ClaimedSchedule::RetainClaim,
                    t(3),
                ),
                events,
            }
        })
        .collect();
    TwoClaimed { fx, runs, members }
}
