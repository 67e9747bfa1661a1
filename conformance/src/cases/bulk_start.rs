//! `initialize_batch` (`docs/storage-contract.md`, “Bulk start”): every member is decided as
//! `initialize` decides it, one after another in member order; a loser (malformed, graph
//! absent, run id taken — also by an earlier member of the same batch) fails alone and
//! writes nothing; the winners are stored exactly as one-by-one `initialize` calls store them.

use docket_core::store::BatchedInit;

use crate::cases::prelude::*;

/// A member starting run `id` of `graph` with `input` at `at`, waking at once.
fn member(graph: &Published, id: &str, input: ValueMap, at: Timestamp) -> BatchedInit {
    let moment = init_moment(graph, &rid(id), input, at);
    BatchedInit {
        owner: graph.owner.clone(),
        proposal: init_proposal(&moment, at),
        events: moment.events,
    }
}

/// Runs `members` through `initialize` one by one, in order, on `store`: the reference the
/// batch must match.
async fn one_by_one(env: &Env<'_>, members: Vec<BatchedInit>) -> Vec<Result<Run, K>> {
    let mut outcomes = Vec::new();
    for m in members {
        outcomes.push(
            env.store()
                .initialize(&m.owner, m.proposal, m.events)
                .await
                .map_err(|e| e.kind()),
        );
    }
    outcomes
}

/// Everything a reader sees of the runs in `env`: the listing (system scope, newest first)
/// and, for each listed run, its document, operational projection and events. Two stores
/// are compared this way because their raw snapshots carry per-store details (a schema's
/// creation time) that differ between any two stores.
async fn readable(env: &Env<'_>) -> Vec<(Run, RunInfo, Vec<Event>)> {
    let page = ok(
        env.store().list_runs(&Scope::System, &run_query(100)).await,
        "list_runs",
    );
    let mut seen = Vec::new();
    for summary in page.runs {
        seen.push((
            env.fetch(&summary.id).await,
            env.inspect(&summary.id).await,
            env.all_events(&summary.id).await,
        ));
    }
    seen
}

