//! `commit_claimed_batch` (`docs/storage-contract.md`, “Batched commits”): every member keeps
//! its own double fence and gets its own outcome; a loser fails alone and writes nothing;
//! members of one run chain like consecutive calls. The model family compares random batches
//! with one-by-one commits on the memory store.

use docket_core::store::BatchedCommit;

use crate::cases::prelude::*;

/// Publishes the tiny graph, starts `ids` at `t(0)` and claims them all at `t(10)`.
async fn claimed_runs(env: &Env<'_>, ids: &[&str]) -> Vec<(Run, ClaimLease)> {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let mut runs = Vec::new();
    for id in ids {
        runs.push(env.start(&graph, id, t(0)).await);
    }
    let limit = u32::try_from(ids.len()).expect("a few runs");
    let batch = env.claim_all(&claim_policy(t(10), limit)).await;
    assert_eq!(batch.leases.len(), ids.len(), "every run is claimed");
    runs.into_iter()
        .map(|run| {
            let lease = batch
                .leases
                .iter()
                .find(|l| l.run_id == run.id)
                .cloned()
                .expect("a lease for every run");
            (run, lease)
        })
        .collect()
}

/// A member moving `run` to running at `now` under `token`, building on `run`'s seq.
fn member(run: &Run, token: &ClaimToken, now: Timestamp) -> BatchedCommit {
    let moment = moment_to(run, RunStatus::Running, now);
    BatchedCommit {
        scope: Scope::System,
        proposal: claimed_commit(&moment, token, now),
        events: moment.events,
    }
}

/// Everything a reader can see of one run: document, operational projection, events.
async fn observed(env: &Env<'_>, id: &RunId) -> (Run, RunInfo, Vec<Event>) {
    (
        env.fetch(id).await,
        env.inspect(id).await,
        env.all_events(id).await,
    )
}

/// A batch of winners commits each one, each under its own claim, in member order.
pub async fn a_batch_commits_every_winner_under_its_own_fences(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["b1", "b2", "b3"]).await;
    let members = claimed
        .iter()
        .map(|(run, lease)| member(run, &lease.claim_token, t(20)))
        .collect();
    let outcomes = env.store().commit_claimed_batch(members).await;
    assert_eq!(outcomes.len(), 3);
    for ((run, _), outcome) in claimed.iter().zip(outcomes) {
        let committed = ok(outcome, "a winning member");
        assert_eq!(committed.id, run.id, "outcomes follow member order");
        assert_eq!(committed.checkpoint_seq, run.checkpoint_seq + 1);
        let info = env.inspect(&run.id).await;
        assert_eq!(info.run, committed);
        assert_eq!(
            (info.claimed_at, info.wake_at),
            (Some(t(20)), None),
            "the claim is kept and re-stamped"
        );
    }
}

/// Losers — a stale seq, a foreign token, a run outside the scope — fail alone with the error
/// a single commit would get, write nothing, and leave the winners between them committed.
pub async fn losers_in_a_batch_fail_alone_and_write_nothing(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["w1", "stale", "foreign", "hidden", "w2"]).await;
    // `stale` moves on before the batch, so its member presents a base it has left.
    let (stale, stale_lease) = &claimed[1];
    env.commit_to(stale_lease, stale, RunStatus::Running, t(15))
        .await;
    let before: Vec<_> = {
        let mut seen = Vec::new();
        for (run, _) in &claimed {
            seen.push(observed(env, &run.id).await);
        }
        seen
    };
    let mut members: Vec<BatchedCommit> = claimed
        .iter()
        .map(|(run, lease)| member(run, &lease.claim_token, t(20)))
        .collect();
    members[2].proposal.claim_token = ClaimToken::mint();
    members[3].scope = tenant_scope("a");
    let outcomes = env.store().commit_claimed_batch(members).await;
    let kinds: Vec<Option<K>> = outcomes
        .iter()
        .map(|o| o.as_ref().err().map(StoreError::kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            None,
            Some(K::StaleCheckpoint),
            Some(K::StaleCheckpoint),
            Some(K::NotFound),
            None
        ]
    );
    for (i, (run, _)) in claimed.iter().enumerate() {
        let now = observed(env, &run.id).await;
        if kinds[i].is_some() {
            assert_eq!(now, before[i], "loser {} is untouched", run.id);
        } else {
            assert_eq!(now.0.checkpoint_seq, run.checkpoint_seq + 1, "{}", run.id);
            assert_eq!(now.1.claimed_at, Some(t(20)), "{}", run.id);
        }
    }
}

