//! Folding chained claimed commits (`docs/storage-contract.md`, “Folded chains”):
//! `Commit::then` for a pair and `rules::chain::fold_chains` for a batch fold only what lands
//! exactly when the members would, one after the other.

mod common;

use common::*;
use docket_core::model::{ClaimToken, Run, RunStatus, Scope};
use docket_core::store::rules::chain::fold_chains;
use docket_core::store::rules::transition::Commit;
use docket_core::store::{ClaimedSchedule, ReleaseWake};

/// A started run (seq 1) of the tiny graph.
async fn started(id: &str) -> Run {
    let (store, graph) = store_with_graph().await;
    start_run(
        &store,
        &docket_core::model::OwnerScope::Tenantless,
        &graph,
        id,
        t(1),
    )
    .await
}

/// The kernel's claimed commit of `prev` → `status` under `token` with `schedule`.
fn commit(prev: &Run, status: RunStatus, token: &ClaimToken, schedule: ClaimedSchedule) -> Commit {
    let (proposal, events) = claimed(prev, status, token, schedule, t(5));
    Commit::claimed(proposal, events).expect("a well-formed commit")
}

/// A barrier that keeps the claim, and the completion built on it.
fn barrier_and_completion(run: &Run, token: &ClaimToken) -> (Commit, Commit) {
    let barrier = commit(run, RunStatus::Running, token, ClaimedSchedule::RetainClaim);
    let completion = commit(
        barrier.run(),
        RunStatus::Done,
        token,
        ClaimedSchedule::Release(ReleaseWake::Terminal),
    );
    (barrier, completion)
}

#[tokio::test]
async fn a_barrier_and_its_completion_fold_into_the_completion_under_the_barriers_fences() {
    let run = started("r1").await;
    let token = ClaimToken::mint();
    let (barrier, completion) = barrier_and_completion(&run, &token);
    let folded = barrier
        .clone()
        .then(completion.clone())
        .expect("a foldable pair");
    assert_eq!(folded.run(), completion.run(), "the completion's document");
    assert_eq!(
        folded.expected_seq(),
        barrier.expected_seq(),
        "the barrier's seq fence"
    );
    assert_eq!(
        folded.fence(),
        completion.fence(),
        "the token, and the completion's schedule"
    );
    assert_eq!(folded.checkpoint_type(), completion.checkpoint_type());
    let events: Vec<_> = barrier
        .events()
        .iter()
        .chain(completion.events())
        .cloned()
        .collect();
    assert_eq!(
        folded.events(),
        &events[..],
        "both moments' events, in order"
    );
    assert_eq!(
        folded.committed_state(Some(t(2))),
        completion.committed_state(Some(t(2))),
        "the operational state the completion leaves"
    );
    assert_eq!(folded.keeps_admission(), completion.keeps_admission());
    assert_eq!(
        Commit::chain_cloned(&[&barrier, &completion]),
        Some(folded),
        "folding borrowed commits gives the same commit"
    );
}

#[tokio::test]
async fn then_gives_back_what_it_cannot_prove_equivalent() {
    let run = started("r1").await;
    let other_run = started("r2").await;
    let token = ClaimToken::mint();
    let (barrier, completion) = barrier_and_completion(&run, &token);
    let release = ClaimedSchedule::Release(ReleaseWake::Terminal);
    let cases: Vec<(&str, Commit, Commit)> = vec![
        (
            "the first releases its claim",
            commit(
                &run,
                RunStatus::Running,
                &token,
                ClaimedSchedule::Release(ReleaseWake::Immediate),
            ),
            completion.clone(),
        ),
        (
            "another token",
            barrier.clone(),
            commit(barrier.run(), RunStatus::Done, &ClaimToken::mint(), release),
        ),
        (
            "not built on the first's checkpoint",
            barrier.clone(),
            commit(&run, RunStatus::Done, &token, release),
        ),
        (
            "another run",
            barrier.clone(),
            commit(&other_run, RunStatus::Done, &token, release),
        ),
        ("in the wrong order", completion.clone(), barrier.clone()),
        ("at another time", barrier.clone(), {
            let (mut proposal, events) =
                claimed(barrier.run(), RunStatus::Done, &token, release, t(5));
            proposal.now = t(6);
            Commit::claimed(proposal, events).expect("a well-formed commit")
        }),
    ];
    for (what, first, second) in cases {
        assert_eq!(
            Commit::chain_cloned(&[&first, &second]),
            None,
            "{what}: no fold of borrowed commits either"
        );
        let (back_first, back_second) = *first.clone().then(second.clone()).expect_err(what);
        assert_eq!(
            (back_first, back_second),
            (first, second),
            "{what}: given back unchanged"
        );
    }
}

#[tokio::test]
async fn a_batch_folds_each_runs_chain_and_keeps_the_other_members() {
    let a = started("a").await;
    let b = started("b").await;
    let token = ClaimToken::mint();
    let (a_barrier, a_done) = barrier_and_completion(&a, &token);
    let b_barrier = commit(&b, RunStatus::Running, &token, ClaimedSchedule::RetainClaim);
    let scope = Scope::System;
    let batch = [&a_barrier, &b_barrier, &a_done];
    let folded =
        fold_chains(batch.iter().enumerate().map(|(i, c)| (i, &scope, *c))).expect("run a folds");
    assert_eq!(folded.len(), 2, "one commit per run");
    assert_eq!(folded[0].members, vec![0, 2]);
    assert!(folded[0].is_folded());
    assert_eq!(
        Some(&folded[0].commit),
        a_barrier.clone().then(a_done.clone()).ok().as_ref()
    );
    assert_eq!(folded[1].members, vec![1]);
    assert!(!folded[1].is_folded());
    assert_eq!(&folded[1].commit, &b_barrier);
}

#[tokio::test]
async fn a_batch_that_cannot_fold_is_left_to_be_written_member_after_member() {
    let a = started("a").await;
    let b = started("b").await;
    let token = ClaimToken::mint();
    let (a_barrier, a_done) = barrier_and_completion(&a, &token);
    let b_barrier = commit(&b, RunStatus::Running, &token, ClaimedSchedule::RetainClaim);
    let system = Scope::System;
    let tenant = tenant_scope("t");
    // Distinct runs: nothing to fold.
    let distinct = [(0, &system, &a_barrier), (1, &system, &b_barrier)];
    assert_eq!(fold_chains(distinct), None);
    // A run named twice by members that do not chain (a replay of the same base).
    let replay = [(0, &system, &a_barrier), (1, &system, &a_barrier)];
    assert_eq!(fold_chains(replay), None);
    // A chain whose members name different scopes.
    let scopes = [(0, &system, &a_barrier), (1, &tenant, &a_done)];
    assert_eq!(fold_chains(scopes), None);
}
