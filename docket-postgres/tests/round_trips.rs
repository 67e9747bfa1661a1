//! Wire-level checks through a counting TCP proxy: the claimed commit's hot path is one round
//! trip; a connection lost after sending a write is `Ambiguous`, before any write `Unavailable`
//! and retryable; poll-only mode leaves only content-addressed statements behind; behind a
//! transaction pooler every operation costs the round trips it costs on a direct connection.

mod common;

use common::proxy::Proxy;
use common::*;
use docket_core::model::{EventQuery, OwnerScope, Run, RunQuery, RunStatus};
use docket_core::store::{
    ClaimPolicy, ClaimRequest, ClaimedSchedule, ReleaseWake, RunStore, StoreError,
    StoreErrorKind as ErrorKind,
};
use docket_postgres::testing::{self, test_url, PostgresHarness};
use docket_postgres::{Pooler, PostgresOptions, PostgresStore};

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

async fn proxied(schema: &str, proxy: &Proxy) -> PostgresStore {
    proxied_with_pool(schema, proxy, 1).await
}

/// A store through `proxy` with a pool of `pool_size` connections.
async fn proxied_with_pool(schema: &str, proxy: &Proxy, pool_size: u32) -> PostgresStore {
    PostgresStore::open(
        PostgresOptions {
            pool_size,
            ..PostgresOptions::with_schema(schema)
        }
        .with_url(through(proxy)),
    )
    .await
    .expect("connect through the proxy")
}

#[tokio::test]
async fn a_successful_claimed_commit_is_one_round_trip_and_a_rejected_one_two() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    let store = proxied(guard.schema(), &proxy).await;
    let mut run = start(&direct, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let retain = ClaimedSchedule::RetainClaim;
    // Warm up: the connection prepares each statement once.
    for _ in 0..2 {
        let proposal = next(&run, t(2));
        let events = vec![event(&proposal, proposal.event_seq, t(2), "warm")];
        store
            .commit_claimed(
                &SYSTEM,
                claimed(
                    proposal.clone(),
                    run.checkpoint_seq,
                    &lease.claim_token,
                    retain,
                    t(2),
                ),
                events,
            )
            .await
            .expect("commit");
        run = proposal;
        let stale = store
            .commit_claimed(
                &SYSTEM,
                claimed(
                    next(&run, t(2)),
                    run.checkpoint_seq,
                    &docket_core::model::ClaimToken::mint(),
                    retain,
                    t(2),
                ),
                vec![],
            )
            .await;
        assert!(matches!(stale, Err(StoreError::StaleCheckpoint)));
    }
    for _ in 0..3 {
        let proposal = next(&run, t(3));
        let events = vec![event(&proposal, proposal.event_seq, t(3), "measured")];
        let before = proxy.round_trips();
        store
            .commit_claimed(
                &SYSTEM,
                claimed(
                    proposal.clone(),
                    run.checkpoint_seq,
                    &lease.claim_token,
                    retain,
                    t(3),
                ),
                events,
            )
            .await
            .expect("commit");
        assert_eq!(
            proxy.round_trips() - before,
            1,
            "the hot path is one round trip"
        );
        run = proposal;
        let before = proxy.round_trips();
        let stale = store
            .commit_claimed(
                &SYSTEM,
                claimed(
                    next(&run, t(3)),
                    run.checkpoint_seq,
                    &docket_core::model::ClaimToken::mint(),
                    retain,
                    t(3),
                ),
                vec![],
            )
            .await;
        assert!(matches!(stale, Err(StoreError::StaleCheckpoint)));
        assert_eq!(
            proxy.round_trips() - before,
            2,
            "the statement plus one diagnostic read"
        );
    }
}

