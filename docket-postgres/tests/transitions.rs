//! Transitions: initialize, claimed and unclaimed commits — validation, fences, schedules,
//! event idempotency. Every rejected write is followed by a raw snapshot comparison.

mod common;

use common::*;
use docket_core::model::{
    CheckpointType, ClaimToken, GraphHash, OwnerScope, RunStatus, Scope, Timestamp,
};
use docket_core::store::rules::ops;
use docket_core::store::{
    ClaimedSchedule, GraphStore, InitProposal, ReleaseWake, RunStore, StoreError, StoreErrorKind,
};
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
        ops::initial_state(t(5))
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

#[tokio::test]
async fn claimed_commit_fences_reject_without_writing_in_the_rules_order() {
    let (store, _guard) = open().await;
    let owner = tenant("a");
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let token = lease.claim_token.clone();
    let scope: Scope = (&owner).into();
    let retain = ClaimedSchedule::RetainClaim;
    let good = next(&run, t(2));
    let before = snapshot(&store).await;

    let reject = |scope: Scope, commit, expected| {
        let store = store.clone();
        let before = before.clone();
        async move {
            let result = store.commit_claimed(&scope, commit, vec![]).await;
            assert_eq!(kind(result), expected);
            assert_eq!(
                snapshot(&store).await,
                before,
                "unchanged after {expected:?}"
            );
        }
    };
    reject(
        scope.clone(),
        claimed(good.clone(), 1, &ClaimToken::mint(), retain, t(2)),
        StoreErrorKind::StaleCheckpoint,
    )
    .await;
    let not_uuid = ClaimToken::new("not-a-uuid").expect("token");
    reject(
        scope.clone(),
        claimed(good.clone(), 1, &not_uuid, retain, t(2)),
        StoreErrorKind::StaleCheckpoint,
    )
    .await;
    let upper = ClaimToken::new(token.as_str().to_uppercase()).expect("token");
    reject(
        scope.clone(),
        claimed(good.clone(), 1, &upper, retain, t(2)),
        StoreErrorKind::StaleCheckpoint,
    )
    .await;
    // Seq skip is malformed (validated before lookup).
    let mut skip = next(&run, t(2));
    skip.checkpoint_seq = 4;
    reject(
        scope.clone(),
        claimed(skip, 1, &token, retain, t(2)),
        StoreErrorKind::InvalidTransition,
    )
    .await;
    // Identity beats the fence: a changed started_at is invalid even with a wrong token.
    let mut moved = good.clone();
    moved.started_at = Some(t(-1));
    reject(
        scope.clone(),
        claimed(moved, 1, &ClaimToken::mint(), retain, t(2)),
        StoreErrorKind::InvalidTransition,
    )
    .await;
    let mut rebound = good.clone();
    rebound.graph_hash = GraphHash::new("f".repeat(64)).expect("hash");
    reject(
        scope.clone(),
        claimed(rebound, 1, &token, retain, t(2)),
        StoreErrorKind::InvalidTransition,
    )
    .await;
    // Scope beats identity: another tenant sees nothing.
    let mut foreign = good.clone();
    foreign.graph_hash = GraphHash::new("f".repeat(64)).expect("hash");
    reject(
        tenant("b").into(),
        claimed(foreign, 1, &token, retain, t(2)),
        StoreErrorKind::NotFound,
    )
    .await;
    reject(
        Scope::Tenantless,
        claimed(good.clone(), 1, &token, retain, t(2)),
        StoreErrorKind::NotFound,
    )
    .await;
    let mut unknown = good.clone();
    unknown.id = rid("nope");
    reject(
        SYSTEM,
        claimed(unknown, 1, &token, retain, t(2)),
        StoreErrorKind::NotFound,
    )
    .await;

    store
        .commit_claimed(
            &scope,
            claimed(good.clone(), 1, &token, retain, t(2)),
            vec![event(&good, 2, t(2), "ok")],
        )
        .await
        .expect("the current holder commits");
    let after = snapshot(&store).await;
    // Replaying the same proposal is a stale fence now.
    let result = store
        .commit_claimed(
            &scope,
            claimed(good.clone(), 1, &token, retain, t(3)),
            vec![event(&good, 2, t(2), "ok")],
        )
        .await;
    assert_eq!(kind(result), StoreErrorKind::StaleCheckpoint);
    assert_eq!(snapshot(&store).await, after);
    assert_eq!(
        store.fetch_event(&scope, &run.id, 2).await.expect("event"),
        event(&good, 2, t(2), "ok")
    );
}

