//! The claim statement reads the partial indexes, not the table, at realistic sizes; a
//! batch of claimed commits finds its runs through the run-id index however small the table
//! was when its plan was made; a tenant-fair claim reads its documents by run id at any size;
//! and no statement of a worker's round starts a sequential scan of `runs` once the store has
//! grown past the size its plans were made at.

mod common;

use std::time::Instant;

use common::*;
use docket_core::model::{ClaimToken, GraphRef, OwnerScope, Run, RunStatus, Scope, Timestamp};
use docket_core::store::{
    AbandonMode, AbandonPolicy, BatchedCommit, ClaimLease, ClaimPolicy, ClaimedSchedule,
    ReleaseWake, RunStore,
};
use docket_postgres::testing;
use docket_postgres::PostgresStore;

#[tokio::test]
async fn with_twenty_thousand_runs_the_claim_plan_uses_the_partial_indexes() {
    let started = Instant::now();
    // One connection, so the two generic explains below share a session.
    let (store, guard) = open_single_connection().await;
    let graph = save_graph(&store, &OwnerScope::Tenantless).await;
    let now = t(1_000_000).as_micros();
    let pool = testing::pool(&store);
    insert_runs(&store, guard.schema(), &graph, now).await;
    sqlx::raw_sql(&format!("ANALYZE {}.runs", guard.schema()))
        .execute(pool)
        .await
        .expect("analyze");

    let claim_policy = with_ttl(policy(t(1_000_000), 10), 0);
    let custom = store.explain_claim(&claim_policy).await.expect("explain");
    // The generic plan (what a long-lived prepared statement may switch to) twice: the helper
    // leaves no prepared statement behind on its pooled connection.
    let generic = store
        .explain_claim_generic(&claim_policy)
        .await
        .expect("explain generic");
    let again = store
        .explain_claim_generic(&claim_policy)
        .await
        .expect("explain generic again");
    assert!(
        generic.contains("$1"),
        "a generic plan keeps its parameters:\n{generic}"
    );
    for plan in [&custom, &generic, &again] {
        assert_eq!(
            testing::claim_plan_problems(plan),
            Vec::<String>::new(),
            "{plan}"
        );
    }
    // And the statement does what the plan says.
    let batch = store.claim_due(&claim_policy).await.expect("claim");
    assert_eq!(batch.outcome_count(), 10);
    assert!(!batch.leases.is_empty());
    // Without the partial indexes the same check sees the table scan it guards against.
    sqlx::raw_sql(&format!(
        "DROP INDEX {s}.runs_ready_index, {s}.runs_expired_index",
        s = guard.schema()
    ))
    .execute(pool)
    .await
    .expect("drop the partial indexes");
    let unindexed = store.explain_claim(&claim_policy).await.expect("explain");
    assert!(
        testing::claim_plan_problems(&unindexed)
            .contains(&"it scans the runs table sequentially".to_owned()),
        "{unindexed}"
    );
    assert!(
        started.elapsed().as_secs() < 20,
        "took {:?}",
        started.elapsed()
    );
}

/// A tenant-fair claim reads each leased run's document with a run-id probe, never by
/// hashing the table: PostgreSQL estimates the claim function's rows at 1,000 whatever the
/// limit, and a join of those rows to `runs` was planned as a hash of the whole table below
/// roughly 70,000 rows — a sequential read of every run on every claim. Checked on an empty
/// store, at 20,000 runs never analyzed, and after `ANALYZE`; the custom plan and the generic
/// one each time.
#[tokio::test]
async fn a_fair_claim_reads_each_document_by_its_run_id_at_any_size() {
    let (store, guard) = open_single_connection().await;
    let graph = save_graph(&store, &OwnerScope::Tenantless).await;
    let now = t(1_000_000).as_micros();
    let mut fair = with_ttl(policy(t(1_000_000), 10), 0);
    fair.policy = ClaimPolicy::TenantFair;
    let check = |plan: String, when: &str| {
        assert!(
            !plan.contains("Seq Scan on runs") && !plan.contains("Hash"),
            "{when}: the fair claim reads the runs table whole:\n{plan}"
        );
        assert!(
            plan.contains("Index Scan using runs_run_id_key"),
            "{when}: the fair claim does not probe the run id:\n{plan}"
        );
    };
    let sizes = [
        "empty",
        "20,000 runs, never analyzed",
        "20,000 runs, analyzed",
    ];
    for (step, when) in sizes.into_iter().enumerate() {
        match step {
            1 => insert_runs(&store, guard.schema(), &graph, now).await,
            2 => {
                sqlx::raw_sql(&format!("ANALYZE {}.runs", guard.schema()))
                    .execute(testing::pool(&store))
                    .await
                    .expect("analyze");
            }
            _ => {}
        }
        check(store.explain_claim(&fair).await.expect("explain"), when);
        check(
            store
                .explain_claim_generic(&fair)
                .await
                .expect("explain generic"),
            when,
        );
    }
}