#[tokio::test]
async fn a_connection_lost_after_sending_a_write_is_ambiguous_and_before_a_read_retryable() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    let store = proxied(guard.schema(), &proxy).await;
    let run = start(&direct, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let proposal = next(&run, t(2));
    proxy.cut_after_next_execute();
    let result = store
        .commit_claimed(
            &SYSTEM,
            claimed(
                proposal.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
                t(2),
            ),
            vec![event(&proposal, 2, t(2), "cut")],
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::Ambiguous { .. })),
        "{result:?}"
    );
    // The orphaned statement may still be running on the server: one snapshot shows it
    // either fully applied or not at all, never the run without its event.
    let probe = format!(
        "SELECT r.checkpoint_seq, EXISTS (SELECT 1 FROM {s}.events AS e
                                         WHERE e.run_id = r.run_id AND e.seq = 2)
         FROM {s}.runs AS r WHERE r.run_id = $1",
        s = guard.schema()
    );
    let (seq, has_event): (i64, bool) = sqlx::query_as(&probe)
        .bind(run.id.as_str())
        .fetch_one(testing::pool(&direct))
        .await
        .expect("probe");
    assert_eq!(seq == 2, has_event, "all or nothing");
    // Once the orphaned session is gone, the outcome is settled and a re-read resolves it.
    cut_sessions_gone(&direct, &proxy).await;
    let stored = direct.fetch_run(&SYSTEM, &run.id).await.expect("re-read");
    let event2 = direct.fetch_event(&SYSTEM, &run.id, 2).await;
    if stored.checkpoint_seq == 2 {
        assert_eq!(stored, proposal);
        assert_eq!(event2.expect("event"), event(&proposal, 2, t(2), "cut"));
    } else {
        assert_eq!(stored, run);
        assert!(event2.is_err());
    }
    proxy.cut_after_next_execute();
    let read = store.fetch_run(&SYSTEM, &run.id).await;
    assert!(
        matches!(
            read,
            Err(StoreError::Unavailable {
                retryable: true,
                ..
            })
        ),
        "{read:?}"
    );
    // The pool recovers with a fresh connection.
    store
        .fetch_run(&SYSTEM, &run.id)
        .await
        .expect("after reconnecting");
}

/// Waits (with a deadline) until the server has no session left from a connection the proxy
/// cut. Such a session runs what it was sent to the end, commits or rolls back, and only then
/// reads the close and exits; while it is listed, the outcome may still change. (Checking
/// for a non-idle session instead is racy: one whose statement is still in its socket
/// buffer shows as idle.)
async fn cut_sessions_gone(direct: &PostgresStore, proxy: &Proxy) {
    let ports: Vec<i32> = proxy.cut_ports().into_iter().map(i32::from).collect();
    assert!(!ports.is_empty(), "no connection was cut");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let listed: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY($1)")
                .bind(&ports)
                .fetch_one(testing::pool(direct))
                .await
                .expect("activity");
        if listed == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a cut session never ended"
        );
        tokio::task::yield_now().await;
    }
}