/// A member contradicting one of its run's stored events is an `EventConflict` naming that
/// seq and writes nothing, not even its fresh events; the members around it land as if it
/// had not been sent.
pub async fn a_member_contradicting_a_stored_event_fails_alone(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["before", "conflict", "after"]).await;
    let (run, _) = &claimed[1];
    let before = observed(env, &run.id).await;
    let mut members: Vec<BatchedCommit> = claimed
        .iter()
        .map(|(run, lease)| member(run, &lease.claim_token, t(20)))
        .collect();
    let mut contradiction = before.2[0].clone();
    contradiction.payload.insert("changed".into(), json!(true));
    let contradicted = contradiction.seq;
    members[1].events.insert(0, contradiction);
    let outcomes = env.store().commit_claimed_batch(members).await;
    assert!(
        matches!(&outcomes[1], Err(StoreError::EventConflict { seq }) if *seq == contradicted),
        "{:?}",
        outcomes[1]
    );
    assert_eq!(
        observed(env, &run.id).await,
        before,
        "the conflicting member wrote nothing"
    );
    for i in [0, 2] {
        let (run, _) = &claimed[i];
        let landed = outcomes[i].as_ref().expect("a neighbour lands");
        assert_eq!(landed.checkpoint_seq, run.checkpoint_seq + 1);
        assert_eq!(&env.fetch(&run.id).await, landed, "{}", run.id);
    }
}

/// A member repeating its run's stored history beside its new events lands as a single
/// commit carrying them would: the stored events are kept as they are, the new ones are
/// appended, and its neighbours land too.
pub async fn a_member_repeating_stored_events_lands(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["fresh", "repeats"]).await;
    let (run, _) = &claimed[1];
    let stored = env.all_events(&run.id).await;
    assert!(!stored.is_empty(), "a started run has its history");
    let mut members: Vec<BatchedCommit> = claimed
        .iter()
        .map(|(run, lease)| member(run, &lease.claim_token, t(20)))
        .collect();
    let new_events = members[1].events.clone();
    members[1].events = stored.iter().cloned().chain(new_events.clone()).collect();
    let outcomes = env.store().commit_claimed_batch(members).await;
    for ((run, _), outcome) in claimed.iter().zip(&outcomes) {
        let landed = outcome.as_ref().expect("every member lands");
        assert_eq!(landed.checkpoint_seq, run.checkpoint_seq + 1, "{}", run.id);
        assert_eq!(&env.fetch(&run.id).await, landed, "{}", run.id);
    }
    let expected: Vec<Event> = stored.into_iter().chain(new_events).collect();
    assert_eq!(env.all_events(&run.id).await, expected);
}

/// Two members of one run chain like two calls: the second builds on the first's commit,
/// and a third presenting the first's base again has lost the fence.
pub async fn members_of_one_run_chain_like_consecutive_calls(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["chain"]).await;
    let (run, lease) = &claimed[0];
    let first = member(run, &lease.claim_token, t(20));
    let second = member(&first.proposal.run, &lease.claim_token, t(21));
    let replay = member(run, &lease.claim_token, t(22));
    let outcomes = env
        .store()
        .commit_claimed_batch(vec![first, second, replay])
        .await;
    let seqs: Vec<Result<u64, K>> = outcomes
        .iter()
        .map(|o| {
            o.as_ref()
                .map(|r| r.checkpoint_seq)
                .map_err(StoreError::kind)
        })
        .collect();
    assert_eq!(
        seqs,
        vec![
            Ok(run.checkpoint_seq + 1),
            Ok(run.checkpoint_seq + 2),
            Err(K::StaleCheckpoint)
        ]
    );
    assert_eq!(
        env.inspect(&run.id).await.run.checkpoint_seq,
        run.checkpoint_seq + 2
    );
}

