//! `initialize`: what it stores, and every way it refuses (`docs/storage-contract.md`,
//! “Transitions”; scenarios 7, 8 and 15 of `docs/scenarios.md`).

use crate::cases::prelude::*;
use docket_core::runtime::Moment;

/// The tiny graph published tenantless and the initialization moment of `r1` at `t(0)`.
async fn prepared(env: &Env<'_>) -> (Published, Moment) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    (graph, moment)
}

/// Asserts `r1` was never stored.
async fn assert_absent(env: &Env<'_>) {
    let error = env
        .store()
        .fetch_run(&Scope::System, &rid("r1"))
        .await
        .expect_err("a refused initialize stores no run");
    assert_eq!(error.kind(), K::NotFound);
}

/// Initialize stores exactly the proposed run and events, unclaimed, with the given wake and
/// zeroed counters.
pub async fn initialize_stores_the_run_its_events_and_its_wake(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let stored = ok(
        env.store()
            .initialize(
                &graph.owner,
                init_proposal(&moment, t(0)),
                moment.events.clone(),
            )
            .await,
        "initialize",
    );
    assert_eq!(stored, moment.run);
    assert_eq!(env.fetch(&rid("r1")).await, moment.run);
    assert_eq!(env.all_events(&rid("r1")).await, moment.events);
    let info = env.inspect(&rid("r1")).await;
    assert_eq!(info.wake_at, Some(t(0)));
    assert_eq!(info.claimed_at, None);
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert_eq!(info.poison, None);
    assert_eq!(info.owner, OwnerScope::Tenantless);
}

/// A first wake in the future makes the run scheduled: not claimable before it, claimable at
/// it.
pub async fn initialize_with_a_future_wake_is_scheduled_until_it_is_due(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start_waking(&graph, "r1", t(0), t(500)).await;
    assert_eq!(env.inspect(&rid("r1")).await.wake_at, Some(t(500)));
    let early = env
        .unchanged(env.store().claim_due(&claim_policy(t(499), 5)))
        .await;
    assert_eq!(early.outcome_count(), 0);
    assert_eq!(env.claim(t(500)).await.run_id, rid("r1"));
}

/// Initializing the same run twice is a conflict (a retried initialize after an ambiguous
/// success surfaces this way).
pub async fn reinitializing_the_same_run_is_a_conflict(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let proposal = init_proposal(&moment, t(0));
    ok(
        env.store()
            .initialize(&graph.owner, proposal.clone(), moment.events.clone())
            .await,
        "initialize",
    );
    env.rejected(
        K::Conflict,
        env.store()
            .initialize(&graph.owner, proposal, moment.events.clone()),
    )
    .await;
}

/// Initializing a taken run id with different content is a conflict too.
pub async fn reinitializing_with_different_content_is_a_conflict(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    env.start(&graph, "r1", t(0)).await;
    let other = init_moment(&graph, &rid("r1"), map(json!({"amount": 9})), t(5));
    env.rejected(
        K::Conflict,
        env.store().initialize(
            &graph.owner,
            init_proposal(&other, t(5)),
            other.events.clone(),
        ),
    )
    .await;
    assert_eq!(env.fetch(&rid("r1")).await.input, ValueMap::new());
}

/// A run bound to an unpublished hash of a published graph id is not found, and not stored.
pub async fn initialize_on_an_unknown_graph_hash_is_not_found(env: &Env<'_>) {
    env.publish_tiny(&OwnerScope::Tenantless).await;
    let unpublished = tiny_graph_version(&OwnerScope::Tenantless, "g", 2);
    let moment = init_moment(&unpublished, &rid("r1"), ValueMap::new(), t(0));
    env.rejected(
        K::NotFound,
        env.store().initialize(
            &OwnerScope::Tenantless,
            init_proposal(&moment, t(0)),
            moment.events.clone(),
        ),
    )
    .await;
    assert_absent(env).await;
}

