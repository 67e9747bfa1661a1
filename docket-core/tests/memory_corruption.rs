//! Corrupt records are loud and local (`docs/storage-contract.md`, “Reading runs”;
//! `docs/reliability.md`, “Corrupt records”).

mod common;

use common::*;
use docket_core::model::{EventQuery, OwnerScope, RunCursor, RunQuery, RunStatus, Scope};
use docket_core::store::{RunStore, StoreErrorKind};

fn events_query(after_seq: u64, limit: u32) -> EventQuery {
    EventQuery { after_seq, limit }
}

fn runs_query(limit: u32, before: Option<RunCursor>) -> RunQuery {
    RunQuery {
        limit,
        before,
        ..RunQuery::default()
    }
}

// ---- `docs/reliability.md`, “Corrupt records”: corruption is loud and local ---------------------

#[tokio::test]
async fn a_corrupt_run_document_is_corrupt_on_every_read_and_other_runs_are_unaffected() {
    let (store, graph) = store_with_graph().await;
    let bad = start_run(&store, &OwnerScope::Tenantless, &graph, "bad", t(1)).await;
    let good = start_run(&store, &OwnerScope::Tenantless, &graph, "good", t(2)).await;
    store.corrupt_run(&bad.id).expect("corrupt");
    let kind = |r: Result<(), docket_core::store::StoreError>| r.map_err(|e| e.kind());
    assert_eq!(
        kind(store.fetch_run(&Scope::System, &bad.id).await.map(|_| ())),
        Err(StoreErrorKind::Corrupt)
    );
    assert_eq!(
        kind(store.inspect_run(&Scope::System, &bad.id).await.map(|_| ())),
        Err(StoreErrorKind::Corrupt)
    );
    assert_eq!(
        kind(
            store
                .retry_poisoned_run(&Scope::System, &bad.id, t(3))
                .await
                .map(|_| ())
        ),
        Err(StoreErrorKind::Corrupt)
    );
    // Concealment still wins over corruption: another tenant learns nothing.
    assert_eq!(
        kind(
            store
                .fetch_run(&tenant_scope("x"), &bad.id)
                .await
                .map(|_| ())
        ),
        Err(StoreErrorKind::NotFound)
    );
    assert_eq!(
        store
            .fetch_run(&Scope::System, &good.id)
            .await
            .expect("good run"),
        good
    );
    // Listing reads summary columns only, so it keeps working.
    let page = store
        .list_runs(&Scope::System, &runs_query(10, None))
        .await
        .expect("list");
    assert_eq!(page.runs.len(), 2);
}

#[tokio::test]
async fn a_document_that_decodes_but_breaks_durable_rules_or_columns_is_corrupt() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    let mut created = run.clone();
    created.status = RunStatus::Created;
    let mut moved = run.clone();
    moved.checkpoint_seq = 9;
    let mut renamed = run.clone();
    renamed.id = rid("r2");
    let mut done_while_claimable = run.clone();
    done_while_claimable.status = RunStatus::Done;
    done_while_claimable.finished_at = Some(t(1));
    for doc in [created, moved, renamed, done_while_claimable] {
        store
            .replace_run_document(&run.id, serde_json::to_vec(&doc).expect("encode"))
            .expect("replace");
        let error = store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect_err("corrupt");
        assert_eq!(error.kind(), StoreErrorKind::Corrupt, "{error}");
    }
    store
        .replace_run_document(&run.id, serde_json::to_vec(&run).expect("encode"))
        .expect("restore");
    assert_eq!(
        store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("fetch"),
        run
    );
}

#[tokio::test]
async fn a_corrupt_event_is_corrupt_when_read_and_never_skipped() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    store.corrupt_event(&run.id, 2).expect("corrupt");
    let e = store
        .fetch_event(&Scope::System, &run.id, 2)
        .await
        .expect_err("corrupt");
    assert_eq!(e.kind(), StoreErrorKind::Corrupt);
    let e = store
        .fetch_latest_event(&Scope::System, &run.id)
        .await
        .expect_err("corrupt");
    assert_eq!(
        e.kind(),
        StoreErrorKind::Corrupt,
        "the newest corrupt row is not skipped"
    );
    let e = store
        .list_events(&Scope::System, &run.id, &events_query(0, 10))
        .await
        .expect_err("corrupt");
    assert_eq!(e.kind(), StoreErrorKind::Corrupt);
    // The healthy event before it is still readable, and a page that stops short is fine.
    store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .expect("event 1");
    let page = store
        .list_events(&Scope::System, &run.id, &events_query(0, 1))
        .await
        .expect("page");
    assert_eq!(page.events.len(), 1);
}

#[tokio::test]
async fn corrupting_something_absent_is_not_found() {
    let (store, graph) = store_with_graph().await;
    assert_eq!(
        store.corrupt_run(&rid("ghost")).map_err(|e| e.kind()),
        Err(StoreErrorKind::NotFound)
    );
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(1)).await;
    assert_eq!(
        store.corrupt_event(&run.id, 99).map_err(|e| e.kind()),
        Err(StoreErrorKind::NotFound)
    );
    assert_eq!(
        store
            .corrupt_graph(&tenant("nobody"), &graph)
            .map_err(|e| e.kind()),
        Err(StoreErrorKind::NotFound)
    );
}

#[tokio::test]
async fn a_run_with_a_corrupt_document_is_still_claimed_and_its_holder_sees_the_corruption() {
    let (store, graph) = store_with_graph().await;
    let bad = start_run(&store, &OwnerScope::Tenantless, &graph, "bad", t(0)).await;
    let good = start_run(&store, &OwnerScope::Tenantless, &graph, "good", t(1)).await;
    store.corrupt_run(&bad.id).expect("corrupt");
    let batch = store
        .claim_due(&claim_policy(t(2), 10))
        .await
        .expect("one bad row blocks nothing");
    let ids: Vec<_> = batch.leases.iter().map(|l| l.run_id.clone()).collect();
    assert_eq!(ids, vec![bad.id.clone(), good.id.clone()]);
    // The damaged document does not travel with its lease; the sound one does.
    assert_eq!(batch.leases[0].run, None);
    assert_eq!(batch.leases[1].run.as_ref(), Some(&good));
    let error = store
        .fetch_run(&Scope::System, &bad.id)
        .await
        .expect_err("corrupt");
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
}
