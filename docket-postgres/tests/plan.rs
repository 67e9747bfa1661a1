//! The claim statement reads the partial indexes, not the table, at realistic sizes.

mod common;

use std::time::Instant;

use common::*;
use docket_core::model::OwnerScope;
use docket_core::store::RunStore;
use docket_postgres::testing;

#[tokio::test]
async fn with_twenty_thousand_runs_the_claim_plan_uses_the_partial_indexes() {
    let started = Instant::now();
    let (store, guard) = open().await;
    let graph = save_graph(&store, &OwnerScope::Tenantless).await;
    let now = t(1_000_000).as_micros();
    // A tenth each ready, claimed and scheduled in the future, a tenth waiting, the rest done.
    let insert = format!(
        "INSERT INTO {s}.runs (run_id, graph_id, graph_hash, status, step, checkpoint_seq,
             event_seq, document, latest_checkpoint_type, claim_token, claimed_at, wake_at,
             started_at, updated_at, finished_at, inserted_at)
         SELECT 'bulk' || i, $1, $2,
                CASE WHEN i % 10 < 6 THEN 'done' WHEN i % 10 = 6 THEN 'waiting' ELSE 'running' END,
                0, 1, 1, '\\x7b7d'::bytea, 'run_initialized',
                CASE WHEN i % 10 = 9 THEN gen_random_uuid() END,
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
    let plan = store.explain_claim(&claim_policy).await.expect("explain");
    assert!(!plan.contains("Seq Scan on runs"), "{plan}");
    assert!(plan.contains("runs_ready_index"), "{plan}");
    assert!(plan.contains("runs_expired_index"), "{plan}");
    // And the statement does what the plan says.
    let batch = store.claim_due(&claim_policy).await.expect("claim");
    assert_eq!(batch.outcome_count(), 10);
    assert!(!batch.leases.is_empty());
    assert!(
        started.elapsed().as_secs() < 20,
        "took {:?}",
        started.elapsed()
    );
}