/// Every schedule's effect on the row equals `rules::ops::apply_commit`.
#[tokio::test]
async fn claimed_schedules_have_the_effects_of_the_shared_rules() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let schedules = [
        (ClaimedSchedule::RetainClaim, RunStatus::Running),
        (
            ClaimedSchedule::Release(ReleaseWake::Immediate),
            RunStatus::Running,
        ),
        (
            ClaimedSchedule::Release(ReleaseWake::At(t(500))),
            RunStatus::Running,
        ),
        (
            ClaimedSchedule::Release(ReleaseWake::External),
            RunStatus::Waiting,
        ),
        (
            ClaimedSchedule::Release(ReleaseWake::Terminal),
            RunStatus::Done,
        ),
    ];
    for (i, (schedule, status)) in schedules.into_iter().enumerate() {
        let id = format!("r{i}");
        let run = start(&store, &owner, &id, t(0)).await;
        let lease = store
            .claim_due(&policy(t(1), 10))
            .await
            .expect("claim")
            .leases
            .into_iter()
            .find(|l| l.run_id == run.id)
            .expect("lease");
        // Pretend earlier trouble, to see the reset.
        let mut before = testing::operational_state(&store, &run.id)
            .await
            .expect("ops");
        before.claim_abandons = 3;
        testing::write_operational_state(&store, &run.id, &before)
            .await
            .expect("write");
        let mut proposed = match status {
            RunStatus::Done => done(&run, t(2)),
            _ => next(&run, t(2)),
        };
        proposed.status = status;
        let mut commit = claimed(proposed.clone(), 1, &lease.claim_token, schedule, t(3));
        commit.checkpoint_type = CheckpointType::RetryScheduled;
        store
            .commit_claimed(&SYSTEM, commit, vec![])
            .await
            .expect("commit");
        let mut expected = before.clone();
        ops::apply_commit(
            &mut expected,
            CheckpointType::RetryScheduled,
            schedule,
            t(3),
        );
        assert_eq!(
            testing::operational_state(&store, &run.id)
                .await
                .expect("ops"),
            expected,
            "{schedule:?}"
        );
        assert_eq!(
            store.fetch_run(&SYSTEM, &run.id).await.expect("fetch"),
            proposed
        );
        let refreshed = store.refresh_claim(&run.id, &lease.claim_token, t(4)).await;
        assert_eq!(refreshed.is_ok(), schedule == ClaimedSchedule::RetainClaim);
    }
}

#[tokio::test]
async fn a_claimed_commit_accepts_identical_stored_events_and_rejects_different_ones_atomically() {
    let (store, _guard) = open().await;
    let owner = OwnerScope::Tenantless;
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let retain = ClaimedSchedule::RetainClaim;
    let second = next(&run, t(2));
    let stored_init = event(&run, 1, t(0), "init");
    let before = snapshot(&store).await;
    // A contradiction at seq 1 plus a fresh seq 2: nothing is written, not even seq 2.
    let result = store
        .commit_claimed(
            &SYSTEM,
            claimed(second.clone(), 1, &lease.claim_token, retain, t(2)),
            vec![
                event(&run, 1, t(0), "different"),
                event(&second, 2, t(2), "fresh"),
            ],
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::EventConflict { seq: 1 })),
        "{result:?}"
    );
    assert_eq!(snapshot(&store).await, before);
    // The identical stored event is accepted alongside the new one.
    store
        .commit_claimed(
            &SYSTEM,
            claimed(second.clone(), 1, &lease.claim_token, retain, t(2)),
            vec![stored_init.clone(), event(&second, 2, t(2), "fresh")],
        )
        .await
        .expect("identical replay is accepted");
    let page = store
        .list_events(
            &SYSTEM,
            &run.id,
            &docket_core::model::EventQuery {
                after_seq: 0,
                limit: 10,
            },
        )
        .await
        .expect("events");
    assert_eq!(
        page.events,
        vec![stored_init, event(&second, 2, t(2), "fresh")]
    );
}