/// A run bound to a graph id nobody published is not found.
pub async fn initialize_on_an_unknown_graph_id_is_not_found(env: &Env<'_>) {
    let unpublished = tiny_graph(&OwnerScope::Tenantless);
    let moment = init_moment(&unpublished, &rid("r1"), ValueMap::new(), t(0));
    env.rejected(
        K::NotFound,
        env.store().initialize(
            &OwnerScope::Tenantless,
            init_proposal(&moment, t(0)),
            moment.events.clone(),
        ),
    )
    .await;
    assert_absent(env).await;
}

/// The graph must be published by the run's own owner: another tenant's copy (or the
/// tenantless one) does not count.
pub async fn initialize_needs_the_graph_in_the_owners_own_scope(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    let moment = init_moment(&graph, &rid("r1"), ValueMap::new(), t(0));
    for owner in [tenant("b"), OwnerScope::Tenantless] {
        env.rejected(
            K::NotFound,
            env.store()
                .initialize(&owner, init_proposal(&moment, t(0)), moment.events.clone()),
        )
        .await;
    }
    assert_absent(env).await;
}

async fn rejects_status(env: &Env<'_>, status: RunStatus) {
    let (graph, mut moment) = prepared(env).await;
    moment.run.status = status;
    env.rejected(
        K::InvalidTransition,
        env.store().initialize(
            &graph.owner,
            init_proposal(&moment, t(0)),
            moment.events.clone(),
        ),
    )
    .await;
    assert_absent(env).await;
}

/// Initialize refuses a `created` run (a private in-memory status).
pub async fn initialize_rejects_a_created_run(env: &Env<'_>) {
    rejects_status(env, RunStatus::Created).await;
}

/// Initialize refuses a `waiting` run.
pub async fn initialize_rejects_a_waiting_run(env: &Env<'_>) {
    rejects_status(env, RunStatus::Waiting).await;
}

/// Initialize refuses a `done` run.
pub async fn initialize_rejects_a_done_run(env: &Env<'_>) {
    rejects_status(env, RunStatus::Done).await;
}

/// Initialize refuses a `failed` run.
pub async fn initialize_rejects_a_failed_run(env: &Env<'_>) {
    rejects_status(env, RunStatus::Failed).await;
}

/// Initialize refuses a `cancelled` run.
pub async fn initialize_rejects_a_cancelled_run(env: &Env<'_>) {
    rejects_status(env, RunStatus::Cancelled).await;
}

/// Initialize refuses `checkpoint_seq` 0 (the first commit is seq 1).
pub async fn initialize_rejects_checkpoint_seq_zero(env: &Env<'_>) {
    let (graph, mut moment) = prepared(env).await;
    moment.run.checkpoint_seq = 0;
    env.rejected(
        K::InvalidTransition,
        env.store().initialize(
            &graph.owner,
            init_proposal(&moment, t(0)),
            moment.events.clone(),
        ),
    )
    .await;
    assert_absent(env).await;
}

/// Initialize refuses a document without `updated_at` or without `started_at`.
pub async fn initialize_rejects_a_document_missing_its_times(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    for strip in [0, 1] {
        let mut run = moment.run.clone();
        if strip == 0 {
            run.updated_at = None;
        } else {
            run.started_at = None;
        }
        let proposal = docket_core::store::InitProposal {
            run,
            ..init_proposal(&moment, t(0))
        };
        env.rejected(
            K::InvalidTransition,
            env.store()
                .initialize(&graph.owner, proposal, moment.events.clone()),
        )
        .await;
    }
    assert_absent(env).await;
}

/// Initialize accepts only the `run_initialized` checkpoint type.
pub async fn initialize_rejects_every_other_checkpoint_type(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    for &checkpoint_type in CheckpointType::ALL {
        if checkpoint_type == CheckpointType::RunInitialized {
            continue;
        }
        let proposal = docket_core::store::InitProposal {
            checkpoint_type,
            ..init_proposal(&moment, t(0))
        };
        env.rejected(
            K::InvalidTransition,
            env.store()
                .initialize(&graph.owner, proposal, moment.events.clone()),
        )
        .await;
    }
    assert_absent(env).await;
}