/// Claims the runs `ids` (started fresh) through `store` and proposes each run's next
/// checkpoint, claim retained: the members of a batch, and the proposals they carry.
async fn next_moments(
    direct: &PostgresStore,
    store: &PostgresStore,
    ids: &[String],
) -> (Vec<Run>, Vec<docket_core::store::BatchedCommit>, Vec<Run>) {
    let mut runs = Vec::new();
    for id in ids {
        runs.push(start(direct, &OwnerScope::Tenantless, id, t(0)).await);
    }
    let limit = u32::try_from(ids.len()).expect("few runs");
    let leases = store
        .claim_due(&policy(t(1), limit))
        .await
        .expect("claim")
        .leases;
    assert_eq!(leases.len(), ids.len());
    let mut members = Vec::new();
    let mut proposals = Vec::new();
    for run in &runs {
        let lease = leases.iter().find(|l| l.run_id == run.id).expect("leased");
        let proposal = next(run, t(2));
        members.push(docket_core::store::BatchedCommit {
            scope: SYSTEM,
            proposal: claimed(
                proposal.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events: vec![event(&proposal, 2, t(2), "batch")],
        });
        proposals.push(proposal);
    }
    (runs, members, proposals)
}

/// Re-reads each run once no cut session is left: every one still as it was or every one as
/// proposed — all of the batch or none of it. Returns whether the batch was applied.
async fn all_or_none(direct: &PostgresStore, proxy: &Proxy, runs: &[Run], applied: &[Run]) -> bool {
    cut_sessions_gone(direct, proxy).await;
    let mut landed = Vec::new();
    for (run, proposal) in runs.iter().zip(applied) {
        let stored = direct.fetch_run(&SYSTEM, &run.id).await.expect("re-read");
        if stored.checkpoint_seq == proposal.checkpoint_seq {
            assert_eq!(&stored, proposal);
            landed.push(true);
        } else {
            assert_eq!(&stored, run);
            landed.push(false);
        }
    }
    assert!(
        landed.iter().all(|&a| a == landed[0]),
        "all of the batch or none of it: {landed:?}"
    );
    landed[0]
}

/// A batch of claimed commits on distinct runs is one statement: one round trip for the
/// whole batch. When its connection is lost after the statement was sent, every member is
/// `Ambiguous`, and once the cut session is gone a re-read settles it: all or none.
#[tokio::test]
async fn a_commit_batch_is_one_round_trip_and_a_lost_one_is_ambiguous_for_every_member() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    let store = proxied(guard.schema(), &proxy).await;
    // The first batch prepares the statement on the connection (one more round trip).
    for (round, size) in [(0, 2), (1, 4)] {
        let ids: Vec<String> = (0..size).map(|i| format!("whole{round}-{i}")).collect();
        let (_, members, proposals) = next_moments(&direct, &store, &ids).await;
        let before = proxy.round_trips();
        let outcomes = store.commit_claimed_batch(members).await;
        if round == 1 {
            assert_eq!(proxy.round_trips() - before, 1, "one statement");
        }
        for (outcome, proposal) in outcomes.into_iter().zip(&proposals) {
            assert_eq!(&outcome.expect("landed"), proposal);
        }
    }

    let ids: Vec<String> = (0..2).map(|i| format!("cut{i}")).collect();
    let (runs, members, proposals) = next_moments(&direct, &store, &ids).await;
    proxy.cut_after_next_execute();
    let outcomes = store.commit_claimed_batch(members).await;
    assert_eq!(outcomes.len(), 2);
    for outcome in &outcomes {
        assert!(
            matches!(outcome, Err(StoreError::Ambiguous { .. })),
            "{outcomes:?}"
        );
    }
    all_or_none(&direct, &proxy, &runs, &proposals).await;
}

/// A member committing `second` on `first`'s proposal, under the same claim, keeping it, at
/// the first's `now`.
fn built_on(
    first: &docket_core::store::BatchedCommit,
    second: &Run,
    events: Vec<docket_core::model::Event>,
) -> docket_core::store::BatchedCommit {
    docket_core::store::BatchedCommit {
        scope: SYSTEM,
        proposal: claimed(
            second.clone(),
            first.proposal.run.checkpoint_seq,
            &first.proposal.claim_token,
            ClaimedSchedule::RetainClaim,
            first.proposal.now,
        ),
        events,
    }
}

/// A batch whose two members of one run fold (`docs/storage-contract.md`, “Folded chains”:
/// the second builds on the first, which keeps its claim) is one statement, one round trip;
/// when its connection is lost after it was sent, both members are `Ambiguous`, and a re-read
/// finds both or neither.
#[tokio::test]
async fn a_folded_chain_is_one_round_trip_and_a_lost_one_is_ambiguous_for_both_members() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    let store = proxied(guard.schema(), &proxy).await;
    for round in 0..3 {
        let (runs, mut members, proposals) =
            next_moments(&direct, &store, &[format!("fold{round}")]).await;
        let first = &proposals[0];
        let second = next(first, t(3));
        let events = vec![event(&second, 3, t(3), "again")];
        members.push(built_on(&members[0], &second, events));
        let before = proxy.round_trips();
        if round == 2 {
            proxy.cut_after_next_execute();
        }
        let outcomes = store.commit_claimed_batch(members).await;
        if round == 2 {
            for outcome in &outcomes {
                assert!(
                    matches!(outcome, Err(StoreError::Ambiguous { .. })),
                    "{outcomes:?}"
                );
            }
            all_or_none(&direct, &proxy, &runs, &[second]).await;
            continue;
        }
        if round == 1 {
            // (The first round prepares the statement on the connection.)
            assert_eq!(proxy.round_trips() - before, 1, "one statement");
        }
        let answered: Vec<Run> = outcomes
            .into_iter()
            .map(|o| o.expect("both land"))
            .collect();
        assert_eq!(answered, vec![first.clone(), second.clone()]);
        assert_eq!(
            direct
                .fetch_run(&SYSTEM, &runs[0].id)
                .await
                .expect("re-read"),
            second
        );
    }
}