#[tokio::test]
async fn an_unclaimed_commit_is_a_seq_cas_that_revokes_the_claim() {
    let (store, _guard) = open().await;
    let owner = tenant("a");
    let scope: Scope = (&owner).into();
    let run = start(&store, &owner, "r1", t(0)).await;
    let lease = claim_one(&store, t(1)).await;
    let signal = next(&run, t(2));
    let wake = ReleaseWake::Immediate;

    let before = snapshot(&store).await;
    for (scope, expected_seq, proposal, events, expected) in [
        (
            tenant("b").into(),
            1,
            signal.clone(),
            vec![],
            StoreErrorKind::NotFound,
        ),
        (
            scope.clone(),
            0,
            signal.clone(),
            vec![],
            StoreErrorKind::InvalidTransition,
        ),
        (
            scope.clone(),
            0,
            run.clone(),
            vec![],
            StoreErrorKind::StaleCheckpoint,
        ),
        (
            scope.clone(),
            1,
            {
                let mut r = signal.clone();
                r.graph_hash = GraphHash::new("e".repeat(64)).expect("hash");
                r
            },
            vec![],
            StoreErrorKind::InvalidTransition,
        ),
        (
            scope.clone(),
            1,
            signal.clone(),
            vec![
                event(&run, 1, t(0), "contradiction"),
                event(&signal, 2, t(2), "s"),
            ],
            StoreErrorKind::EventConflict,
        ),
    ] {
        let result = store
            .commit_unclaimed(
                &scope,
                expected_seq,
                unclaimed(proposal, wake, t(2)),
                events,
            )
            .await;
        assert_eq!(kind(result), expected);
        assert_eq!(snapshot(&store).await, before);
    }

    let mut ops_before = testing::operational_state(&store, &run.id)
        .await
        .expect("ops");
    store
        .commit_unclaimed(
            &scope,
            1,
            unclaimed(signal.clone(), wake, t(2)),
            vec![event(&signal, 2, t(2), "s")],
        )
        .await
        .expect("signal commits");
    ops::apply_unclaimed_commit(
        &mut ops_before,
        CheckpointType::InterruptResolved,
        wake,
        t(2),
    );
    assert_eq!(
        testing::operational_state(&store, &run.id)
            .await
            .expect("ops"),
        ops_before
    );
    assert!(matches!(
        store.refresh_claim(&run.id, &lease.claim_token, t(3)).await,
        Err(StoreError::ClaimLost)
    ));
    let after = snapshot(&store).await;
    let replay = store
        .commit_unclaimed(&scope, 1, unclaimed(signal.clone(), wake, t(3)), vec![])
        .await;
    assert_eq!(kind(replay), StoreErrorKind::StaleCheckpoint);
    // The old holder's claimed commit is fenced out too.
    let stale = store
        .commit_claimed(
            &scope,
            claimed(
                signal.clone(),
                1,
                &lease.claim_token,
                ClaimedSchedule::RetainClaim,
                t(3),
            ),
            vec![],
        )
        .await;
    assert_eq!(kind(stale), StoreErrorKind::StaleCheckpoint);
    assert_eq!(snapshot(&store).await, after);

    // Terminal runs absorb: done cannot become running again.
    let finished = done(&signal, t(4));
    store
        .commit_unclaimed(
            &scope,
            2,
            unclaimed(finished.clone(), ReleaseWake::Terminal, t(4)),
            vec![],
        )
        .await
        .expect("finish");
    let after = snapshot(&store).await;
    let revive = store
        .commit_unclaimed(
            &scope,
            3,
            unclaimed(next(&signal, t(5)).clone_with_seq(4), wake, t(5)),
            vec![],
        )
        .await;
    assert_eq!(kind(revive), StoreErrorKind::InvalidTransition);
    assert_eq!(snapshot(&store).await, after);
    let _: Timestamp = t(0);
}

