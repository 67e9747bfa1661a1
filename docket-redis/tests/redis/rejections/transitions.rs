//! Transition scripts: initialize, commit_claimed, commit_unclaimed.

use docket_core::model::{CheckpointType, ClaimToken, Event, OwnerScope, Run, RunStatus, Scope};
use docket_core::store::{ClaimedSchedule, ReleaseWake, RunStore, StoreErrorKind};

use super::{acme, populated, rejected};
use crate::common::*;

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
