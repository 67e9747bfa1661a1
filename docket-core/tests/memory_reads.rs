//! Reads, scopes and cursors on the memory store (`docs/storage-contract.md`, “Reading runs”;
//! `docs/storage-contract.md`, “Reading events”; scenarios 2, 4, 6 and 137 of `docs/scenarios.md`).

mod common;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{
    EventQuery, EventType, OwnerScope, RunCursor, RunQuery, RunStatus, Scope, MAX_PAGE_LIMIT,
};
use docket_core::store::{ReleaseWake, RunStore, StoreErrorKind};

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

// ---- 2 [SCOPE-OWNER-ISOLATION] -----------------------------------------------------------

#[tokio::test]
async fn runs_and_events_are_visible_to_their_owner_and_system_only() {
    let store = MemoryStore::new();
    let open = publish(&store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    let a_graph = publish(&store, &tenant("a"), "g", 1, t(0)).await;
    let open_run = start_run(&store, &OwnerScope::Tenantless, &open, "open", t(1)).await;
    let a_run = start_run(&store, &tenant("a"), &a_graph, "a-run", t(1)).await;

    for (run, owner_scope) in [(&open_run, Scope::Tenantless), (&a_run, tenant_scope("a"))] {
        for scope in [owner_scope, Scope::System] {
            assert_eq!(&store.fetch_run(&scope, &run.id).await.expect("fetch"), run);
            assert_eq!(
                &store
                    .inspect_run(&scope, &run.id)
                    .await
                    .expect("inspect")
                    .run,
                run
            );
            store.fetch_event(&scope, &run.id, 1).await.expect("event");
        }
    }
    let hidden = [
        (&open_run, tenant_scope("a")),
        (&a_run, Scope::Tenantless),
        (&a_run, tenant_scope("b")),
    ];
    for (run, scope) in hidden {
        let fetch = store.fetch_run(&scope, &run.id).await;
        assert_eq!(
            fetch.map(|_| ()).map_err(|e| e.kind()),
            Err(StoreErrorKind::NotFound)
        );
        let inspect = store.inspect_run(&scope, &run.id).await;
        assert_eq!(
            inspect.map(|_| ()).map_err(|e| e.kind()),
            Err(StoreErrorKind::NotFound)
        );
        let event = store.fetch_event(&scope, &run.id, 1).await;
        assert_eq!(
            event.map(|_| ()).map_err(|e| e.kind()),
            Err(StoreErrorKind::NotFound)
        );
        let latest = store.fetch_latest_event(&scope, &run.id).await;
        assert_eq!(
            latest.map(|_| ()).map_err(|e| e.kind()),
            Err(StoreErrorKind::NotFound)
        );
        let page = store
            .list_events(&scope, &run.id, &events_query(0, 10))
            .await;
        assert_eq!(
            page.map(|_| ()).map_err(|e| e.kind()),
            Err(StoreErrorKind::NotFound)
        );
    }
}

// ---- 4 [EVENT-CURSOR-GAPS] ---------------------------------------------------------------

async fn run_with_events_1_3_4(store: &MemoryStore) -> docket_core::model::Run {
    let graph = publish(store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    let mut run = initialized_run(&rid("gappy"), &graph, t(1));
    run.event_seq = 4;
    let events = vec![
        event(&run.id, 1, EventType::RunInitialized, t(1)),
        event(&run.id, 3, EventType::ChannelUpdated, t(1)),
        event(&run.id, 4, EventType::CheckpointCommitted, t(1)),
    ];
    store
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(run, t(1), t(1)),
            events,
        )
        .await
        .expect("initialize")
}

#[tokio::test]
async fn event_pages_step_over_gaps_with_retained_bounds() {
    let store = MemoryStore::new();
    let run = run_with_events_1_3_4(&store).await;
    let latest = store
        .fetch_latest_event(&Scope::Tenantless, &run.id)
        .await
        .expect("latest")
        .expect("event");
    assert_eq!(latest.seq, 4);
    let page = store
        .list_events(&Scope::Tenantless, &run.id, &events_query(0, 1))
        .await
        .expect("page");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(page.next_after_seq, 1);
    assert!(page.has_more);
    assert_eq!(
        (page.oldest_available_seq, page.latest_available_seq),
        (Some(1), Some(4))
    );
    assert_eq!(page.latest_seq, 4);
    let rest = store
        .list_events(&Scope::Tenantless, &run.id, &events_query(1, 10))
        .await
        .expect("page");
    assert_eq!(
        rest.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert_eq!(rest.next_after_seq, 4);
    assert!(!rest.has_more);
    assert!(store
        .fetch_event(&Scope::Tenantless, &run.id, 2)
        .await
        .is_err());
}

// ---- 137 list_events ---------------------------------------------------------------------

#[tokio::test]
async fn event_limits_outside_one_to_the_maximum_are_invalid_arguments() {
    let store = MemoryStore::new();
    let run = run_with_events_1_3_4(&store).await;
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        assert_rejected(
            &store,
            StoreErrorKind::InvalidArgument,
            store.list_events(&Scope::System, &run.id, &events_query(0, limit)),
        )
        .await;
    }
    let page = store
        .list_events(&Scope::System, &run.id, &events_query(0, MAX_PAGE_LIMIT))
        .await
        .expect("maximum limit");
    assert_eq!(page.events.len(), 3);
}

#[tokio::test]
async fn pruned_events_show_as_retention_gaps_and_latest_seq_survives_full_pruning() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let (proposal, events) = unclaimed(&run, RunStatus::Running, ReleaseWake::Immediate, t(10_000));
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("commit");
    let policy = |now_ms| docket_core::store::PrunePolicy {
        now: t(now_ms),
        event_retention_ms: 5_000,
        run_retention_ms: 5_000,
        batch_size: std::num::NonZeroU32::new(100).expect("nonzero"),
    };
    store.prune(&policy(6_000)).await.expect("prune");
    let page = store
        .list_events(&Scope::System, &run.id, &events_query(0, 10))
        .await
        .expect("page");
    assert_eq!(page.oldest_available_seq, Some(3));
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![3]
    );
    store.prune(&policy(20_000)).await.expect("prune");
    let page = store
        .list_events(&Scope::System, &run.id, &events_query(0, 10))
        .await
        .expect("page");
    assert!(page.events.is_empty());
    assert_eq!(
        (
            page.oldest_available_seq,
            page.latest_available_seq,
            page.latest_seq
        ),
        (None, None, 3)
    );
}

