//! Transitions: initialize, claimed and unclaimed commits, fences, identity, schedules, counter
//! resets, event idempotency, scopes.

use docket_core::model::{ClaimToken, OwnerScope, RunStatus, Scope};
use docket_core::store::{
    ClaimedSchedule, GraphStore, ReleaseWake, RunStore, StoreErrorKind, UnclaimedCommit,
};

use crate::common::*;

#[tokio::test]
async fn initialize_stores_the_run_unclaimed_and_due_at_its_wake() {
    let fx = open().await;
    let owner = tenant("acme");
    let graph = publish(&fx.store, &owner, "g").await;
    let run = start(&fx.store, &owner, "r1", &graph, t(5)).await;
    let info = fx
        .store
        .inspect_run(&scope_of(&owner), &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, run);
    assert_eq!(info.owner, owner);
    assert_eq!(info.wake_at, Some(t(5)));
    assert_eq!(
        (info.claimed_at, info.claim_attempts, info.claim_abandons),
        (None, 0, 0)
    );
    assert_eq!(info.poison, None);
    let first = fx
        .store
        .fetch_event(&Scope::System, &run.id, 1)
        .await
        .expect("event 1");
    assert_eq!(first, event(&run, 1, t(0), "init"));
}

#[tokio::test]
async fn initialize_refuses_a_missing_graph_and_a_taken_id_in_any_scope() {
    let fx = open().await;
    let a = tenant("a");
    let b = tenant("b");
    let graph_a = publish(&fx.store, &a, "g").await;
    let run = initialized_run("r1", &graph_a, t(0));
    let missing = fx
        .store
        .initialize(&b, init_proposal(run.clone(), t(0), t(0)), vec![])
        .await
        .expect_err("graph absent in b");
    assert_eq!(missing.kind(), StoreErrorKind::NotFound);
    start(&fx.store, &a, "r1", &graph_a, t(0)).await;
    let graph_b = publish(&fx.store, &b, "g").await;
    assert_eq!(graph_a, graph_b);
    let taken = fx
        .store
        .initialize(&b, init_proposal(run, t(0), t(0)), vec![])
        .await
        .expect_err("id taken by tenant a");
    assert_eq!(taken.kind(), StoreErrorKind::Conflict);
}

#[tokio::test]
async fn a_claimed_commit_advances_the_fence_and_resets_counters() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    assert_eq!(lease.claim_attempt, 1);
    let next = commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(2),
    )
    .await;
    let info = fx
        .store
        .inspect_run(&Scope::Tenantless, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, next);
    assert_eq!(info.run.checkpoint_seq, 2);
    assert_eq!(info.claimed_at, Some(t(2)), "retain re-stamps claimed_at");
    assert_eq!(info.wake_at, None);
    assert_eq!(info.claim_attempts, 0, "a commit resets attempts");
    // Retaining keeps the token: the holder commits again.
    let third = commit_as_holder(
        &fx.store,
        &next,
        &lease.claim_token,
        RunStatus::Running,
        ClaimedSchedule::Release(ReleaseWake::At(t(50))),
        t(3),
    )
    .await;
    let info = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, third);
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(50))));
}

#[tokio::test]
async fn fences_reject_a_stale_seq_and_a_superseded_token() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let first = claim_one(&fx.store, t(1)).await;
    // The lease expires and another worker steals it.
    let second = claim_one(&fx.store, t(1).add_millis(60_001)).await;
    assert_eq!(second.claim_attempt, 2);
    let proposal = next(&run, RunStatus::Running, t(2));
    let events = vec![next_event(&proposal, t(2))];
    let stale_token = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed_commit(
                proposal.clone(),
                1,
                &first.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            events.clone(),
        )
        .await
        .expect_err("superseded token");
    assert_eq!(stale_token.kind(), StoreErrorKind::StaleCheckpoint);
    let winner = commit_as_holder(
        &fx.store,
        &run,
        &second.claim_token,
        RunStatus::Running,
        ClaimedSchedule::RetainClaim,
        t(3),
    )
    .await;
    // The same proposal again is now behind the fence.
    let stale_seq = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed_commit(
                proposal,
                1,
                &second.claim_token,
                ClaimedSchedule::RetainClaim,
                t(4),
            ),
            events,
        )
        .await
        .expect_err("stale seq");
    assert_eq!(stale_seq.kind(), StoreErrorKind::StaleCheckpoint);
    assert_eq!(
        fx.store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("run"),
        winner
    );
}

#[tokio::test]
async fn identity_is_checked_before_the_fences_and_scope_before_identity() {
    let fx = open().await;
    let owner = tenant("acme");
    let run = start_simple(&fx.store, &owner, "r1").await;
    // Identity, seq and token are all wrong: identity is reported.
    let mut moved = next(&run, RunStatus::Running, t(2));
    moved.started_at = Some(t(-1));
    moved.checkpoint_seq = 8;
    let never_issued = ClaimToken::mint();
    let identity = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed_commit(
                moved.clone(),
                7,
                &never_issued,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            vec![],
        )
        .await
        .expect_err("identity");
    assert_eq!(identity.kind(), StoreErrorKind::InvalidTransition);
    let hidden = fx
        .store
        .commit_claimed(
            &scope_of(&tenant("other")),
            claimed_commit(moved, 7, &never_issued, ClaimedSchedule::RetainClaim, t(2)),
            vec![],
        )
        .await
        .expect_err("other tenant");
    assert_eq!(hidden.kind(), StoreErrorKind::NotFound);
}

