//! Scopes conceal: another tenant's row is exactly as absent as an unknown id.

mod common;

use common::*;
use docket_core::model::{EventQuery, OwnerScope, RunQuery, RunStatus, Scope, TenantId};
use docket_core::store::{GraphStore, ReleaseWake, RunStore, StoreErrorKind};
use docket_sqlite::testing::corrupt_run;

fn scope(id: &str) -> Scope {
    Scope::Tenant(TenantId::new(id).unwrap())
}

async fn two_tenants() -> Fx {
    let fx = fx().await;
    fx.publish_for(&tenant("a")).await;
    fx.publish_for(&tenant("b")).await;
    fx.start_in(&tenant("a"), "ra", t(0)).await;
    fx.start_in(&tenant("b"), "rb", t(0)).await;
    fx.start("rn", t(0)).await;
    fx
}

#[tokio::test]
async fn a_tenant_sees_only_its_own_runs() {
    let fx = two_tenants().await;
    assert!(fx.store.fetch_run(&scope("a"), &rid("ra")).await.is_ok());
    for (s, id) in [
        (scope("a"), "rb"),
        (scope("a"), "rn"),
        (scope("a"), "ghost"),
        (Scope::Tenantless, "ra"),
        (scope("b"), "ra"),
    ] {
        let error = fx.store.fetch_run(&s, &rid(id)).await.unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::NotFound, "{s:?} {id}");
        let error = fx.store.inspect_run(&s, &rid(id)).await.unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::NotFound, "{s:?} {id}");
    }
    for id in ["ra", "rb", "rn"] {
        assert!(fx.store.fetch_run(&Scope::System, &rid(id)).await.is_ok());
    }
}

#[tokio::test]
async fn listing_is_filtered_by_scope_in_the_store() {
    let fx = two_tenants().await;
    let query = RunQuery {
        limit: 10,
        ..RunQuery::default()
    };
    let names = |page: docket_core::model::RunPage| -> Vec<String> {
        page.runs.into_iter().map(|r| r.id.into_string()).collect()
    };
    assert_eq!(
        names(fx.store.list_runs(&scope("a"), &query).await.unwrap()),
        vec!["ra"]
    );
    assert_eq!(
        names(
            fx.store
                .list_runs(&Scope::Tenantless, &query)
                .await
                .unwrap()
        ),
        vec!["rn"]
    );
    assert_eq!(
        names(fx.store.list_runs(&Scope::System, &query).await.unwrap()),
        vec!["rn", "rb", "ra"]
    );
}

#[tokio::test]
async fn signals_and_event_reads_from_another_tenant_are_not_found() {
    let fx = two_tenants().await;
    let ra = fx
        .store
        .fetch_run(&Scope::System, &rid("ra"))
        .await
        .unwrap();
    let (next, events) = advance(&ra, RunStatus::Running, t(1));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &scope("b"),
            1,
            unclaimed(next.clone(), ReleaseWake::Immediate, t(1)),
            events.clone(),
        ))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    // Scope is looked up before identity: a wrong identity in the wrong tenant is NotFound.
    let mut wrong_identity = next.clone();
    wrong_identity.started_at = Some(t(9));
    let error = fx
        .rejected(fx.store.commit_unclaimed(
            &scope("b"),
            1,
            unclaimed(wrong_identity, ReleaseWake::Immediate, t(1)),
            events.clone(),
        ))
        .await;
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    for result in [
        fx.store
            .fetch_event(&scope("b"), &rid("ra"), 1)
            .await
            .map(|_| ()),
        fx.store
            .fetch_latest_event(&scope("b"), &rid("ra"))
            .await
            .map(|_| ()),
        fx.store
            .list_events(
                &scope("b"),
                &rid("ra"),
                &EventQuery {
                    after_seq: 0,
                    limit: 5,
                },
            )
            .await
            .map(|_| ()),
    ] {
        assert_eq!(result.unwrap_err().kind(), StoreErrorKind::NotFound);
    }
    fx.store
        .commit_unclaimed(
            &scope("a"),
            1,
            unclaimed(next, ReleaseWake::Immediate, t(1)),
            events,
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn graph_versions_belong_to_their_owner() {
    let fx = fx().await;
    let error = fx
        .store
        .fetch_graph(&tenant("a"), &fx.graph)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    let error = fx
        .store
        .fetch_latest_graph_ref(&tenant("a"), &fx.graph.graph_id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    // The same address saved independently by another owner.
    fx.store
        .save_graph(&tenant("a"), &fx.graph, &fx.doc, t(100))
        .await
        .unwrap();
    assert_eq!(
        fx.store.fetch_graph(&tenant("a"), &fx.graph).await.unwrap(),
        fx.doc
    );
    assert_eq!(
        fx.store
            .fetch_graph(&OwnerScope::Tenantless, &fx.graph)
            .await
            .unwrap(),
        fx.doc
    );
}

#[tokio::test]
async fn another_tenants_corrupt_row_is_concealed_not_leaked() {
    let fx = two_tenants().await;
    corrupt_run(fx.guard.path(), &rid("rb")).unwrap();
    let error = fx
        .store
        .fetch_run(&scope("a"), &rid("rb"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::NotFound);
    let error = fx
        .store
        .fetch_run(&Scope::System, &rid("rb"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
}
