//! `commit_claimed`: the double fence, identity, validation order, event rules, counter resets
//! and the status matrix (`docs/storage-contract.md`, “Transitions”; `docs/reliability.md`,
//! “Fenced commits”; scenarios 9, 13 and 15 of `docs/scenarios.md`).

use crate::cases::prelude::*;

/// A claimed commit of `moment` under `token`, expecting `expected`.
/// Commits `moment` under `token` at `now` and asserts it is refused with `kind`, leaving the
/// store byte-identical ([`Env::rejected`]).
async fn reject_claimed(
    env: &Env<'_>,
    kind: K,
    moment: &docket_core::runtime::Moment,
    token: &ClaimToken,
    now: Timestamp,
) {
    env.rejected(
        kind,
        env.store().commit_claimed(
            &Scope::System,
            claimed_commit(moment, token, now),
            moment.events.clone(),
        ),
    )
    .await;
}

/// A commit with the current seq and token returns the proposed run at seq + 1, and reads
/// back exactly (run, events, latest event).
pub async fn a_current_claimed_commit_advances_the_seq_and_reads_back_exactly(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let stored = ok(
        env.store()
            .commit_claimed(
                &Scope::System,
                claimed_commit(&moment, &c.lease.claim_token, t(20)),
                moment.events.clone(),
            )
            .await,
        "commit_claimed",
    );
    assert_eq!(stored, moment.run);
    assert_eq!(stored.checkpoint_seq, c.run.checkpoint_seq + 1);
    assert_eq!(env.fetch(&c.run.id).await, moment.run);
    let events = env.all_events(&c.run.id).await;
    assert_eq!(
        &events[events.len() - moment.events.len()..],
        &moment.events[..]
    );
    let latest = ok(
        env.store()
            .fetch_latest_event(&Scope::System, &c.run.id)
            .await,
        "fetch_latest_event",
    );
    assert_eq!(latest.as_ref(), moment.events.last());
    for event in &moment.events {
        let fetched = ok(
            env.store()
                .fetch_event(&Scope::System, &c.run.id, event.seq)
                .await,
            "fetch_event",
        );
        assert_eq!(&fetched, event);
    }
}

/// A token that was never issued is stale; neither run nor event changes.
pub async fn a_wrong_token_is_stale_and_stores_nothing(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    reject_claimed(env, K::StaleCheckpoint, &moment, &ClaimToken::mint(), t(20)).await;
    assert_eq!(env.fetch(&c.run.id).await, c.run);
}

/// After an expired claim is stolen, the old holder's token is stale and the thief commits.
pub async fn a_superseded_token_is_stale_and_the_new_holder_commits(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let thief = env.claim(t(10 + 60_001)).await;
    assert_ne!(thief.claim_token, c.lease.claim_token);
    let moment = moment_to(&c.run, RunStatus::Running, t(70_000));
    env.rejected(
        K::StaleCheckpoint,
        env.store().commit_claimed(
            &Scope::System,
            claimed_commit(&moment, &c.lease.claim_token, t(70_000)),
            moment.events.clone(),
        ),
    )
    .await;
    let stored = env
        .commit_to(&thief, &c.run, RunStatus::Running, t(70_000))
        .await;
    assert_eq!(stored.checkpoint_seq, c.run.checkpoint_seq + 1);
}

/// A claimed commit on a run nobody holds is stale, whatever the token.
pub async fn a_claimed_commit_on_an_unclaimed_run_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    ok(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(11))
            .await,
        "release_claim",
    );
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    for token in [c.lease.claim_token.clone(), ClaimToken::mint()] {
        reject_claimed(env, K::StaleCheckpoint, &moment, &token, t(20)).await;
    }
}

