//! Calls that lock a run row inside a transaction release it before they return, also when
//! they write nothing: a claim right after them must not skip the run (`SKIP LOCKED`); claims
//! skip rows locked elsewhere; a start batch that waits on a graph version another session
//! deletes answers each member on its own.

mod common;

use common::*;
use docket_core::model::{OwnerScope, Scope};
use docket_core::store::{GraphStore, ReleaseWake, RunStore, StoreErrorKind};
use docket_postgres::testing::test_url;
use sqlx::{Connection, PgConnection};

/// Whether another session can lock the run row right now, without waiting.
async fn lockable(other: &mut PgConnection, schema: &str, run_id: &str) -> bool {
    let mut tx = other.begin().await.expect("begin");
    let locked = sqlx::query(&format!(
        "SELECT 1 FROM {schema}.runs WHERE run_id = $1 FOR UPDATE NOWAIT"
    ))
    .bind(run_id)
    .fetch_optional(&mut *tx)
    .await;
    tx.rollback().await.expect("rollback");
    match locked {
        Ok(row) => row.is_some(),
        Err(e) if e.to_string().contains("55P03") || e.to_string().contains("could not obtain") => {
            false
        }
        Err(e) => panic!("probe: {e}"),
    }
}

#[tokio::test]
async fn no_op_and_rejected_row_locking_calls_leave_the_row_unlocked() {
    let (store, guard) = open().await;
    let mut other = PgConnection::connect(&test_url()).await.expect("server");
    let run = start(&store, &OwnerScope::Tenantless, "r1", t(0)).await;
    for round in 0..20 {
        // Not poisoned: nothing to retry, the transaction only read the locked row.
        store
            .retry_poisoned_run(&Scope::System, &run.id, t(1))
            .await
            .expect("no-op retry");
        assert!(
            lockable(&mut other, guard.schema(), run.id.as_str()).await,
            "round {round}: retry_poisoned_run left the row locked"
        );
        // A stale signal is rejected after the row was locked.
        let error = store
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq + 1,
                unclaimed(next(&next(&run, t(1)), t(1)), ReleaseWake::Immediate, t(1)),
                vec![],
            )
            .await
            .expect_err("stale");
        assert_eq!(error.kind(), StoreErrorKind::StaleCheckpoint);
        assert!(
            lockable(&mut other, guard.schema(), run.id.as_str()).await,
            "round {round}: a rejected commit_unclaimed left the row locked"
        );
    }
    // And the run is still claimable at once.
    let lease = claim_one(&store, t(2)).await;
    assert_eq!(lease.run_id, run.id);
}

/// Scenario 122 of `docs/scenarios.md`: rows another session holds locked are skipped, never waited
/// for, and the claim still fills its demand from the due rows after them (lock-then-rank, not
/// rank-then-lock: ranking the first page before locking would come back short).
#[tokio::test]
async fn a_claim_skips_rows_locked_elsewhere_and_still_fills_its_demand() {
    let (store, guard) = open().await;
    for i in 0..12 {
        start(&store, &OwnerScope::Tenantless, &format!("r{i:02}"), t(i)).await;
    }
    let mut other = PgConnection::connect(&test_url()).await.expect("connect");
    let mut tx = other.begin().await.expect("begin");
    let locked: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT run_id FROM {}.runs ORDER BY wake_at, run_id LIMIT 5 FOR UPDATE",
        guard.schema()
    ))
    .fetch_all(&mut *tx)
    .await
    .expect("lock the first page");
    assert_eq!(locked, ["r00", "r01", "r02", "r03", "r04"]);

    let batch = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.claim_due(&policy(t(100), 5)),
    )
    .await
    .expect("the claim does not wait for the locked rows")
    .expect("claim");
    assert_eq!(lease_ids(&batch), ["r05", "r06", "r07", "r08", "r09"]);

    tx.rollback().await.expect("rollback");
    let rest = store.claim_due(&policy(t(100), 10)).await.expect("claim");
    assert_eq!(
        lease_ids(&rest),
        ["r00", "r01", "r02", "r03", "r04", "r10", "r11"],
        "the once-locked rows are claimed once free"
    );
}

/// Whether some session is waiting on a lock while running a statement that names `table`.
async fn waits_on_a_lock(other: &mut PgConnection, table: &str) -> bool {
    let waiting: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND position($1 in query) > 0",
    )
    .bind(table)
    .fetch_one(other)
    .await
    .expect("pg_stat_activity");
    waiting > 0
}