#[tokio::test]
async fn bulk_runs_decode_agree_with_their_columns_and_are_claimable() {
    let (store, _guard) = open().await;
    let owner = tenant("acme");
    let graph = save_graph(&store, &owner).await;
    let now = t(10_000_000);
    let runs = testing::BulkRuns {
        pending: 10,
        claimed: 3,
        finished: 2,
    };
    let inserted = testing::bulk_insert_runs(&store, &owner, &graph, runs, now)
        .await
        .expect("bulk insert");
    assert_eq!(inserted, 15);
    let mut statuses = Vec::new();
    for i in 1..=15 {
        let id = rid(&format!("bulk{i:07}"));
        let info = store
            .inspect_run(&Scope::System, &id)
            .await
            .unwrap_or_else(|e| panic!("{id} decodes: {e}"));
        assert_eq!(info.owner, owner);
        statuses.push((info.run.status, info.is_claimed(), info.wake_at.is_some()));
    }
    let pending = (RunStatus::Running, false, true);
    let claimed = (RunStatus::Running, true, false);
    let finished = (RunStatus::Done, false, false);
    let mut expected = vec![pending; 10];
    expected.extend([claimed; 3]);
    expected.extend([finished; 2]);
    assert_eq!(statuses, expected);
    // Half the pending wakes are due; claims older than 1.5 s (taken 2 s and 3 s ago) expire.
    let batch = store
        .claim_due(&with_ttl(policy(now, 100), 1_500))
        .await
        .expect("claim");
    let mut claimed_ids: Vec<String> = batch
        .leases
        .iter()
        .map(|l| l.run_id.as_str().to_owned())
        .collect();
    claimed_ids.sort();
    let mut want: Vec<String> = (1..=5)
        .chain([12, 13])
        .map(|i| format!("bulk{i:07}"))
        .collect();
    want.sort();
    assert_eq!(claimed_ids, want);
}

/// Writes 20,000 runs straight into the table (with their listing rows, as a start writes
/// them), without analyzing it: a tenth each ready, claimed and scheduled in the future, a
/// tenth waiting, the rest done.
async fn insert_runs(store: &PostgresStore, schema: &str, graph: &GraphRef, now: i64) {
    let insert = format!(
        "WITH inserted AS (
         INSERT INTO {s}.runs (run_id, graph_id, graph_hash, status, step, checkpoint_seq,
             event_seq, document, latest_checkpoint_type, claim_token, claimed_at,
             claim_started_at, wake_at, started_at, updated_at, finished_at, inserted_at)
         SELECT 'bulk' || i, $1, $2,
                CASE WHEN i % 10 < 6 THEN 'done' WHEN i % 10 = 6 THEN 'waiting' ELSE 'running' END,
                0, 1, 1, '\\x7b7d'::bytea, 'run_initialized',
                CASE WHEN i % 10 = 9 THEN gen_random_uuid() END,
                CASE WHEN i % 10 = 9 THEN $3 - i END,
                CASE WHEN i % 10 = 9 THEN $3 - i END,
                CASE WHEN i % 10 = 8 THEN $3 - i WHEN i % 10 = 7 THEN $3 + 1000000 + i END,
                $3, $3, CASE WHEN i % 10 < 6 THEN $3 END, $3
         FROM generate_series(1, 20000) AS i
         RETURNING run_id, scope_key, started_at, graph_id, graph_hash)
         INSERT INTO {s}.run_listing (run_id, scope_key, started_at, graph_id, graph_hash)
         SELECT run_id, scope_key, started_at, graph_id, graph_hash FROM inserted",
        s = schema
    );
    sqlx::query(&insert)
        .bind(graph.graph_id.as_str())
        .bind(graph.graph_hash.as_str())
        .bind(now)
        .execute(testing::pool(store))
        .await
        .expect("bulk insert");
}