#[tokio::test]
async fn an_unclaimed_commit_fences_out_the_holder_and_clears_poison() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    let waiting = commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::External),
        t(2),
    )
    .await;
    let resumed = next(&waiting, RunStatus::Running, t(3));
    let events = vec![next_event(&resumed, t(3))];
    let committed = fx
        .store
        .commit_unclaimed(
            &Scope::Tenantless,
            waiting.checkpoint_seq,
            unclaimed_commit(resumed, ReleaseWake::Immediate, t(3)),
            events,
        )
        .await
        .expect("signal");
    let info = fx
        .store
        .inspect_run(&Scope::Tenantless, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, committed);
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(3)), None));
    // The old holder's token no longer commits.
    let late = next(&committed, RunStatus::Running, t(4));
    let err = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed_commit(
                late,
                committed.checkpoint_seq,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(4),
            ),
            vec![],
        )
        .await
        .expect_err("fenced out");
    assert_eq!(err.kind(), StoreErrorKind::StaleCheckpoint);
}

#[tokio::test]
async fn a_signal_on_a_claimed_run_releases_the_claim() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    claim_one(&fx.store, t(1)).await;
    let cancelled = next(&run, RunStatus::Cancelled, t(2));
    fx.store
        .commit_unclaimed(
            &Scope::System,
            1,
            unclaimed_commit(cancelled.clone(), ReleaseWake::Terminal, t(2)),
            vec![next_event(&cancelled, t(2))],
        )
        .await
        .expect("cancel");
    let info = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run.status, RunStatus::Cancelled);
    assert_eq!((info.claimed_at, info.wake_at), (None, None));
    let due = fx
        .store
        .claim_due(&policy(t(1_000_000), 10, 0, 5, None))
        .await
        .expect("claim");
    assert_eq!(due.outcome_count(), 0, "a terminal run is never claimed");
}

#[tokio::test]
async fn events_are_idempotent_by_content_and_conflicts_roll_everything_back() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    let proposal = next(&run, RunStatus::Running, t(2));
    // Re-sending the stored seq-1 event unchanged is accepted without a write.
    let same = event(&run, 1, t(0), "init");
    let committed = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed_commit(
                proposal.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(2),
            ),
            vec![same.clone(), next_event(&proposal, t(2)), same],
        )
        .await
        .expect("identical duplicate accepted");
    let page = fx
        .store
        .list_events(
            &Scope::System,
            &run.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("events");
    assert_eq!(page.events.len(), 2);
    assert_eq!(page.events[0], event(&run, 1, t(0), "init"));
    // A different event at a stored seq is a conflict.
    let third = next(&committed, RunStatus::Running, t(3));
    let err = fx
        .store
        .commit_claimed(
            &Scope::System,
            claimed_commit(
                third,
                2,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(3),
            ),
            vec![event(&run, 1, t(0), "different")],
        )
        .await
        .expect_err("conflict");
    assert_eq!(err.kind(), StoreErrorKind::EventConflict);
    assert_eq!(
        fx.store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("run"),
        committed
    );
}

#[tokio::test]
async fn the_status_matrix_is_enforced_after_the_fences() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    let waiting = commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Waiting,
        ClaimedSchedule::Release(ReleaseWake::External),
        t(2),
    )
    .await;
    let done = next(&waiting, RunStatus::Done, t(3));
    let err = fx
        .store
        .commit_unclaimed(
            &Scope::System,
            waiting.checkpoint_seq,
            UnclaimedCommit {
                run: done,
                checkpoint_type: docket_core::model::CheckpointType::RunCompleted,
                wake: ReleaseWake::Terminal,
                now: t(3),
            },
            vec![],
        )
        .await
        .expect_err("waiting cannot become done");
    assert_eq!(err.kind(), StoreErrorKind::InvalidTransition);
}

#[tokio::test]
async fn terminal_commits_leave_no_wake_and_no_claim() {
    let fx = open().await;
    let run = start_simple(&fx.store, &OwnerScope::Tenantless, "r1").await;
    let lease = claim_one(&fx.store, t(1)).await;
    let done = commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(2),
    )
    .await;
    let info = fx
        .store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, done);
    assert_eq!(
        (info.wake_at, info.claimed_at, info.poison),
        (None, None, None)
    );
}

#[tokio::test]
async fn ids_with_key_separators_round_trip_through_every_script() {
    let fx = open().await;
    let owner = tenant("te:n%{a}nt");
    let graph = publish(&fx.store, &owner, "gr:aph%{x}").await;
    let run = start(&fx.store, &owner, "ru:n%{1}", &graph, t(0)).await;
    let lease = claim_one(&fx.store, t(1)).await;
    assert_eq!(lease.run_id, run.id);
    assert_eq!(lease.owner, owner);
    let done = commit_as_holder(
        &fx.store,
        &run,
        &lease.claim_token,
        RunStatus::Done,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
        t(2),
    )
    .await;
    assert_eq!(
        fx.store
            .fetch_run(&scope_of(&owner), &run.id)
            .await
            .expect("run"),
        done
    );
    assert_eq!(
        fx.store
            .fetch_graph(&owner, &graph)
            .await
            .expect("graph")
            .id,
        "gr:aph%{x}"
    );
    // Pruning the run must find its index entries and graph reference through the Lua-side
    // encoding: nothing of the run may remain.
    let report = fx
        .store
        .prune(&docket_core::store::PrunePolicy {
            now: t(10),
            event_retention_ms: 1,
            run_retention_ms: 1,
            batch_size: std::num::NonZeroU32::new(10).expect("batch"),
        })
        .await
        .expect("prune");
    assert_eq!(report.runs_deleted, 1);
    let snapshot = fx.snapshot().await;
    assert!(!snapshot.contains("ru:n"), "leftovers:\n{snapshot}");
    assert!(
        snapshot.contains("refs = 0"),
        "graph refs released:\n{snapshot}"
    );
}