/// A batch that names one run twice with members that do not fold (here the second repeats
/// the first's event, so its events do not all come after the first's) is applied in order
/// inside one transaction (the second member builds on the first); when its connection is
/// lost it fails as a whole: retryable
/// `Unavailable` when the cut comes before `COMMIT` was sent (nothing can have been
/// written), `Ambiguous` when it comes with the `COMMIT`; a re-read settles it.
#[tokio::test]
async fn a_commit_batch_naming_a_run_twice_whose_connection_is_lost_fails_as_a_whole() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    let store = proxied(guard.schema(), &proxy).await;
    // Batches delivered before the cut: `BEGIN`, then the first member's statement
    // (cut there), or `BEGIN`, both members' statements, then `COMMIT` (cut there).
    for (round, cut_at) in [(0, 2u64), (1, 4)] {
        let (runs, mut members, proposals) =
            next_moments(&direct, &store, &[format!("twice{round}")]).await;
        let first = &proposals[0];
        let second = next(first, t(3));
        let events = vec![
            members[0].events[0].clone(),
            event(&second, 3, t(3), "again"),
        ];
        members.push(built_on(&members[0], &second, events));
        proxy.cut_after_executes(cut_at);
        let outcomes = store.commit_claimed_batch(members).await;
        assert_eq!(outcomes.len(), 2);
        for outcome in &outcomes {
            if cut_at == 4 {
                assert!(
                    matches!(outcome, Err(StoreError::Ambiguous { .. })),
                    "cut at COMMIT: {outcomes:?}"
                );
            } else {
                assert!(
                    matches!(
                        outcome,
                        Err(StoreError::Unavailable {
                            retryable: true,
                            ..
                        })
                    ),
                    "cut before COMMIT: {outcomes:?}"
                );
            }
        }
        let landed = all_or_none(&direct, &proxy, &runs, &[second]).await;
        if cut_at == 2 {
            assert!(!landed, "nothing was committed");
        }
    }
}

/// The session's prepared statements whose name starts with `prefix`.
async fn named_statements(store: &PostgresStore, prefix: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_prepared_statements WHERE starts_with(name, $1)")
        .bind(prefix)
        .persistent(false)
        .fetch_one(testing::pool(store))
        .await
        .expect("count")
}

async fn exercise(store: &PostgresStore) {
    let run = start(store, &OwnerScope::Tenantless, "r1", t(0)).await;
    let lease = claim_one(store, t(1)).await;
    let proposal = next(&run, t(2));
    store
        .commit_claimed(
            &SYSTEM,
            claimed(
                proposal,
                1,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
                t(2),
            ),
            vec![],
        )
        .await
        .expect("commit");
    store.fetch_run(&SYSTEM, &run.id).await.expect("fetch");
}

/// Behind a transaction pooler the only statements left on a server connection are Docket's
/// content-addressed ones (`docket_<hash>`, the same statement whoever prepared it), never
/// the driver's per-client `sqlx_s_<n>`.
#[tokio::test]
async fn poll_only_mode_leaves_only_content_addressed_statements_in_the_session() {
    let (direct, _g1) = PostgresHarness::new()
        .pool_size(1)
        .open_store()
        .await
        .expect("server");
    exercise(&direct).await;
    assert!(
        named_statements(&direct, "sqlx_s_").await > 0,
        "the probe can see the driver's cached statements"
    );
    let (poll_only, _g2) = PostgresHarness::new()
        .pool_size(1)
        .poll_only()
        .open_store()
        .await
        .expect("server");
    exercise(&poll_only).await;
    assert_eq!(named_statements(&poll_only, "sqlx_s_").await, 0);
    assert!(named_statements(&poll_only, "docket_").await > 0);
}

