//! Claim, graph, retention and read scripts.

use std::num::NonZeroU32;

use docket_core::model::ClaimToken;
use docket_core::store::{
    AbandonMode, AbandonOutcome, AbandonPolicy, GraphStore, PrunePolicy, RunStore, StoreErrorKind,
};
use docket_redis::testing::UNDECODABLE;

use super::{acme, no_op, populated, rejected};
use crate::common::*;

#[tokio::test]
async fn claim_due_checks_write_nothing() {
    let (fx, _, _, _, _) = populated().await;
    // Nothing due (r1 is claimed and live, r2 waits, r3 is done).
    let batch = no_op(&fx, fx.store.claim_due(&policy(t(4), 10, 60_000, 5, None))).await;
    assert_eq!(batch.outcome_count(), 0);
    // A ready entry that contradicts its run hash: the script refuses before any write,
    // even though a healthy candidate is due too.
    let owner = tenant("acme");
    let graph = publish(&fx.store, &owner, "g").await;
    start(&fx.store, &owner, "r9", &graph, t(4)).await;
    fx.guard
        .command::<()>(
            redis::cmd("ZADD")
                .arg(fx.store.keys().ready())
                .arg(0)
                .arg("r2"),
        )
        .await
        .expect("plant a contradicting ready entry");
    rejected(
        &fx,
        StoreErrorKind::Corrupt,
        fx.store.claim_due(&policy(t(10), 10, 60_000, 5, None)),
    )
    .await;
}

#[tokio::test]
async fn release_checks_write_nothing() {
    let (fx, r1, lease, r2, _) = populated().await;
    no_op(
        &fx,
        fx.store.release_claim(&r1.id, &ClaimToken::mint(), t(5)),
    )
    .await;
    no_op(
        &fx,
        fx.store.release_claim(&r2.id, &lease.claim_token, t(5)),
    )
    .await;
    no_op(
        &fx,
        fx.store
            .release_claim(&rid("nobody"), &lease.claim_token, t(5)),
    )
    .await;
}

#[tokio::test]
async fn abandon_checks_write_nothing() {
    let (fx, r1, lease, _, _) = populated().await;
    let p = AbandonPolicy {
        expected_seq: 1,
        now: t(5),
        retry_at: t(6),
        max_claim_abandons: NonZeroU32::new(3).expect("max"),
        mode: AbandonMode::Poisoning,
    };
    let stale = no_op(&fx, fx.store.abandon_claim(&r1.id, &ClaimToken::mint(), &p)).await;
    assert_eq!(stale, AbandonOutcome::Stale);
    let mut moved = p;
    moved.expected_seq = 0;
    let stale = no_op(
        &fx,
        fx.store.abandon_claim(&r1.id, &lease.claim_token, &moved),
    )
    .await;
    assert_eq!(stale, AbandonOutcome::Stale);
    let mut early = p;
    early.retry_at = t(4);
    rejected(
        &fx,
        StoreErrorKind::InvalidArgument,
        fx.store.abandon_claim(&r1.id, &lease.claim_token, &early),
    )
    .await;
    // Unreadable counters are refused before the claim is touched.
    fx.guard
        .overwrite_field(&fx.store.keys().run(&r1.id), "abandons", b"many")
        .await
        .expect("corrupt counter");
    rejected(
        &fx,
        StoreErrorKind::Corrupt,
        fx.store.abandon_claim(&r1.id, &lease.claim_token, &p),
    )
    .await;
}

#[tokio::test]
async fn retry_poisoned_checks_write_nothing() {
    let (fx, r1, _, _, r3) = populated().await;
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        fx.store.retry_poisoned_run(&acme(), &rid("nobody"), t(5)),
    )
    .await;
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        fx.store
            .retry_poisoned_run(&scope_of(&tenant("other")), &r1.id, t(5)),
    )
    .await;
    rejected(
        &fx,
        StoreErrorKind::InactiveRun,
        fx.store.retry_poisoned_run(&acme(), &r3.id, t(5)),
    )
    .await;
    let healthy = no_op(&fx, fx.store.retry_poisoned_run(&acme(), &r1.id, t(5))).await;
    assert_eq!(healthy, r1);
}

#[tokio::test]
async fn retry_poisoned_reports_a_corrupt_document_without_recovering_it() {
    let fx = open().await;
    let owner = tenant("acme");
    let sick = start_simple(&fx.store, &owner, "sick").await;
    fx.store
        .claim_due(&policy(t(1), 1, 0, 1, None))
        .await
        .expect("claim");
    let poisoned = fx
        .store
        .claim_due(&policy(t(2), 1, 0, 1, None))
        .await
        .expect("poison");
    assert_eq!(poisoned.poisoned.len(), 1);
    fx.guard
        .overwrite_field(&fx.store.keys().run(&sick.id), "doc", UNDECODABLE)
        .await
        .expect("corrupt");
    rejected(
        &fx,
        StoreErrorKind::Corrupt,
        fx.store.retry_poisoned_run(&acme(), &sick.id, t(3)),
    )
    .await;
}

#[tokio::test]
async fn save_graph_checks_write_nothing() {
    let (fx, _, _, _, _) = populated().await;
    let owner = tenant("acme");
    let doc = graph_doc("g", 0);
    let graph_ref = graph_ref_of(&doc);
    no_op(&fx, fx.store.save_graph(&owner, &graph_ref, &doc, t(50))).await;
    let other = graph_doc("g", 1);
    rejected(
        &fx,
        StoreErrorKind::InvalidGraphHash,
        fx.store.save_graph(&owner, &graph_ref, &other, t(50)),
    )
    .await;
    let wrong_id = graph_doc("h", 0);
    rejected(
        &fx,
        StoreErrorKind::InvalidGraphDocument,
        fx.store.save_graph(&owner, &graph_ref, &wrong_id, t(50)),
    )
    .await;
    // Different stored bytes under the address: refused, never replaced.
    let key = fx
        .store
        .keys()
        .graph(&owner, &graph_ref.graph_id, &graph_ref.graph_hash);
    fx.guard
        .overwrite_field(&key, "bytes", UNDECODABLE)
        .await
        .expect("corrupt graph");
    rejected(
        &fx,
        StoreErrorKind::GraphContentConflict,
        fx.store.save_graph(&owner, &graph_ref, &doc, t(50)),
    )
    .await;
}

#[tokio::test]
async fn prune_checks_write_nothing() {
    let (fx, _, _, _, _) = populated().await;
    let batch = NonZeroU32::new(10).expect("batch");
    rejected(
        &fx,
        StoreErrorKind::InvalidArgument,
        fx.store.prune(&PrunePolicy {
            now: t(1_000_000),
            event_retention_ms: 2,
            run_retention_ms: 1,
            batch_size: batch,
        }),
    )
    .await;
    let report = no_op(
        &fx,
        fx.store.prune(&PrunePolicy {
            now: t(10),
            event_retention_ms: 60_000,
            run_retention_ms: 60_000,
            batch_size: batch,
        }),
    )
    .await;
    assert_eq!(report, Default::default());
}

#[tokio::test]
async fn read_scripts_never_write() {
    let (fx, r1, _, _, _) = populated().await;
    no_op(&fx, fx.store.fetch_event(&acme(), &r1.id, 1)).await;
    no_op(&fx, fx.store.fetch_latest_event(&acme(), &r1.id)).await;
    no_op(
        &fx,
        fx.store.list_events(
            &acme(),
            &r1.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 5,
            },
        ),
    )
    .await;
}
