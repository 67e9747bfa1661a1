//! The claim statement reads the partial indexes, not the table, at realistic sizes.

mod common;

use std::time::Instant;

use common::*;
use docket_core::model::{OwnerScope, RunStatus, Scope};
use docket_core::store::RunStore;
use docket_postgres::testing;

#[tokio::test]
async fn with_twenty_thousand_runs_the_claim_plan_uses_the_partial_indexes() {
    let started = Instant::now();
    // One connection, so the two generic explains below share a session.
    let (store, guard) = testing::PostgresHarness::new()
        .pool_size(1)
        .open_store()
        .await
        .expect("the PostgreSQL test server must be reachable (DOCKET_TEST_POSTGRES_URL)");
    let graph = save_graph(&store, &OwnerScope::Tenantless).await;
    let now = t(1_000_000).as_micros();
    // A tenth each ready, claimed and scheduled in the future, a tenth waiting, the rest done.
    let insert = format!(
        "INSERT INTO {s}.runs (run_id, graph_id, graph_hash, status, step, checkpoint_seq,
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
         FROM generate_series(1, 20000) AS i",
        s = guard.schema()
    );
    let pool = testing::pool(&store);
    sqlx::query(&insert)
        .bind(graph.graph_id.as_str())
        .bind(graph.graph_hash.as_str())
        .bind(now)
        .execute(pool)
        .await
        .expect("bulk insert");
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
