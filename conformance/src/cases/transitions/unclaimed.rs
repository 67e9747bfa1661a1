//! `commit_unclaimed`: the optimistic seq CAS signals commit with (`docs/storage-contract.md`,
//! “Transitions”; scenario 11 of `docs/scenarios.md`).

use crate::cases::prelude::*;

/// Commits `moment` unclaimed against `expected_seq` at `now` and asserts it is refused with
/// `kind`, leaving the store byte-identical ([`Env::rejected`]).
async fn reject_unclaimed(
    env: &Env<'_>,
    kind: K,
    expected_seq: u64,
    moment: &docket_core::runtime::Moment,
    now: Timestamp,
) {
    env.rejected(
        kind,
        env.store().commit_unclaimed(
            &Scope::System,
            expected_seq,
            unclaimed_commit(moment, now),
            moment.events.clone(),
        ),
    )
    .await;
}

/// Commits `prev → status` unclaimed at `now` with the disposition's unclaimed wake.
async fn signal(env: &Env<'_>, prev: &Run, status: RunStatus, now: Timestamp) -> Run {
    let moment = moment_to(prev, status, now);
    ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                prev.checkpoint_seq,
                unclaimed_commit(&moment, now),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    )
}

/// A signal commit against a claimed run succeeds and revokes the claim.
pub async fn an_unclaimed_commit_revokes_a_live_claim(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let stored = signal(env, &c.run, RunStatus::Running, t(20)).await;
    assert_eq!(stored.checkpoint_seq, c.run.checkpoint_seq + 1);
    let info = env.inspect(&c.run.id).await;
    assert_eq!((info.claimed_at, info.wake_at), (None, Some(t(20))));
    env.assert_fenced_out(&c.run.id, &c.lease.claim_token, t(21))
        .await;
}

/// After a signal, the in-flight holder's next claimed commit loses its fence.
pub async fn a_signal_fences_out_the_in_flight_holder(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    signal(env, &c.run, RunStatus::Running, t(20)).await;
    let late = moment_to(&c.run, RunStatus::Running, t(25));
    env.rejected(
        K::StaleCheckpoint,
        env.store().commit_claimed(
            &Scope::System,
            claimed_commit(&late, &c.lease.claim_token, t(25)),
            late.events.clone(),
        ),
    )
    .await;
}

/// Repeating an unclaimed commit at the same expected seq is stale.
pub async fn repeating_an_unclaimed_commit_is_stale(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let moment = moment_to(&run, RunStatus::Running, t(20));
    let proposal = unclaimed_commit(&moment, t(20));
    ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq,
                proposal.clone(),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    env.rejected(
        K::StaleCheckpoint,
        env.store().commit_unclaimed(
            &Scope::System,
            run.checkpoint_seq,
            proposal,
            moment.events.clone(),
        ),
    )
    .await;
}

/// A different proposal at an already used expected seq is stale too, and the next seq
/// commits with its events.
pub async fn a_different_proposal_at_a_used_seq_is_stale_and_the_next_seq_commits(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let first = signal(env, &run, RunStatus::Running, t(20)).await;
    let rival = moment_to(&run, RunStatus::Waiting, t(21));
    reject_unclaimed(env, K::StaleCheckpoint, run.checkpoint_seq, &rival, t(21)).await;
    let next = moment_to(&first, RunStatus::Waiting, t(22));
    let stored = ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                first.checkpoint_seq,
                unclaimed_commit(&next, t(22)),
                next.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    assert_eq!(stored.checkpoint_seq, 3);
    let events = env.all_events(&run.id).await;
    assert_eq!(events.last(), next.events.last());
}

/// A signal in the wrong tenant's scope is not found and writes no event.
pub async fn an_unclaimed_commit_in_another_tenants_scope_is_not_found(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let moment = moment_to(&run, RunStatus::Running, t(20));
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        env.rejected(
            K::NotFound,
            env.store().commit_unclaimed(
                &scope,
                run.checkpoint_seq,
                unclaimed_commit(&moment, t(20)),
                moment.events.clone(),
            ),
        )
        .await;
    }
    let stored = ok(
        env.store()
            .commit_unclaimed(
                &tenant_scope("a"),
                run.checkpoint_seq,
                unclaimed_commit(&moment, t(20)),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed in the owner's scope",
    );
    assert_eq!(stored, moment.run);
}