/// Replaying a committed proposal (same token, retained claim) is stale: the seq moved.
pub async fn replaying_a_committed_claimed_proposal_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let proposal = claimed_commit(&moment, &c.lease.claim_token, t(20));
    assert_eq!(proposal.schedule, ClaimedSchedule::RetainClaim);
    ok(
        env.store()
            .commit_claimed(&Scope::System, proposal.clone(), moment.events.clone())
            .await,
        "commit_claimed",
    );
    env.rejected(
        K::StaleCheckpoint,
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone()),
    )
    .await;
}

/// A proposal built on an older seq (the holder missed a commit) is stale, even with the
/// current token and fresh event seqs.
pub async fn a_commit_built_on_a_past_seq_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let committed = env
        .commit_to(&c.lease, &c.run, RunStatus::Running, t(20))
        .await;
    let mut outdated = moment_to(&c.run, RunStatus::Running, t(30));
    // Fresh event seqs so only the checkpoint fence can refuse it.
    for (i, event) in outdated.events.iter_mut().enumerate() {
        event.seq = committed.event_seq + 1 + i as u64;
    }
    outdated.run.event_seq = committed.event_seq + outdated.events.len() as u64;
    reject_claimed(
        env,
        K::StaleCheckpoint,
        &outdated,
        &c.lease.claim_token,
        t(30),
    )
    .await;
}

/// A proposal built on a seq the store has not reached is stale, not applied.
pub async fn a_commit_built_on_a_future_seq_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let ahead = moment_to(&c.run, RunStatus::Running, t(20));
    let beyond = moment_to(&ahead.run, RunStatus::Running, t(21));
    reject_claimed(
        env,
        K::StaleCheckpoint,
        &beyond,
        &c.lease.claim_token,
        t(21),
    )
    .await;
}

/// A proposed seq that is not `expected + 1` is malformed: invalid before any lookup.
pub async fn a_seq_skip_is_an_invalid_transition(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let mut proposal = claimed_commit(&moment, &c.lease.claim_token, t(20));
    proposal.run.checkpoint_seq = proposal.expected_seq + 3;
    env.rejected(
        K::InvalidTransition,
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone()),
    )
    .await;
}

/// A well-formed commit for a run that does not exist is not found.
pub async fn a_claimed_commit_for_an_unknown_run_is_not_found(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let ghost = init_moment(&graph, &rid("ghost"), ValueMap::new(), t(0));
    let moment = moment_to(&ghost.run, RunStatus::Running, t(20));
    reject_claimed(env, K::NotFound, &moment, &ClaimToken::mint(), t(20)).await;
}

/// A holder committing in another tenant's scope gets not found (concealment), even with
/// the right token.
pub async fn a_claimed_commit_in_another_tenants_scope_is_not_found(env: &Env<'_>) {
    let c = env.claimed_for(&tenant("a"), "r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        env.rejected(
            K::NotFound,
            env.store().commit_claimed(
                &scope,
                claimed_commit(&moment, &c.lease.claim_token, t(20)),
                moment.events.clone(),
            ),
        )
        .await;
    }
}

/// Scope is checked before identity: a wrong-tenant proposal with a wrong graph hash is
/// still not found.
pub async fn a_cross_tenant_commit_with_a_wrong_identity_is_still_not_found(env: &Env<'_>) {
    let c = env.claimed_for(&tenant("a"), "r1").await;
    let mut moment = moment_to(&c.run, RunStatus::Running, t(20));
    moment.run.graph_hash = tiny_graph_version(&tenant("a"), "g", 9)
        .graph_ref
        .graph_hash;
    env.rejected(
        K::NotFound,
        env.store().commit_claimed(
            &tenant_scope("b"),
            claimed_commit(&moment, &c.lease.claim_token, t(20)),
            moment.events.clone(),
        ),
    )
    .await;
}