/// A barrier and the completion built on it, in one batch (a worker's chained completion;
/// `docs/storage-contract.md`, “Folded chains”): both land, and the store holds exactly what
/// two consecutive calls leave — the completion's document, no claim, both moments' events.
pub async fn a_barrier_and_its_completion_in_one_batch_land_as_two_calls_would(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["folded", "alone"]).await;
    let [(run, lease), (other, other_lease)] = &claimed[..] else {
        unreachable!("two runs were claimed");
    };
    let barrier = member(run, &lease.claim_token, t(20));
    let done = moment_to(&barrier.proposal.run, RunStatus::Done, t(20));
    let completion = BatchedCommit {
        scope: Scope::System,
        proposal: claimed_commit(&done, &lease.claim_token, t(20)),
        events: done.events.clone(),
    };
    let mut events = env.all_events(&run.id).await;
    events.extend(barrier.events.clone());
    events.extend(done.events.clone());
    // The same chain on the other run, one call after the other, as the reference.
    let other_barrier = member(other, &other_lease.claim_token, t(20));
    let other_done = moment_to(&other_barrier.proposal.run, RunStatus::Done, t(20));
    ok(
        env.store()
            .commit_claimed(
                &Scope::System,
                other_barrier.proposal.clone(),
                other_barrier.events.clone(),
            )
            .await,
        "the reference barrier",
    );
    ok(
        env.store()
            .commit_claimed(
                &Scope::System,
                claimed_commit(&other_done, &other_lease.claim_token, t(20)),
                other_done.events.clone(),
            )
            .await,
        "the reference completion",
    );

    let outcomes = env
        .store()
        .commit_claimed_batch(vec![barrier.clone(), completion])
        .await;
    assert_eq!(outcomes.len(), 2);
    let mut outcomes = outcomes.into_iter();
    let first = ok(outcomes.next().expect("two outcomes"), "the barrier");
    let second = ok(outcomes.next().expect("two outcomes"), "the completion");
    assert_eq!(
        first, barrier.proposal.run,
        "the barrier answers its own run"
    );
    assert_eq!(second, done.run, "the completion answers its own run");
    let (stored, info, stored_events) = observed(env, &run.id).await;
    assert_eq!(stored, done.run);
    assert_eq!(
        stored_events, events,
        "the run's events, then both moments', in order"
    );
    let reference = env.inspect(&other.id).await;
    assert_eq!(info.run.status, RunStatus::Done);
    assert_eq!(
        (
            info.wake_at,
            info.claimed_at,
            info.claim_attempts,
            info.claim_abandons,
            &info.poison,
            info.admitted_at,
        ),
        (
            reference.wake_at,
            reference.claimed_at,
            reference.claim_attempts,
            reference.claim_abandons,
            &reference.poison,
            reference.admitted_at,
        ),
        "the operational state two calls leave"
    );
}

/// A barrier and its completion in one batch under a lost claim: both are stale, as two calls
/// would be, and the store is left byte-identical.
pub async fn a_chained_pair_under_a_lost_claim_writes_nothing(env: &Env<'_>) {
    let claimed = claimed_runs(env, &["lost"]).await;
    let (run, _) = &claimed[0];
    let foreign = ClaimToken::mint();
    let barrier = member(run, &foreign, t(20));
    let done = moment_to(&barrier.proposal.run, RunStatus::Done, t(20));
    let completion = BatchedCommit {
        scope: Scope::System,
        proposal: claimed_commit(&done, &foreign, t(20)),
        events: done.events.clone(),
    };
    let before = env.snapshot().await;
    let outcomes = env
        .store()
        .commit_claimed_batch(vec![barrier, completion])
        .await;
    let kinds: Vec<Option<K>> = outcomes
        .iter()
        .map(|o| o.as_ref().err().map(StoreError::kind))
        .collect();
    assert_eq!(
        kinds,
        vec![Some(K::StaleCheckpoint), Some(K::StaleCheckpoint)],
        "{outcomes:?}"
    );
    crate::env::assert_same_bytes(
        &before,
        &env.snapshot().await,
        "a chained pair under a lost claim",
    );
}

/// An empty batch answers nothing and changes nothing.
pub async fn an_empty_batch_changes_nothing(env: &Env<'_>) {
    env.claimed("r1").await;
    let before = env.snapshot().await;
    let outcomes = env.store().commit_claimed_batch(Vec::new()).await;
    assert!(outcomes.is_empty(), "{outcomes:?}");
    crate::env::assert_same_bytes(&before, &env.snapshot().await, "an empty batch");
}