/// A signal that rebinds the graph hash is an invalid transition.
pub async fn an_unclaimed_commit_rebinding_the_graph_is_invalid(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let mut moment = moment_to(&run, RunStatus::Running, t(20));
    moment.run.graph_hash = tiny_graph_version(&OwnerScope::Tenantless, "g", 2)
        .graph_ref
        .graph_hash;
    reject_unclaimed(
        env,
        K::InvalidTransition,
        run.checkpoint_seq,
        &moment,
        t(20),
    )
    .await;
}

/// A signal whose events contradict stored ones is an event conflict; the run stays put.
pub async fn an_unclaimed_commit_contradicting_a_stored_event_conflicts(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let mut moment = moment_to(&run, RunStatus::Running, t(20));
    let mut stored_first = env.all_events(&run.id).await[0].clone();
    stored_first.step = 99;
    moment.events.insert(0, stored_first);
    reject_unclaimed(env, K::EventConflict, run.checkpoint_seq, &moment, t(20)).await;
    assert_eq!(env.fetch(&run.id).await, run);
}

/// A signal built on an older seq is stale.
pub async fn an_unclaimed_commit_at_a_stale_seq_is_stale(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let stored = signal(env, &run, RunStatus::Running, t(10)).await;
    let mut outdated = moment_to(&run, RunStatus::Running, t(20));
    for (i, event) in outdated.events.iter_mut().enumerate() {
        event.seq = stored.event_seq + 1 + i as u64;
    }
    outdated.run.event_seq = stored.event_seq + outdated.events.len() as u64;
    reject_unclaimed(
        env,
        K::StaleCheckpoint,
        run.checkpoint_seq,
        &outdated,
        t(20),
    )
    .await;
}

/// A signal for a run that does not exist is not found.
pub async fn an_unclaimed_commit_for_an_unknown_run_is_not_found(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let ghost = init_moment(&graph, &rid("ghost"), ValueMap::new(), t(0));
    let moment = moment_to(&ghost.run, RunStatus::Running, t(20));
    reject_unclaimed(env, K::NotFound, ghost.run.checkpoint_seq, &moment, t(20)).await;
}

/// A signal with a proposed seq other than `expected + 1` is malformed.
pub async fn an_unclaimed_commit_with_a_seq_skip_is_invalid(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let moment = moment_to(&run, RunStatus::Running, t(20));
    env.rejected(
        K::InvalidTransition,
        env.store().commit_unclaimed(
            &Scope::System,
            run.checkpoint_seq + 1,
            unclaimed_commit(&moment, t(20)),
            moment.events.clone(),
        ),
    )
    .await;
}

/// A signal's timed wake lands exactly; an external park leaves no wake.
pub async fn an_unclaimed_commit_applies_its_wake(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let moment = moment_to(&run, RunStatus::Running, t(20));
    let mut proposal = unclaimed_commit(&moment, t(20));
    proposal.wake = ReleaseWake::At(t(9_000));
    let stored = ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq,
                proposal,
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    assert_eq!(env.inspect(&run.id).await.wake_at, Some(t(9_000)));
    let waiting = signal(env, &stored, RunStatus::Waiting, t(30)).await;
    let info = env.inspect(&waiting.id).await;
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
}

/// A signal clears poison and resets attempts, waking the run.
pub async fn an_unclaimed_commit_clears_poison_and_resets_counters(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(1), 1);
    policy.max_claim_attempts = nz(1);
    let lease = env.claim_all(&policy).await.leases.remove(0);
    ok(
        env.store()
            .release_claim(&run.id, &lease.claim_token, t(2))
            .await,
        "release_claim",
    );
    policy.now = t(3);
    let batch = env.claim_all(&policy).await;
    assert_eq!(batch.poisoned.len(), 1, "the second claim poisons");
    assert!(env.inspect(&run.id).await.poison.is_some());
    signal(env, &run, RunStatus::Running, t(20)).await;
    let info = env.inspect(&run.id).await;
    assert_eq!(info.poison, None);
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert_eq!(info.wake_at, Some(t(20)));
}