/// The run's owner scope may commit (the vehicle passes the lease's owner scope).
pub async fn a_claimed_commit_in_the_owners_scope_succeeds(env: &Env<'_>) {
    let c = env.claimed_for(&tenant("a"), "r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let stored = ok(
        env.store()
            .commit_claimed(
                &Scope::from(&c.lease.owner),
                claimed_commit(&moment, &c.lease.claim_token, t(20)),
                moment.events.clone(),
            )
            .await,
        "commit_claimed",
    );
    assert_eq!(stored, moment.run);
}

async fn rejects_identity_change(env: &Env<'_>, change: impl FnOnce(&mut Run)) {
    let c = env.claimed("r1").await;
    let mut moment = moment_to(&c.run, RunStatus::Running, t(20));
    change(&mut moment.run);
    reject_claimed(
        env,
        K::InvalidTransition,
        &moment,
        &c.lease.claim_token,
        t(20),
    )
    .await;
    assert_eq!(env.fetch(&c.run.id).await, c.run);
}

/// Rebinding a run to another graph id is an invalid transition.
pub async fn changing_the_graph_id_is_an_invalid_transition(env: &Env<'_>) {
    rejects_identity_change(env, |run| {
        run.graph_id = docket_core::model::GraphId::new("other").expect("valid id");
    })
    .await;
}

/// Rebinding a run to another graph hash is an invalid transition.
pub async fn changing_the_graph_hash_is_an_invalid_transition(env: &Env<'_>) {
    rejects_identity_change(env, |run| {
        run.graph_hash = tiny_graph_version(&OwnerScope::Tenantless, "g", 2)
            .graph_ref
            .graph_hash;
    })
    .await;
}

/// `started_at` is immutable: changing it is an invalid transition.
pub async fn changing_started_at_is_an_invalid_transition(env: &Env<'_>) {
    rejects_identity_change(env, |run| run.started_at = Some(t(1))).await;
}

/// Identity is checked before the fences: a wrong identity with a stale token is invalid,
/// not stale.
pub async fn an_identity_change_is_invalid_even_when_the_fence_is_stale(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let mut moment = moment_to(&c.run, RunStatus::Running, t(20));
    moment.run.started_at = Some(t(1));
    reject_claimed(
        env,
        K::InvalidTransition,
        &moment,
        &ClaimToken::mint(),
        t(20),
    )
    .await;
}

/// A commit may carry events identical to ones already stored: they are accepted once.
pub async fn an_identical_already_stored_event_is_accepted(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let mut events = env.all_events(&c.run.id).await;
    events.extend(moment.events.iter().cloned());
    ok(
        env.store()
            .commit_claimed(
                &Scope::System,
                claimed_commit(&moment, &c.lease.claim_token, t(20)),
                events.clone(),
            )
            .await,
        "commit_claimed",
    );
    assert_eq!(env.all_events(&c.run.id).await, events);
}

/// A commit contradicting a stored event is an event conflict and stores nothing, not even
/// its fresh seqs.
pub async fn a_commit_contradicting_a_stored_event_stores_nothing(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let mut contradiction = env.all_events(&c.run.id).await[0].clone();
    contradiction.payload.insert("changed".into(), json!(true));
    let mut events = vec![contradiction];
    events.extend(moment.events.iter().cloned());
    let error = env
        .rejected(
            K::EventConflict,
            env.store().commit_claimed(
                &Scope::System,
                claimed_commit(&moment, &c.lease.claim_token, t(20)),
                events,
            ),
        )
        .await;
    assert!(
        matches!(error, StoreError::EventConflict { seq: 1 }),
        "{error}"
    );
    assert_eq!(env.fetch(&c.run.id).await, c.run);
}

/// An event of another run inside a commit is an invalid transition.
pub async fn a_commit_with_an_event_of_another_run_is_invalid(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let mut moment = moment_to(&c.run, RunStatus::Running, t(20));
    moment.events[0].run_id = rid("r2");
    reject_claimed(
        env,
        K::InvalidTransition,
        &moment,
        &c.lease.claim_token,
        t(20),
    )
    .await;
}

