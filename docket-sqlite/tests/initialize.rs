//! `initialize`: validation before lookup, graph existence, global run ids, events.

mod common;

use common::*;
use docket_core::model::{CheckpointType, EventQuery, GraphHash, OwnerScope, RunStatus, Scope};
use docket_core::store::{RunStore, StoreError, StoreErrorKind};
use serde_json::json;

fn kind(error: &StoreError) -> StoreErrorKind {
    error.kind()
}

#[tokio::test]
async fn initialize_stores_the_run_with_fresh_operational_state() {
    let fx = fx().await;
    let run = fx.start("r1", t(5)).await;
    let info = fx
        .store
        .inspect_run(&Scope::Tenantless, &run.id)
        .await
        .unwrap();
    assert_eq!(info.run, run);
    assert_eq!(info.owner, OwnerScope::Tenantless);
    assert_eq!(info.wake_at, Some(t(5)));
    assert_eq!(info.claimed_at, None);
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert!(info.poison.is_none());
    let page = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.events, init_events(&run));
}

#[tokio::test]
async fn initialize_validates_the_proposal_before_looking_anything_up() {
    let fx = fx().await;
    // A run of a graph that does not exist: validation errors must win over NotFound.
    let mut run = initial_run("r1", &fx.graph, t(0));
    run.graph_hash = GraphHash::new("missing").unwrap();
    let mut wrong_type = init_proposal(&run, t(0), t(0));
    wrong_type.checkpoint_type = CheckpointType::StepCommitted;
    let error = fx
        .rejected(
            fx.store
                .initialize(&OwnerScope::Tenantless, wrong_type, init_events(&run)),
        )
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);

    let mut waiting = run.clone();
    waiting.status = RunStatus::Waiting;
    let error = fx
        .rejected(fx.store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(&waiting, t(0), t(0)),
            vec![],
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);

    let mut seq_zero = run.clone();
    seq_zero.checkpoint_seq = 0;
    let error = fx
        .rejected(fx.store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(&seq_zero, t(0), t(0)),
            vec![],
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);

    let mut not_durable = run.clone();
    not_durable.output = Some(Default::default());
    let error = fx
        .rejected(fx.store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(&not_durable, t(0), t(0)),
            vec![],
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
}

#[tokio::test]
async fn initialize_without_the_graph_in_the_owner_scope_is_not_found() {
    let fx = fx().await;
    let run = initial_run("r1", &fx.graph, t(0));
    let error = fx
        .rejected(fx.store.initialize(
            &tenant("a"),
            init_proposal(&run, t(0), t(0)),
            init_events(&run),
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn initialize_with_a_taken_run_id_is_a_conflict_in_every_scope() {
    let fx = fx().await;
    let run = fx.start("r1", t(0)).await;
    fx.publish_for(&tenant("a")).await;
    for owner in [OwnerScope::Tenantless, tenant("a")] {
        let error = fx
            .rejected(fx.store.initialize(
                &owner,
                init_proposal(&run, t(0), t(0)),
                init_events(&run),
            ))
            .await;
        assert_eq!(kind(&error), StoreErrorKind::Conflict);
    }
}

#[tokio::test]
async fn initialize_collapses_identical_duplicate_events() {
    let fx = fx().await;
    let run = initial_run("r1", &fx.graph, t(0));
    let mut events = init_events(&run);
    events.extend(init_events(&run));
    events.reverse();
    fx.store
        .initialize(
            &OwnerScope::Tenantless,
            init_proposal(&run, t(0), t(0)),
            events,
        )
        .await
        .unwrap();
    let page = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.events, init_events(&run));
}

#[tokio::test]
async fn initialize_rejects_contradictory_or_foreign_events() {
    let fx = fx().await;
    let run = initial_run("r1", &fx.graph, t(0));
    let mut contradictory = init_events(&run);
    let mut other = contradictory[1].clone();
    other.payload.insert("n".into(), json!("different"));
    contradictory.push(other);
    let error = fx
        .rejected(fx.store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(&run, t(0), t(0)),
            contradictory,
        ))
        .await;
    assert!(
        matches!(error, StoreError::EventConflict { seq: 2 }),
        "{error:?}"
    );

    let mut foreign = init_events(&run);
    foreign[0].run_id = rid("someone-else");
    let error = fx
        .rejected(fx.store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(&run, t(0), t(0)),
            foreign,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);

    let mut zero = init_events(&run);
    zero[0].seq = 0;
    let error = fx
        .rejected(fx.store.initialize(
            &OwnerScope::Tenantless,
            init_proposal(&run, t(0), t(0)),
            zero,
        ))
        .await;
    assert_eq!(kind(&error), StoreErrorKind::InvalidTransition);
}
