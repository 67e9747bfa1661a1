//! Acceptance criterion: for every script, each of its checks failing writes nothing. Every case
//! takes a raw snapshot of the whole namespace (every key, type and content), makes the call
//! and compares a fresh snapshot with the first one byte for byte.

use std::future::Future;
use std::num::NonZeroU32;

use docket_core::model::{CheckpointType, ClaimToken, Event, OwnerScope, Run, RunStatus, Scope};
use docket_core::store::{
    AbandonMode, AbandonOutcome, AbandonPolicy, ClaimLease, ClaimedSchedule, GraphStore,
    PrunePolicy, ReleaseWake, RunStore, StoreError, StoreErrorKind,
};
use docket_redis::testing::UNDECODABLE;

use crate::common::*;

/// Runs `op`, which must fail with `kind`, and proves the namespace is byte-identical after.
async fn rejected<T: std::fmt::Debug>(
    fx: &Fx,
    kind: StoreErrorKind,
    op: impl Future<Output = Result<T, StoreError>>,
) {
    let before = fx.snapshot().await;
    let err = op.await.expect_err("the call must be rejected");
    assert_eq!(err.kind(), kind, "{err}");
    assert_eq!(fx.snapshot().await, before, "a rejected call wrote: {err}");
}

/// Runs `op`, which answers success-shaped without changing anything, and proves it.
async fn no_op<T>(fx: &Fx, op: impl Future<Output = Result<T, StoreError>>) -> T {
    let before = fx.snapshot().await;
    let value = op.await.expect("success-shaped answer");
    assert_eq!(fx.snapshot().await, before, "a no-op call wrote");
    value
}

/// A namespace with a claimed run `r1` of tenant `acme` (lease returned), a waiting run `r2`
/// and a done run `r3`.
async fn populated() -> (Fx, Run, ClaimLease, Run, Run) {
    let fx = open().await;
    let owner = tenant("acme");
    let graph = publish(&fx.store, &owner, "g").await;
    let r2 = start(&fx.store, &owner, "r2", &graph, t(0)).await;
    let lease2 = claim_one(&fx.store, t(0)).await;
    let r2 = commit_as_holder(
        &fx.store,
        &r2,
        &lease2.claim_token,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::External),
        t(1),
    )
    .await;
    let r3 = start(&fx.store, &owner, "r3", &graph, t(0)).await;
    let lease3 = claim_one(&fx.store, t(1)).await;
    let r3 = commit_as_holder(
        &fx.store,
        &r3,
        &lease3.claim_token,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(2),
    )
    .await;
    let r1 = start(&fx.store, &owner, "r1", &graph, t(2)).await;
    let lease = claim_one(&fx.store, t(3)).await;
    assert_eq!(lease.run_id, r1.id);
    (fx, r1, lease, r2, r3)
}

fn acme() -> Scope {
    scope_of(&tenant("acme"))
}

#[tokio::test]
async fn initialize_checks_write_nothing() {
    let (fx, r1, _, _, _) = populated().await;
    let owner = tenant("acme");
    let graph = publish(&fx.store, &owner, "g").await;
    let fresh = initialized_run("fresh", &graph, t(0));
    // Rust-side validation: wrong checkpoint type.
    let mut wrong_type = init_proposal(fresh.clone(), t(0), t(0));
    wrong_type.checkpoint_type = CheckpointType::StepCommitted;
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        fx.store.initialize(&owner, wrong_type, vec![]),
    )
    .await;
    // Graph absent in the owner scope.
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        fx.store.initialize(
            &tenant("other"),
            init_proposal(fresh.clone(), t(0), t(0)),
            vec![event(&fresh, 1, t(0), "init")],
        ),
    )
    .await;
    // Run id taken (by any scope).
    let mut taken = fresh.clone();
    taken.id = r1.id.clone();
    rejected(
        &fx,
        StoreErrorKind::Conflict,
        fx.store
            .initialize(&owner, init_proposal(taken, t(0), t(0)), vec![]),
    )
    .await;
    // A stored event that disagrees (left behind for an id that has no run hash).
    fx.guard
        .overwrite_field(
            &fx.store.keys().events(&fresh.id),
            "0000000000000000001",
            br#"{"other":"event"}"#,
        )
        .await
        .expect("plant event");
    rejected(
        &fx,
        StoreErrorKind::EventConflict,
        fx.store.initialize(
            &owner,
            init_proposal(fresh.clone(), t(0), t(0)),
            vec![event(&fresh, 1, t(0), "init")],
        ),
    )
    .await;
}

