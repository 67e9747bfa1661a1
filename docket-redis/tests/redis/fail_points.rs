//! `docs/reliability.md`, “Scripts check before they write”: Redis has no rollback, so every script
//! must finish its checks before its first write. Each write script is run through a twin whose
//! write boundary raises an error; on a call that passes every check (the production script then
//! succeeds on the same state), the twin must fail and leave the namespace byte-identical.

use std::future::Future;
use std::num::NonZeroU32;

use docket_core::model::{RunStatus, Scope};
use docket_core::store::{
    AbandonMode, AbandonPolicy, ClaimedSchedule, GraphStore, PrunePolicy, ReleaseWake, RunStore,
    StoreError, StoreErrorKind,
};

use crate::common::*;

/// The twin's call stops at the fail point and writes nothing; the real call then succeeds.
async fn stops_at_boundary<T, U: std::fmt::Debug>(
    fx: &Fx,
    twin_call: impl Future<Output = Result<T, StoreError>>,
    real_call: impl Future<Output = Result<U, StoreError>>,
) -> U {
    let before = fx.snapshot().await;
    let err = match twin_call.await {
        Ok(_) => panic!("the fail point was not reached"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), StoreErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("docket fail point"), "{err}");
    assert_eq!(fx.snapshot().await, before, "a write preceded the boundary");
    real_call.await.expect("the same call passes every check")
}

#[tokio::test]
async fn every_write_script_checks_everything_before_its_first_write() {
    let fx = open().await;
    let twin = fx.store.with_fail_points();
    let owner = tenant("acme");
    let scope = scope_of(&owner);

    // save_graph
    let doc = graph_doc("g", 0);
    let graph = graph_ref_of(&doc);
    stops_at_boundary(
        &fx,
        twin.save_graph(&owner, &graph, &doc, t(0)),
        fx.store.save_graph(&owner, &graph, &doc, t(0)),
    )
    .await;

    // initialize
    let run = initialized_run("r1", &graph, t(0));
    let init = || init_proposal(run.clone(), t(0), t(0));
    let events = vec![event(&run, 1, t(0), "init")];
    stops_at_boundary(
        &fx,
        twin.initialize(&owner, init(), events.clone()),
        fx.store.initialize(&owner, init(), events),
    )
    .await;

    // claim_due
    let p = policy(t(1), 1, 60_000, 5, None);
    let batch = stops_at_boundary(&fx, twin.claim_due(&p), fx.store.claim_due(&p)).await;
    let lease = batch.leases.into_iter().next().expect("lease");

    // release_claim (then claim again)
    stops_at_boundary(
        &fx,
        twin.release_claim(&run.id, &lease.claim_token, t(3)),
        fx.store.release_claim(&run.id, &lease.claim_token, t(3)),
    )
    .await;
    let lease = claim_one(&fx.store, t(3)).await;

    // commit_claimed
    let moved = next(&run, RunStatus::Running, t(4));
    let commit = || {
        claimed_commit(
            moved.clone(),
            1,
            &lease.claim_token,
            ClaimedSchedule::RetainClaim,
            t(4),
        )
    };
    let events = vec![next_event(&moved, t(4))];
    stops_at_boundary(
        &fx,
        twin.commit_claimed(&Scope::System, commit(), events.clone()),
        fx.store.commit_claimed(&Scope::System, commit(), events),
    )
    .await;

    // abandon_claim (poisoning: the run is poisoned by the second abandon)
    let abandon = AbandonPolicy {
        expected_seq: 2,
        now: t(5),
        retry_at: t(5),
        max_claim_abandons: NonZeroU32::new(1).expect("max"),
        mode: AbandonMode::Poisoning,
    };
    stops_at_boundary(
        &fx,
        twin.abandon_claim(&run.id, &lease.claim_token, &abandon),
        fx.store
            .abandon_claim(&run.id, &lease.claim_token, &abandon),
    )
    .await;
    let lease = claim_one(&fx.store, t(5)).await;
    fx.store
        .abandon_claim(&run.id, &lease.claim_token, &abandon)
        .await
        .expect("poisons");

    // retry_poisoned_run
    stops_at_boundary(
        &fx,
        twin.retry_poisoned_run(&scope, &run.id, t(6)),
        fx.store.retry_poisoned_run(&scope, &run.id, t(6)),
    )
    .await;

    // claim_due under TenantFair: reads the share, counts the claims for the cap, and stores
    // the cursor and the admission marker only below the boundary
    let acme = docket_core::model::TenantId::new("acme").expect("tenant");
    let capped = docket_core::store::TenantShare {
        weight: NonZeroU32::new(2).expect("weight"),
        cap: NonZeroU32::new(1),
    };
    fx.store
        .set_tenant_share(&acme, capped)
        .await
        .expect("share");
    let fair = docket_core::store::ClaimRequest {
        policy: docket_core::store::ClaimPolicy::TenantFair,
        ..policy(t(6), 2, 60_000, 5, None)
    };
    let batch = stops_at_boundary(&fx, twin.claim_due(&fair), fx.store.claim_due(&fair)).await;
    assert_eq!(batch.leases.len(), 1);

    // commit_unclaimed
    let cancelled = next(&moved, RunStatus::Cancelled, t(7));
    let signal = || unclaimed_commit(cancelled.clone(), ReleaseWake::Terminal, t(7));
    let events = vec![next_event(&cancelled, t(7))];
    stops_at_boundary(
        &fx,
        twin.commit_unclaimed(&scope, 2, signal(), events.clone()),
        fx.store.commit_unclaimed(&scope, 2, signal(), events),
    )
    .await;

    // prune (it has no failing check: the boundary is its first statement)
    let prune = PrunePolicy {
        now: t(1_000_000),
        event_retention_ms: 1,
        run_retention_ms: 1,
        batch_size: NonZeroU32::new(10).expect("batch"),
    };
    let report = stops_at_boundary(&fx, twin.prune(&prune), fx.store.prune(&prune)).await;
    assert_eq!(report.runs_deleted, 1);
}