/// Any commit resets claim attempts and abandons.
pub async fn a_claimed_commit_resets_claim_attempts(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    ok(
        env.store()
            .release_claim(&c.run.id, &c.lease.claim_token, t(11))
            .await,
        "release_claim",
    );
    let second = env.claim(t(12)).await;
    assert_eq!(second.claim_attempt, 2);
    assert_eq!(env.inspect(&c.run.id).await.claim_attempts, 2);
    env.commit_to(&second, &c.run, RunStatus::Running, t(20))
        .await;
    let info = env.inspect(&c.run.id).await;
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
}

/// Expiry alone changes no authority: an expired but unstolen holder still commits.
pub async fn an_expired_but_unstolen_claim_can_still_commit(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let late = t(10 + 600_000);
    let stored = env
        .commit_to(&c.lease, &c.run, RunStatus::Running, late)
        .await;
    assert_eq!(stored.checkpoint_seq, c.run.checkpoint_seq + 1);
}

async fn rejects_malformed(env: &Env<'_>, change: impl FnOnce(&mut Run), to: RunStatus) {
    let c = env.claimed("r1").await;
    let mut moment = moment_to(&c.run, to, t(20));
    change(&mut moment.run);
    reject_claimed(
        env,
        K::InvalidTransition,
        &moment,
        &c.lease.claim_token,
        t(20),
    )
    .await;
}

/// A failed run must carry its failure payload.
pub async fn a_failed_run_without_its_failure_is_invalid(env: &Env<'_>) {
    rejects_malformed(env, |run| run.failure = None, RunStatus::Failed).await;
}

/// Output is only allowed on a done run.
pub async fn an_output_on_a_running_run_is_invalid(env: &Env<'_>) {
    rejects_malformed(
        env,
        |run| run.output = Some(map(json!({"result": 1}))),
        RunStatus::Running,
    )
    .await;
}

/// A terminal run needs `finished_at`; a live one must not have it.
pub async fn finished_at_must_match_the_status(env: &Env<'_>) {
    rejects_malformed(env, |run| run.finished_at = None, RunStatus::Done).await;
}

/// The private `created` status can never be committed.
pub async fn a_created_run_cannot_be_committed(env: &Env<'_>) {
    rejects_malformed(
        env,
        |run| run.status = RunStatus::Created,
        RunStatus::Running,
    )
    .await;
}

/// Commits the run into `from` (unclaimed), then proves an unclaimed commit to `to` whose
/// fence matches is refused by the status matrix.
async fn rejects_status_change(env: &Env<'_>, from: RunStatus, to: RunStatus) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let first = moment_to(&run, from, t(10));
    let stored = ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                run.checkpoint_seq,
                unclaimed_commit(&first, t(10)),
                first.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    let second = moment_to(&stored, to, t(20));
    env.rejected(
        K::InvalidTransition,
        env.store().commit_unclaimed(
            &Scope::System,
            stored.checkpoint_seq,
            unclaimed_commit(&second, t(20)),
            second.events.clone(),
        ),
    )
    .await;
}

/// Done is absorbing: it cannot become running again.
pub async fn a_done_run_is_absorbing(env: &Env<'_>) {
    rejects_status_change(env, RunStatus::Done, RunStatus::Running).await;
}

/// Failed is absorbing: it cannot become cancelled.
pub async fn a_failed_run_is_absorbing(env: &Env<'_>) {
    rejects_status_change(env, RunStatus::Failed, RunStatus::Cancelled).await;
}

/// Cancelled is absorbing: it cannot become running again.
pub async fn a_cancelled_run_is_absorbing(env: &Env<'_>) {
    rejects_status_change(env, RunStatus::Cancelled, RunStatus::Running).await;
}

/// A waiting run can only resume or be cancelled: it cannot complete directly.
pub async fn a_waiting_run_cannot_complete_directly(env: &Env<'_>) {
    rejects_status_change(env, RunStatus::Waiting, RunStatus::Done).await;
}