#[tokio::test]
async fn commit_claimed_checks_write_nothing() {
    let (fx, r1, lease, r2, _) = populated().await;
    let token = &lease.claim_token;
    let good = next(&r1, RunStatus::Running, t(4));
    let events = vec![next_event(&good, t(4))];
    let commit = |run: Run, expected: u64, token: &ClaimToken, events: Vec<Event>| {
        let store = fx.store.clone();
        let proposal = claimed_commit(run, expected, token, ClaimedSchedule::RetainClaim, t(4));
        async move { store.commit_claimed(&Scope::System, proposal, events).await }
    };
    // Rust-side validation: the proposed seq is not expected + 1.
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        commit(good.clone(), 5, token, events.clone()),
    )
    .await;
    // Unknown run.
    let mut unknown = good.clone();
    unknown.id = rid("nobody");
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        commit(unknown, 1, token, vec![]),
    )
    .await;
    // Another tenant's scope.
    let proposal = claimed_commit(good.clone(), 1, token, ClaimedSchedule::RetainClaim, t(4));
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        fx.store
            .commit_claimed(&scope_of(&tenant("other")), proposal, events.clone()),
    )
    .await;
    // Immutable identity: graph hash, started_at.
    let mut other_graph = good.clone();
    other_graph.graph_hash = docket_core::model::GraphHash::new("0".repeat(64)).expect("hash");
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        commit(other_graph, 1, token, events.clone()),
    )
    .await;
    let mut moved = good.clone();
    moved.started_at = Some(t(-5));
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        commit(moved, 1, token, events.clone()),
    )
    .await;
    // Seq fence: a proposal built on an older seq.
    let mut behind = r1.clone();
    behind.checkpoint_seq = 0;
    behind.event_seq = 0;
    let behind_next = next(&behind, RunStatus::Running, t(4));
    rejected(
        &fx,
        StoreErrorKind::StaleCheckpoint,
        commit(behind_next, 0, token, vec![]),
    )
    .await;
    // Token fence: a token that was never issued, and a run that is not claimed.
    rejected(
        &fx,
        StoreErrorKind::StaleCheckpoint,
        commit(good.clone(), 1, &ClaimToken::mint(), events.clone()),
    )
    .await;
    let r2_next = next(&r2, RunStatus::Running, t(4));
    rejected(
        &fx,
        StoreErrorKind::StaleCheckpoint,
        commit(r2_next, r2.checkpoint_seq, token, vec![]),
    )
    .await;
    // Events: a different event at a stored seq.
    rejected(
        &fx,
        StoreErrorKind::EventConflict,
        commit(good.clone(), 1, token, vec![event(&r1, 1, t(0), "changed")]),
    )
    .await;
    // Nothing above moved the fence: the real commit still lands.
    commit(good, 1, token, events).await.expect("commit");
}

#[tokio::test]
async fn commit_claimed_status_matrix_check_writes_nothing() {
    let fx = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start_simple(&fx.store, &owner, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    // A claimed row is always running, and running may become any durable status, so the
    // script's status check is only reachable on an inconsistent row: park the run as waiting,
    // then plant the old token on it. Waiting → done must still be refused without a write.
    let waiting = next(&run, RunStatus::Waiting, t(2));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed_commit(waiting.clone(), ReleaseWake::External, t(2)),
            vec![],
        )
        .await
        .expect("park");
    let key = fx.store.keys().run(&run.id);
    fx.guard
        .overwrite_field(&key, "token", lease.claim_token.as_str().as_bytes())
        .await
        .expect("plant token");
    let done = next(&waiting, RunStatus::Done, t(3));
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        fx.store.commit_claimed(
            &Scope::System,
            claimed_commit(
                done,
                2,
                &lease.claim_token,
                ClaimedSchedule::Release(ReleaseWake::Terminal),
                t(3),
            ),
            vec![],
        ),
    )
    .await;
}

#[tokio::test]
async fn commit_unclaimed_checks_write_nothing() {
    let (fx, _, _, r2, r3) = populated().await;
    let resume = |run: &Run, expected: u64| {
        let store = fx.store.clone();
        let proposal = unclaimed_commit(
            next(run, RunStatus::Running, t(5)),
            ReleaseWake::Immediate,
            t(5),
        );
        async move {
            store
                .commit_unclaimed(&acme(), expected, proposal, vec![])
                .await
        }
    };
    // Rust-side validation: a wake that does not fit the status.
    let bad_wake = unclaimed_commit(
        next(&r2, RunStatus::Running, t(5)),
        ReleaseWake::Terminal,
        t(5),
    );
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        fx.store
            .commit_unclaimed(&acme(), r2.checkpoint_seq, bad_wake, vec![]),
    )
    .await;
    // Unknown run and another tenant.
    let mut unknown = r2.clone();
    unknown.id = rid("nobody");
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        resume(&unknown, r2.checkpoint_seq),
    )
    .await;
    let hidden = unclaimed_commit(
        next(&r2, RunStatus::Running, t(5)),
        ReleaseWake::Immediate,
        t(5),
    );
    rejected(
        &fx,
        StoreErrorKind::NotFound,
        fx.store.commit_unclaimed(
            &scope_of(&tenant("other")),
            r2.checkpoint_seq,
            hidden,
            vec![],
        ),
    )
    .await;
    // Identity.
    let mut other_graph = next(&r2, RunStatus::Running, t(5));
    other_graph.graph_id = docket_core::model::GraphId::new("h").expect("graph id");
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        fx.store.commit_unclaimed(
            &acme(),
            r2.checkpoint_seq,
            unclaimed_commit(other_graph, ReleaseWake::Immediate, t(5)),
            vec![],
        ),
    )
    .await;
    // Seq CAS.
    let mut behind = r2.clone();
    behind.checkpoint_seq -= 1;
    behind.event_seq -= 1;
    rejected(
        &fx,
        StoreErrorKind::StaleCheckpoint,
        resume(&behind, behind.checkpoint_seq),
    )
    .await;
    // Status matrix: done cannot become running.
    rejected(
        &fx,
        StoreErrorKind::InvalidTransition,
        resume(&r3, r3.checkpoint_seq),
    )
    .await;
    // Events.
    let resumed = next(&r2, RunStatus::Running, t(5));
    rejected(
        &fx,
        StoreErrorKind::EventConflict,
        fx.store.commit_unclaimed(
            &acme(),
            r2.checkpoint_seq,
            unclaimed_commit(resumed, ReleaseWake::Immediate, t(5)),
            vec![event(&r2, 1, t(0), "changed")],
        ),
    )
    .await;
}

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
async fn release_and_refresh_checks_write_nothing() {
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
    rejected(
        &fx,
        StoreErrorKind::ClaimLost,
        fx.store.refresh_claim(&r1.id, &ClaimToken::mint(), t(5)),
    )
    .await;
    rejected(
        &fx,
        StoreErrorKind::ClaimLost,
        fx.store.refresh_claim(&r2.id, &lease.claim_token, t(5)),
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