/// Identical duplicate events in one initialize collapse to one stored event.
pub async fn identical_duplicate_events_in_one_initialize_collapse(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let mut events = moment.events.clone();
    events.extend(moment.events.iter().cloned());
    events.reverse();
    ok(
        env.store()
            .initialize(&graph.owner, init_proposal(&moment, t(0)), events)
            .await,
        "initialize",
    );
    assert_eq!(env.all_events(&rid("r1")).await, moment.events);
}

/// Two different events at one seq in one initialize are an event conflict; no run is stored.
pub async fn contradictory_duplicate_events_conflict_and_store_no_run(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let mut events = moment.events.clone();
    let mut twin = events[0].clone();
    twin.payload.insert("twin".into(), json!(true));
    events.push(twin);
    env.rejected(
        K::EventConflict,
        env.store()
            .initialize(&graph.owner, init_proposal(&moment, t(0)), events),
    )
    .await;
    assert_absent(env).await;
}

/// An event that belongs to another run is an invalid transition.
pub async fn an_event_of_another_run_is_an_invalid_transition(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let mut events = moment.events.clone();
    events[0].run_id = rid("someone-else");
    env.rejected(
        K::InvalidTransition,
        env.store()
            .initialize(&graph.owner, init_proposal(&moment, t(0)), events),
    )
    .await;
    assert_absent(env).await;
}

/// Event sequences start at 1: seq 0 is an invalid transition.
pub async fn an_event_with_seq_zero_is_an_invalid_transition(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let mut events = moment.events.clone();
    events[0].seq = 0;
    env.rejected(
        K::InvalidTransition,
        env.store()
            .initialize(&graph.owner, init_proposal(&moment, t(0)), events),
    )
    .await;
    assert_absent(env).await;
}

/// An event payload with a reserved `$` key is not portable: invalid transition.
pub async fn an_event_payload_with_a_reserved_key_is_an_invalid_transition(env: &Env<'_>) {
    let (graph, moment) = prepared(env).await;
    let mut events = moment.events.clone();
    events[0].payload.insert("$ref".into(), json!(1));
    env.rejected(
        K::InvalidTransition,
        env.store()
            .initialize(&graph.owner, init_proposal(&moment, t(0)), events),
    )
    .await;
    assert_absent(env).await;
}

/// Run input with a reserved `$` key is not durable: invalid transition.
pub async fn run_input_with_a_reserved_key_is_an_invalid_transition(env: &Env<'_>) {
    let (graph, mut moment) = prepared(env).await;
    moment.run.input.insert("$ref".into(), json!("x"));
    env.rejected(
        K::InvalidTransition,
        env.store().initialize(
            &graph.owner,
            init_proposal(&moment, t(0)),
            moment.events.clone(),
        ),
    )
    .await;
    assert_absent(env).await;
}

/// A tenant's run shows its owner in the projection, the listing and the lease.
pub async fn initialize_records_the_owner_for_projection_listing_and_leases(env: &Env<'_>) {
    let graph = env.publish_tiny(&tenant("a")).await;
    env.start(&graph, "r1", t(0)).await;
    assert_eq!(env.inspect(&rid("r1")).await.owner, tenant("a"));
    let page = ok(
        env.store().list_runs(&Scope::System, &run_query(10)).await,
        "list_runs",
    );
    assert_eq!(page.runs.len(), 1);
    assert_eq!(page.runs[0].owner, tenant("a"));
    assert_eq!(env.claim(t(1)).await.owner, tenant("a"));
}

/// The latest event after initialize is its closing `checkpoint_committed`.
pub async fn the_latest_event_after_initialize_is_its_checkpoint(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let run = env.start(&graph, "r1", t(0)).await;
    let latest = ok(
        env.store()
            .fetch_latest_event(&Scope::System, &run.id)
            .await,
        "fetch_latest_event",
    )
    .expect("an initialized run has events");
    assert_eq!(latest.event_type, EventType::CheckpointCommitted);
    assert_eq!(latest.seq, run.event_seq);
}