trait WithSeq {
    fn clone_with_seq(&self, seq: u64) -> Self;
}

impl WithSeq for docket_core::model::Run {
    fn clone_with_seq(&self, seq: u64) -> Self {
        let mut run = self.clone();
        run.checkpoint_seq = seq;
        run
    }
}

#[tokio::test]
async fn graph_versions_are_content_addressed_and_owner_scoped() {
    let (store, _guard) = open().await;
    let a = tenant("a");
    let doc = graph_doc("g1", 0);
    let graph = graph_ref_of(&doc);
    store
        .save_graph(&a, &graph, &doc, t(0))
        .await
        .expect("save");
    store
        .save_graph(&a, &graph, &doc, t(9))
        .await
        .expect("idempotent");
    let versions = store
        .list_graph_versions(
            &a,
            &graph.graph_id,
            &docket_core::model::GraphVersionQuery {
                limit: 10,
                before: None,
            },
        )
        .await
        .expect("list");
    assert_eq!(versions.versions.len(), 1);
    assert_eq!(
        versions.versions[0].published_at,
        t(0),
        "re-saving keeps the publication time"
    );
    assert_eq!(store.fetch_graph(&a, &graph).await.expect("fetch"), doc);
    assert_eq!(
        kind(store.fetch_graph(&tenant("b"), &graph).await),
        StoreErrorKind::NotFound
    );
    let mut wrong = graph.clone();
    wrong.graph_hash = GraphHash::new("a".repeat(64)).expect("hash");
    assert_eq!(
        kind(store.save_graph(&a, &wrong, &doc, t(1)).await),
        StoreErrorKind::InvalidGraphHash
    );
    let other = graph_doc("g2", 0);
    assert_eq!(
        kind(store.save_graph(&a, &graph, &other, t(1)).await),
        StoreErrorKind::InvalidGraphDocument
    );
    // Paging newest first by (published_at, hash), cursor preserved on the empty page.
    for rev in 1..=3 {
        let d = graph_doc("g1", rev);
        store
            .save_graph(
                &a,
                &graph_ref_of(&d),
                &d,
                t(i64::try_from(rev).expect("rev")),
            )
            .await
            .expect("save rev");
    }
    let latest = store
        .fetch_latest_graph_ref(&a, &graph.graph_id)
        .await
        .expect("latest");
    assert_eq!(latest, graph_ref_of(&graph_doc("g1", 3)));
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = store
            .list_graph_versions(
                &a,
                &graph.graph_id,
                &docket_core::model::GraphVersionQuery {
                    limit: 1,
                    before: before.clone(),
                },
            )
            .await
            .expect("page");
        if page.versions.is_empty() {
            assert_eq!(page.next_before, before);
            assert!(!page.has_more);
            break;
        }
        seen.extend(page.versions.iter().map(|v| v.published_at));
        before = page.next_before;
    }
    assert_eq!(seen, vec![t(3), t(2), t(1), t(0)]);
    // Corrupt bytes are loud, never absent.
    testing::corrupt_graph(&store, &a, &graph)
        .await
        .expect("corrupt");
    assert_eq!(
        kind(store.fetch_graph(&a, &graph).await),
        StoreErrorKind::CorruptGraph
    );
    assert_eq!(
        kind(store.save_graph(&a, &graph, &doc, t(5)).await),
        StoreErrorKind::GraphContentConflict
    );
}
