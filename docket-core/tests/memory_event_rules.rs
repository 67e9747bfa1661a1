//! Event identity, idempotency and conflicts inside transitions (`docs/storage-contract.md`,
//! “Transitions”; `docs/storage-contract.md`, “Reading events”; scenario 15 of
//! `docs/scenarios.md`).

mod common;

use serde_json::json;

use common::*;
use docket_core::model::{OwnerScope, MAX_SEQ};
use docket_core::store::{RunStore, StoreErrorKind};

// ---- 15 [TRANSITION-EVENT-CANONICAL] ----------------------------------------------------

#[tokio::test]
async fn events_of_another_run_or_with_bad_content_are_invalid_transitions() {
    let (store, graph) = store_with_graph().await;
    let run = initialized_run(&rid("r1"), &graph, t(1));
    let mut foreign = init_events(&run, t(1));
    foreign[0].run_id = rid("someone-else");
    let mut zero = init_events(&run, t(1));
    zero[0].seq = 0;
    let mut huge = init_events(&run, t(1));
    huge[0].seq = MAX_SEQ + 1;
    let mut reserved = init_events(&run, t(1));
    reserved[0].payload = map(json!({ "$ref": 1 }));
    for events in [foreign, zero, huge, reserved] {
        assert_rejected(
            &store,
            StoreErrorKind::InvalidTransition,
            store.initialize(
                &OwnerScope::Tenantless,
                init_proposal(run.clone(), t(1), t(1)),
                events,
            ),
        )
        .await;
    }
}