/// The round trips of each store operation in one life of a run (`id`), measured at `proxy`.
async fn life(store: &PostgresStore, proxy: &Proxy, id: &str) -> Vec<(&'static str, u64)> {
    let mut counts = Vec::new();
    let mut since = proxy.round_trips();
    let mut count = |what: &'static str| {
        let now = proxy.round_trips();
        counts.push((what, now - since));
        since = now;
    };
    let owner = OwnerScope::Tenantless;
    let run = start(store, &owner, id, t(0)).await;
    count("save_graph + initialize");
    let lease = claim_one(store, t(1)).await;
    count("claim_due");
    let second = next(&run, t(2));
    let retain = ClaimedSchedule::RetainClaim;
    store
        .commit_claimed(
            &SYSTEM,
            claimed(second.clone(), 1, &lease.claim_token, retain, t(2)),
            vec![event(&second, 2, t(2), "moment")],
        )
        .await
        .expect("commit");
    count("commit_claimed");
    store.fetch_run(&SYSTEM, &run.id).await.expect("fetch");
    count("fetch_run");
    let third = next(&second, t(3));
    store
        .commit_unclaimed(
            &SYSTEM,
            2,
            unclaimed(third.clone(), ReleaseWake::Immediate, t(3)),
            vec![event(&third, 3, t(3), "signal")],
        )
        .await
        .expect("unclaimed commit");
    count("commit_unclaimed (a transaction)");
    store
        .list_runs(
            &SYSTEM,
            &RunQuery {
                limit: 10,
                statuses: Some(vec![RunStatus::Running]),
                ..RunQuery::default()
            },
        )
        .await
        .expect("list runs");
    count("list_runs");
    store
        .list_events(
            &SYSTEM,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("list events");
    count("list_events");
    // The signal left the run due: a tenant-fair claim takes it, in one call too.
    let fair = ClaimRequest {
        policy: ClaimPolicy::TenantFair,
        ..policy(t(4), 1)
    };
    let batch = store.claim_due(&fair).await.expect("fair claim");
    assert_eq!(lease_ids(&batch), [id]);
    count("claim_due (tenant_fair)");
    counts
}

#[tokio::test]
async fn behind_a_transaction_pooler_every_operation_costs_what_it_costs_directly() {
    let (_direct_store, direct_guard) = open().await;
    let (_pooled_store, pooled_guard) = open().await;
    let direct_proxy = Proxy::start(upstream()).await;
    let pooled_proxy = Proxy::start(upstream()).await;
    let direct = proxied(direct_guard.schema(), &direct_proxy).await;
    let pooled = PostgresStore::open(
        PostgresOptions {
            pool_size: 1,
            pooler: Pooler::Transaction,
            // A session setting too: behind a pooler it rides along with every statement.
            lock_timeout_ms: Some(10_000),
            listen_url: Some(test_url()),
            ..PostgresOptions::with_schema(pooled_guard.schema())
        }
        .with_url(through(&pooled_proxy)),
    )
    .await
    .expect("connect in transaction-pooler mode");
    assert!(pooled.is_transaction_pooled() && !direct.is_transaction_pooled());
    // The direct store prepares each statement on its connection the first time it runs it
    // (the second life is the first to find its graph already saved and read it back).
    for warm in ["warm1", "warm2"] {
        life(&direct, &direct_proxy, warm).await;
        life(&pooled, &pooled_proxy, warm).await;
    }
    let direct_counts = life(&direct, &direct_proxy, "measured").await;
    let pooled_counts = life(&pooled, &pooled_proxy, "measured").await;
    assert_eq!(pooled_counts, direct_counts);
    assert!(
        direct_counts.contains(&("commit_claimed", 1)),
        "{direct_counts:?}"
    );
    assert!(
        direct_counts.contains(&("claim_due (tenant_fair)", 1)),
        "{direct_counts:?}"
    );
}