// ---- 6 [RUN-READS-CURSORS] ---------------------------------------------------------------

#[tokio::test]
async fn run_pages_are_newest_first_tie_broken_by_id_and_keep_the_cursor_when_empty() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "old", t(1)).await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "tie-a", t(2)).await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "tie-b", t(2)).await;
    let mut cursor = None;
    let mut order = Vec::new();
    for expected_more in [true, true, false] {
        let page = store
            .list_runs(&Scope::Tenantless, &runs_query(1, cursor.clone()))
            .await
            .expect("page");
        assert_eq!(page.runs.len(), 1);
        assert_eq!(page.has_more, expected_more);
        order.push(page.runs[0].id.as_str().to_owned());
        cursor = page.next_before;
    }
    assert_eq!(order, vec!["tie-b", "tie-a", "old"]);
    let last = store
        .list_runs(&Scope::Tenantless, &runs_query(1, cursor.clone()))
        .await
        .expect("empty page");
    assert!(last.runs.is_empty() && !last.has_more);
    assert_eq!(last.next_before, cursor);
}

#[tokio::test]
async fn invalid_run_queries_are_invalid_arguments() {
    let (store, _) = store_with_graph().await;
    let mut empty_statuses = runs_query(10, None);
    empty_statuses.statuses = Some(vec![]);
    let mut created = runs_query(10, None);
    created.statuses = Some(vec![RunStatus::Created]);
    for q in [
        runs_query(0, None),
        runs_query(MAX_PAGE_LIMIT + 1, None),
        empty_statuses,
        created,
    ] {
        assert_rejected(
            &store,
            StoreErrorKind::InvalidArgument,
            store.list_runs(&Scope::System, &q),
        )
        .await;
    }
}