/// One batch of claimed commits, each run's next moment under its lease, all landing.
async fn commit_batch(store: &PostgresStore, runs: &mut [Run], leases: &[ClaimLease], at: i64) {
    let mut members = Vec::new();
    let mut proposals = Vec::new();
    for run in runs.iter() {
        let lease = leases.iter().find(|l| l.run_id == run.id).expect("leased");
        let proposal = next(run, t(at));
        members.push(BatchedCommit {
            scope: SYSTEM,
            proposal: claimed(
                proposal.clone(),
                run.checkpoint_seq,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(at),
            ),
            events: vec![event(&proposal, proposal.event_seq, t(at), "batch")],
        });
        proposals.push(proposal);
    }
    for (outcome, proposal) in store
        .commit_claimed_batch(members)
        .await
        .into_iter()
        .zip(&proposals)
    {
        assert_eq!(&outcome.expect("landed"), proposal);
    }
    runs.clone_from_slice(&proposals);
}

/// PostgreSQL settles a prepared statement on a generic plan after a few executions and
/// keeps it until the table's statistics change — never, on a server without autovacuum. A
/// batch's plan made while `runs` held four rows must still reach each member's row through
/// the run-id index once the table holds thousands: the server counts no sequential scan of
/// `runs` for a batch sent then.
#[tokio::test]
async fn a_commit_batch_planned_on_a_small_table_still_uses_the_index_once_it_has_grown() {
    // One connection: the batches share one cached plan, and the counters flush from it.
    let (store, guard) = open_single_connection().await;
    let owner = OwnerScope::Tenantless;
    // Batches of four: while the table is small, a plan for four members scans it.
    const MEMBERS: i64 = 4;
    let mut runs = Vec::new();
    for i in 0..MEMBERS {
        runs.push(start(&store, &owner, &format!("small-{i}"), t(0)).await);
    }
    let leases = store
        .claim_due(&policy(t(1), MEMBERS as u32))
        .await
        .expect("claim")
        .leases;
    assert_eq!(leases.len(), runs.len());
    // More executions than PostgreSQL plans custom before it weighs the generic plan.
    const SMALL_BATCHES: i64 = 8;
    for i in 0..SMALL_BATCHES {
        commit_batch(&store, &mut runs, &leases, 10 + i).await;
    }
    // Grown without an `ANALYZE`, as on a server without autovacuum: nothing re-plans.
    let graph = save_graph(&store, &owner).await;
    insert_runs(&store, guard.schema(), &graph, t(5).as_micros()).await;
    // The claims and the small batches' updates.
    let updates = MEMBERS + MEMBERS * SMALL_BATCHES;
    let before = runs_counters(&store, guard.schema(), updates).await;

    commit_batch(&store, &mut runs, &leases, 100).await;
    let after = runs_counters(&store, guard.schema(), updates + MEMBERS).await;
    assert_eq!(after.updates, updates + MEMBERS, "{after:?}");
    assert_eq!(
        after.seq_scans, before.seq_scans,
        "the batch sent after the table grew scanned it: {before:?} → {after:?}"
    );
}