/// A start batch whose graph version is deleted between the statement's snapshot (which
/// still sees it) and its foreign-key check (which waits for the delete, then finds the row
/// gone) is refused whole by the server; the store sends the batch again member by member, so
/// the member of the deleted graph is `NotFound` and its neighbour of another graph lands.
#[tokio::test]
async fn a_start_batch_racing_a_graph_delete_answers_each_member_on_its_own() {
    let (store, guard) = open().await;
    let schema = guard.schema().to_owned();
    let kept = save_graph(&store, &OwnerScope::Tenantless).await;
    let doomed_doc = graph_doc("g2", 0);
    let doomed = graph_ref_of(&doomed_doc);
    store
        .save_graph(&OwnerScope::Tenantless, &doomed, &doomed_doc, t(0))
        .await
        .expect("save the doomed graph");
    let mut deleter = PgConnection::connect(&test_url()).await.expect("connect");
    let mut tx = deleter.begin().await.expect("begin");
    let deleted = sqlx::query(&format!(
        "DELETE FROM {schema}.graph_versions WHERE graph_id = $1 AND graph_hash = $2"
    ))
    .bind(doomed.graph_id.as_str())
    .bind(doomed.graph_hash.as_str())
    .execute(&mut *tx)
    .await
    .expect("delete the graph, uncommitted");
    assert_eq!(deleted.rows_affected(), 1);

    let members = vec![init_member(&kept, "kept"), init_member(&doomed, "doomed")];
    let batch = tokio::spawn({
        let store = store.clone();
        let members = members.clone();
        async move { store.initialize_batch(members).await }
    });
    // The batch's foreign-key check waits for the deleting transaction.
    let mut watcher = PgConnection::connect(&test_url()).await.expect("connect");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let table = format!("{schema}.graph_versions");
    while !waits_on_a_lock(&mut watcher, &table).await {
        assert!(
            std::time::Instant::now() < deadline,
            "the start batch never waited for the delete"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tx.commit().await.expect("commit the delete");

    let outcomes = tokio::time::timeout(std::time::Duration::from_secs(20), batch)
        .await
        .expect("the batch finishes once the delete committed")
        .expect("the batch task");
    let kinds: Vec<Option<StoreErrorKind>> = outcomes
        .iter()
        .map(|o| o.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(kinds, vec![None, Some(StoreErrorKind::NotFound)]);
    assert_eq!(
        store
            .fetch_run(&Scope::System, &members[0].proposal.run.id)
            .await
            .expect("the kept graph's run is stored"),
        members[0].proposal.run
    );
    let absent = store
        .fetch_run(&Scope::System, &members[1].proposal.run.id)
        .await
        .expect_err("the deleted graph's run is not stored");
    assert_eq!(absent.kind(), StoreErrorKind::NotFound);
}

/// Start batches racing over the same run ids, each naming them in its own order: every id
/// has exactly one winner, every other claimant of it is answered `Conflict`, and no batch
/// fails or deadlocks (each inserts in run-id order, so two batches meet on their shared ids
/// in the same order).
#[tokio::test]
async fn racing_start_batches_over_the_same_run_ids_give_each_id_one_winner() {
    let (store, _guard) = open().await;
    let graph = save_graph(&store, &OwnerScope::Tenantless).await;
    let ids: Vec<String> = (0..24).map(|i| format!("race{i:02}")).collect();
    let mut tasks = Vec::new();
    for racer in 0..8_usize {
        // Each racer walks the ids from its own offset, half of them backwards.
        let mut order: Vec<String> = ids.clone();
        order.rotate_left(racer * 3);
        if racer % 2 == 1 {
            order.reverse();
        }
        let members: Vec<_> = order.iter().map(|id| init_member(&graph, id)).collect();
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let outcomes = store.initialize_batch(members).await;
            order.into_iter().zip(outcomes).collect::<Vec<_>>()
        }));
    }
    let mut winners = std::collections::HashMap::<String, usize>::new();
    for task in tasks {
        let outcomes = tokio::time::timeout(std::time::Duration::from_secs(60), task)
            .await
            .expect("no batch deadlocks")
            .expect("the racer's task");
        for (id, outcome) in outcomes {
            match outcome {
                Ok(run) => {
                    assert_eq!(run.id.as_str(), id);
                    *winners.entry(id).or_default() += 1;
                }
                Err(e) => assert_eq!(e.kind(), StoreErrorKind::Conflict, "{id}: {e}"),
            }
        }
    }
    for id in &ids {
        assert_eq!(winners.get(id), Some(&1), "{id} has exactly one winner");
        store
            .fetch_run(&Scope::System, &rid(id))
            .await
            .expect("every id is stored");
    }
}