/// A start batch whose run ids are distinct is one statement — one round trip, its losers
/// (a taken run id, a graph version that is not stored) answered from the statement's own
/// answer, no read after it. When its connection is lost after the statement was sent, every
/// member is `Ambiguous`, and once the cut session is gone a re-read settles it: all or none.
#[tokio::test]
async fn a_start_batch_is_one_round_trip_and_a_lost_one_is_ambiguous_for_every_member() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    let store = proxied(guard.schema(), &proxy).await;
    let graph = save_graph(&direct, &OwnerScope::Tenantless).await;
    start(&direct, &OwnerScope::Tenantless, "taken", t(0)).await;
    let unknown = graph_ref_of(&graph_doc("g1", 7));
    // The first batch prepares the statement on the connection (one more round trip).
    for round in 0..2 {
        let members = vec![
            init_member(&graph, &format!("new{round}-a")),
            init_member(&graph, "taken"),
            init_member(&unknown, &format!("lost{round}")),
            init_member(&graph, &format!("new{round}-b")),
        ];
        let before = proxy.round_trips();
        let outcomes = store.initialize_batch(members.clone()).await;
        if round == 1 {
            assert_eq!(proxy.round_trips() - before, 1, "one statement");
        }
        let kinds: Vec<Option<ErrorKind>> = outcomes
            .iter()
            .map(|o| o.as_ref().err().map(StoreError::kind))
            .collect();
        assert_eq!(
            kinds,
            vec![
                None,
                Some(ErrorKind::Conflict),
                Some(ErrorKind::NotFound),
                None
            ]
        );
        for (member, outcome) in members.iter().zip(&outcomes) {
            if let Ok(run) = outcome {
                assert_eq!(run, &member.proposal.run);
                let stored = direct.fetch_run(&SYSTEM, &run.id).await.expect("stored");
                assert_eq!(&stored, run);
            }
        }
    }

    let members = vec![init_member(&graph, "cut-a"), init_member(&graph, "cut-b")];
    proxy.cut_after_next_execute();
    let outcomes = store.initialize_batch(members.clone()).await;
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Err(StoreError::Ambiguous { .. }))),
        "{outcomes:?}"
    );
    cut_sessions_gone(&direct, &proxy).await;
    let mut landed = Vec::new();
    for member in &members {
        match direct.fetch_run(&SYSTEM, &member.proposal.run.id).await {
            Ok(stored) => {
                assert_eq!(stored, member.proposal.run);
                landed.push(true);
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
                landed.push(false);
            }
        }
    }
    assert!(
        landed.iter().all(|&l| l == landed[0]),
        "all of the batch or none of it: {landed:?}"
    );
}

/// The pings `proxy` has seen once `more` have arrived after `before`, polled with a deadline
/// (sqlx sends its test from a task of its own after the call has returned).
async fn pings_after(proxy: &Proxy, before: u64, more: u64) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while proxy.pings() < before + more {
        assert!(
            std::time::Instant::now() < deadline,
            "expected {more} ping(s) after {before}, saw {}",
            proxy.pings()
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    proxy.pings()
}

/// The calls a worker makes per moment (claims, commits alone and in batches, the re-read of
/// a run, releases) and the listing calls hand their connection back warm: the next call takes
/// it without the round trip sqlx spends testing a connection it gets back (a lone `Sync`).
/// A query on the bare pool still goes through that test: it proves the proxy sees pings at
/// all, and closes the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_calls_hand_their_connections_back_without_a_ping() {
    let (direct, guard) = open().await;
    let proxy = Proxy::start(upstream()).await;
    // Three connections: two may be kept warm, one is always left to sqlx's pool.
    let store = proxied_with_pool(guard.schema(), &proxy, 3).await;
    let owner = OwnerScope::Tenantless;
    let bare = || async {
        sqlx::query("SELECT 1")
            .execute(testing::pool(&store))
            .await
            .expect("a query on the bare pool");
    };
    let before = proxy.pings();
    bare().await;
    let before = pings_after(&proxy, before, 1).await;

    for round in 0..3 {
        let id = format!("warm{round}");
        let run = start(&direct, &owner, &id, t(0)).await;
        let lease = claim_one(&store, t(1)).await;
        let second = next(&run, t(2));
        store
            .commit_claimed(
                &SYSTEM,
                claimed(
                    second.clone(),
                    1,
                    &lease.claim_token,
                    ClaimedSchedule::RetainClaim,
                    t(2),
                ),
                vec![event(&second, 2, t(2), "moment")],
            )
            .await
            .expect("commit");
        store.fetch_run(&SYSTEM, &run.id).await.expect("fetch");
        store
            .release_claim(&run.id, &lease.claim_token, t(3))
            .await
            .expect("release");
        let ids: Vec<String> = (0..2).map(|i| format!("warm{round}-{i}")).collect();
        let (_, members, _) = next_moments(&direct, &store, &ids).await;
        for outcome in store.commit_claimed_batch(members).await {
            outcome.expect("landed");
        }
    }
    let list = RunQuery {
        limit: 10,
        ..RunQuery::default()
    };
    store.list_runs(&SYSTEM, &list).await.expect("list runs");
    bare().await;
    let after = pings_after(&proxy, before, 1).await;
    assert_eq!(
        after - before,
        1,
        "only the bare pool's connection was tested; the store's calls sent no ping"
    );
}