/// A worker's statements keep reaching `runs` through its indexes after the store grows:
/// every statement of a worker's round (start, both claim orders at limits 1 and 10, claimed
/// commits that keep and that end the claim, release, abandon, reading the run) is run more
/// often than PostgreSQL plans custom before it may settle on a generic plan, while the table
/// holds a few rows; then the table grows to 20,000 runs without an `ANALYZE` (nothing
/// re-plans), and the same round run twice more must not start a single sequential scan of
/// `runs`. The fair claim's old join to the table (a hash of every run) fails this.
#[tokio::test]
async fn a_workers_statements_planned_on_a_small_store_never_scan_it_once_it_has_grown() {
    // One connection: every statement's cached plan is on it, and its counters flush.
    let (store, guard) = open_single_connection().await;
    let mut updates = 0;
    for round in 0..8 {
        updates += worker_round(&store, round).await;
    }
    let graph = save_graph(&store, &OwnerScope::Tenantless).await;
    // Due, claimed and scheduled runs of the bulk all lie a day past the rounds' clock, so the
    // rounds' claims still take only their own runs.
    insert_runs(&store, guard.schema(), &graph, t(86_400_000).as_micros()).await;
    let before = runs_counters(&store, guard.schema(), updates).await;
    for round in 8..10 {
        updates += worker_round(&store, round).await;
    }
    let after = runs_counters(&store, guard.schema(), updates).await;
    assert_eq!(after.updates, updates, "{after:?}");
    assert_eq!(
        after.seq_scans, before.seq_scans,
        "a statement sent after the table grew scanned it: {before:?} → {after:?}"
    );
}

/// One round of a worker's statements over three new runs (tenantless, and two tenants'),
/// at a clock of its own; returns the rows of `runs` it updated.
async fn worker_round(store: &PostgresStore, round: i64) -> i64 {
    let base = round * 1_000;
    let mut runs = std::collections::HashMap::new();
    for (owner, id) in [
        (OwnerScope::Tenantless, format!("o{round}")),
        (tenant("acme"), format!("a{round}")),
        (tenant("bolt"), format!("b{round}")),
    ] {
        let run = start(store, &owner, &id, t(base)).await;
        runs.insert(run.id.clone(), run);
    }
    let mut updates = 0;
    let fair = |now: i64, limit: u32| {
        let mut request = policy(t(now), limit);
        request.policy = ClaimPolicy::TenantFair;
        request
    };
    // Oldest first, one run: a commit that keeps the claim, then one that ends the run.
    let lease = claim_one(store, t(base + 1)).await;
    let run = runs.remove(&lease.run_id).expect("one of the round's runs");
    let kept = commit_moment(
        store,
        &lease.claim_token,
        &run,
        next(&run, t(base + 2)),
        ClaimedSchedule::RetainClaim,
        t(base + 2),
    )
    .await;
    end_run(store, &lease.claim_token, &kept, t(base + 3)).await;
    updates += 3;
    // Tenant-fair, ten: the other two, released again.
    let batch = store.claim_due(&fair(base + 4, 10)).await.expect("claim");
    assert_eq!(batch.leases.len(), 2, "{batch:?}");
    for lease in &batch.leases {
        store
            .release_claim(&lease.run_id, &lease.claim_token, t(base + 5))
            .await
            .expect("release");
    }
    updates += 4;
    // Tenant-fair, one: abandoned until a moment later.
    let lease = store
        .claim_due(&fair(base + 6, 1))
        .await
        .expect("claim")
        .leases
        .pop()
        .expect("a lease");
    let abandon = AbandonPolicy {
        expected_seq: runs[&lease.run_id].checkpoint_seq,
        now: t(base + 6),
        retry_at: t(base + 7),
        max_claim_abandons: std::num::NonZeroU32::new(5).expect("max"),
        mode: AbandonMode::Poisoning,
    };
    store
        .abandon_claim(&lease.run_id, &lease.claim_token, &abandon)
        .await
        .expect("abandon");
    updates += 2;
    // Tenant-fair, ten: both, each read back and ended.
    let batch = store.claim_due(&fair(base + 8, 10)).await.expect("claim");
    assert_eq!(batch.leases.len(), 2, "{batch:?}");
    for lease in &batch.leases {
        let run = store
            .fetch_run(&SYSTEM, &lease.run_id)
            .await
            .expect("fetch");
        end_run(store, &lease.claim_token, &run, t(base + 9)).await;
    }
    updates + 4
}

/// Commits `run`'s last moment under `token` at `at`: done, the claim released for good.
async fn end_run(store: &PostgresStore, token: &ClaimToken, run: &Run, at: Timestamp) {
    commit_moment(
        store,
        token,
        run,
        done(run, at),
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        at,
    )
    .await;
}
