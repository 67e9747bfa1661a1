//! `initialize`: the exact document, the initial row, and every refusal leaving the store
//! unchanged.

mod common;

use common::*;
use docket_core::model::{CheckpointType, GraphHash, OwnerScope, RunStatus};
use docket_core::store::rules::effects;
use docket_core::store::{InitProposal, RunStore, StoreError, StoreErrorKind};
use docket_postgres::testing;

fn kind<T: std::fmt::Debug>(result: Result<T, StoreError>) -> StoreErrorKind {
    result.expect_err("expected an error").kind()
}

#[tokio::test]
async fn initialize_stores_the_exact_document_and_the_initial_operational_row() {
    let (store, _guard) = open().await;
    let owner = tenant("acme");
    let run = start(&store, &owner, "r1", t(5)).await;
    let fetched = store.fetch_run(&SYSTEM, &run.id).await.expect("fetch");
    assert_eq!(fetched, run, "NUL bytes, 1e20 and -0.0 round-trip exactly");
    let text = fetched.input["text"].as_str().expect("text");
    assert!(text.contains('\0'));
    let numbers = fetched.input["numbers"].as_array().expect("numbers");
    assert!(numbers[1].as_f64().expect("float").is_sign_negative());
    let info = store
        .inspect_run(&(&owner).into(), &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.owner, owner);
    assert_eq!(
        testing::operational_state(&store, &run.id)
            .await
            .expect("ops"),
        effects::initial_state(t(5))
    );
    let latest = store
        .fetch_latest_event(&SYSTEM, &run.id)
        .await
        .expect("latest")
        .expect("an event");
    assert_eq!(latest, event(&run, 1, t(0), "init"));
}

#[tokio::test]
async fn initialize_refuses_a_taken_id_in_any_scope_and_a_missing_graph_without_writing() {
    let (store, _guard) = open().await;
    let a = tenant("a");
    let b = tenant("b");
    let run = start(&store, &a, "r1", t(0)).await;
    let graph_b = save_graph(&store, &b).await;
    let before = snapshot(&store).await;
    let again = |owner: OwnerScope, graph| {
        let store = store.clone();
        async move {
            let run = initialized_run("r1", &graph, t(1));
            store
                .initialize(
                    &owner,
                    InitProposal {
                        run: run.clone(),
                        checkpoint_type: CheckpointType::RunInitialized,
                        wake_at: t(1),
                        now: t(1),
                    },
                    vec![event(&run, 1, t(1), "other")],
                )
                .await
        }
    };
    let graph_a = testing_graph(&run);
    assert_eq!(
        kind(again(a.clone(), graph_a.clone()).await),
        StoreErrorKind::Conflict
    );
    assert_eq!(
        kind(again(b.clone(), graph_b).await),
        StoreErrorKind::Conflict
    );
    // The graph exists for `a` only: for `c` it is absent, which wins over the taken id.
    assert_eq!(
        kind(again(tenant("c"), graph_a).await),
        StoreErrorKind::NotFound
    );
    let mut unknown = testing_graph(&run);
    unknown.graph_hash = GraphHash::new("0".repeat(64)).expect("hash");
    let fresh = initialized_run("r2", &unknown, t(1));
    let result = store
        .initialize(
            &a,
            InitProposal {
                run: fresh,
                checkpoint_type: CheckpointType::RunInitialized,
                wake_at: t(1),
                now: t(1),
            },
            vec![],
        )
        .await;
    assert_eq!(kind(result), StoreErrorKind::NotFound);
    assert_eq!(snapshot(&store).await, before);
}

fn testing_graph(run: &docket_core::model::Run) -> docket_core::model::GraphRef {
    docket_core::model::GraphRef {
        graph_id: run.graph_id.clone(),
        graph_hash: run.graph_hash.clone(),
    }
}

#[tokio::test]
async fn initialize_rejects_malformed_proposals_before_any_write() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let graph = save_graph(&store, &owner).await;
    let before = snapshot(&store).await;
    let base = initialized_run("r1", &graph, t(0));
    let proposal = |run| InitProposal {
        run,
        checkpoint_type: CheckpointType::RunInitialized,
        wake_at: t(0),
        now: t(0),
    };
    let mut waiting = base.clone();
    waiting.status = RunStatus::Waiting;
    let mut seq0 = base.clone();
    seq0.checkpoint_seq = 0;
    let mut no_update = base.clone();
    no_update.updated_at = None;
    let mut wrong_type = proposal(base.clone());
    wrong_type.checkpoint_type = CheckpointType::StepCommitted;
    let mut foreign = event(&base, 1, t(0), "x");
    foreign.run_id = rid("other");
    let cases = vec![
        (proposal(waiting), vec![], StoreErrorKind::InvalidTransition),
        (proposal(seq0), vec![], StoreErrorKind::InvalidTransition),
        (
            proposal(no_update),
            vec![],
            StoreErrorKind::InvalidTransition,
        ),
        (wrong_type, vec![], StoreErrorKind::InvalidTransition),
        (
            proposal(base.clone()),
            vec![foreign],
            StoreErrorKind::InvalidTransition,
        ),
        (
            proposal(base.clone()),
            vec![event(&base, 1, t(0), "a"), event(&base, 1, t(0), "b")],
            StoreErrorKind::EventConflict,
        ),
    ];
    for (proposal, events, expected) in cases {
        let result = store.initialize(&owner, proposal, events).await;
        assert_eq!(kind(result), expected);
        assert_eq!(snapshot(&store).await, before);
    }
    // Identical duplicates collapse to one stored event.
    let e = event(&base, 1, t(0), "a");
    store
        .initialize(&owner, proposal(base.clone()), vec![e.clone(), e.clone()])
        .await
        .expect("duplicates collapse");
    let page = store
        .list_events(
            &SYSTEM,
            &base.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("events");
    assert_eq!(page.events, vec![e]);
}