/// A batch of winners stores each run exactly as one-by-one `initialize` calls do: the same
/// answers in member order, and the same runs, projections and events on reading back.
pub async fn a_bulk_start_stores_every_winner_as_initialize_would(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let members: Vec<BatchedInit> = (1..=4)
        .map(|i| member(&graph, &format!("bulk{i}"), map(json!({"amount": i})), t(i)))
        .collect();
    let outcomes = env.store().initialize_batch(members.clone()).await;
    assert_eq!(outcomes.len(), 4);
    for (m, outcome) in members.iter().zip(&outcomes) {
        let stored = ok(outcome.clone(), "a winning member");
        assert_eq!(stored, m.proposal.run, "outcomes follow member order");
        assert_eq!(env.fetch(&stored.id).await, m.proposal.run);
        assert_eq!(env.all_events(&stored.id).await, m.events);
        let info = env.inspect(&stored.id).await;
        assert_eq!(info.wake_at, Some(m.proposal.wake_at));
        assert_eq!(info.claimed_at, None);
        assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    }
    let reference = env.fresh().await;
    reference.publish_tiny(&OwnerScope::Tenantless).await;
    let answers = one_by_one(&reference, members).await;
    assert_eq!(
        answers,
        outcomes
            .into_iter()
            .map(|o| o.map_err(|e| e.kind()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        readable(env).await,
        readable(&reference).await,
        "a bulk start stores what one-by-one starts store"
    );
}

/// Losers — a taken run id, an unknown graph, an id repeated inside the batch (the second of
/// two equal ids is a `Conflict`), a malformed proposal — fail alone with the error a single
/// `initialize` would get, in member order; every run reads back exactly as in a store where
/// only the winners were started one by one, so no loser wrote anything. (That a losing
/// batch leaves the raw store byte-identical is a case of its own.)
pub async fn losers_in_a_bulk_start_fail_alone_and_write_nothing(env: &Env<'_>) {
    losers_fail_alone(env, true).await;
}

/// The same losers but the repeated id, so every member names a run id of its own: a store
/// may send such a batch differently (in one statement rather than member by member), and
/// its losers must still fail alone, in member order, with nothing of theirs written.
pub async fn losers_with_distinct_run_ids_fail_alone_in_a_bulk_start(env: &Env<'_>) {
    losers_fail_alone(env, false).await;
}

/// The losers cases; `repeat_an_id` adds a member repeating the first winner's run id.
async fn losers_fail_alone(env: &Env<'_>, repeat_an_id: bool) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "taken", t(0)).await;
    let taken_before = (
        env.fetch(&rid("taken")).await,
        env.inspect(&rid("taken")).await,
        env.all_events(&rid("taken")).await,
    );
    let unpublished = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    let mut malformed = member(&graph, "malformed", ValueMap::new(), t(5));
    malformed.proposal.checkpoint_type = CheckpointType::RunCompleted;
    let mut members = vec![
        (member(&graph, "w1", map(json!({"amount": 1})), t(5)), None),
        (
            member(&graph, "taken", map(json!({"amount": 2})), t(5)),
            Some(K::Conflict),
        ),
        (
            member(&unpublished, "lost", ValueMap::new(), t(5)),
            Some(K::NotFound),
        ),
        (member(&graph, "w2", map(json!({"amount": 3})), t(5)), None),
    ];
    if repeat_an_id {
        members.push((
            member(&graph, "w1", map(json!({"amount": 4})), t(5)),
            Some(K::Conflict),
        ));
    }
    members.push((malformed, Some(K::InvalidTransition)));
    members.push((member(&graph, "w3", map(json!({"amount": 5})), t(5)), None));
    let (members, expected): (Vec<BatchedInit>, Vec<Option<K>>) = members.into_iter().unzip();
    let outcomes = env.store().initialize_batch(members.clone()).await;
    let kinds: Vec<Option<K>> = outcomes
        .iter()
        .map(|o| o.as_ref().err().map(StoreError::kind))
        .collect();
    assert_eq!(kinds, expected, "each member's own answer, in order");
    for (m, outcome) in members.iter().zip(&outcomes) {
        if let Ok(run) = outcome {
            assert_eq!(
                run, &m.proposal.run,
                "a winner answers its own run, in order"
            );
        }
    }
    // The taken run and the first `w1` are untouched by the members that repeated their ids.
    let taken_after = (
        env.fetch(&rid("taken")).await,
        env.inspect(&rid("taken")).await,
        env.all_events(&rid("taken")).await,
    );
    assert_eq!(taken_after, taken_before, "the taken run is untouched");
    assert_eq!(env.fetch(&rid("w1")).await, members[0].proposal.run);
    for absent in ["lost", "malformed"] {
        let error = env
            .store()
            .fetch_run(&Scope::System, &rid(absent))
            .await
            .expect_err("a refused member stores no run");
        assert_eq!(error.kind(), K::NotFound, "{absent}");
    }
    // The same store reached with only the winners, one by one.
    let reference = env.fresh().await;
    let graph_again = reference.publish_tiny(&OwnerScope::Tenantless).await;
    reference.start(&graph_again, "taken", t(0)).await;
    let winners: Vec<BatchedInit> = members
        .into_iter()
        .zip(&kinds)
        .filter(|(_, kind)| kind.is_none())
        .map(|(m, _)| m)
        .collect();
    one_by_one(&reference, winners).await;
    assert_eq!(
        readable(env).await,
        readable(&reference).await,
        "the batch stored exactly its winners"
    );
}

/// A batch whose every member loses changes nothing at all.
pub async fn a_bulk_start_of_losers_only_changes_nothing(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "taken", t(0)).await;
    let unpublished = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    let before = env.snapshot().await;
    let outcomes = env
        .store()
        .initialize_batch(vec![
            member(&graph, "taken", ValueMap::new(), t(5)),
            member(&unpublished, "lost", ValueMap::new(), t(5)),
        ])
        .await;
    let kinds: Vec<Option<K>> = outcomes
        .iter()
        .map(|o| o.as_ref().err().map(StoreError::kind))
        .collect();
    assert_eq!(kinds, vec![Some(K::Conflict), Some(K::NotFound)]);
    crate::env::assert_same_bytes(&before, &env.snapshot().await, "a batch of losers");
}

/// An empty batch answers nothing and changes nothing.
pub async fn an_empty_bulk_start_changes_nothing(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    let before = env.snapshot().await;
    let outcomes = env.store().initialize_batch(Vec::new()).await;
    assert!(outcomes.is_empty(), "{outcomes:?}");
    crate::env::assert_same_bytes(&before, &env.snapshot().await, "an empty bulk start");
}
