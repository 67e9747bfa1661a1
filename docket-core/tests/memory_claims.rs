//! Claims, refresh, release, abandon and poison recovery on the memory store (spec §3.3,
//! §4.2; §9.1 scenario 5; §9.6 scenarios 128–136; reliability §8 A 7–10).

mod common;

use std::collections::BTreeSet;
use std::num::NonZeroU32;

use common::*;
use docket_core::memory::MemoryStore;
use docket_core::model::{ClaimToken, OwnerScope, PoisonReason, RunStatus, Scope};
use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonOutcome, AbandonPolicy, ClaimClass, ClaimedSchedule,
    ReleaseWake, RunStore, StoreErrorKind,
};

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("nonzero")
}

fn abandon(expected_seq: u64, now_ms: i64, retry_ms: i64, max: u32) -> AbandonPolicy {
    AbandonPolicy {
        expected_seq,
        now: t(now_ms),
        retry_at: t(retry_ms),
        max_claim_abandons: nz(max),
        mode: AbandonMode::Poisoning,
    }
}

// ---- 128 ---------------------------------------------------------------------------------

#[tokio::test]
async fn claim_due_batches_ready_and_expired_runs_with_minted_tokens() {
    let (store, graph) = store_with_graph().await;
    let stuck = start_run(&store, &OwnerScope::Tenantless, &graph, "stuck", t(0)).await;
    let first = claim_one(&store, t(0)).await;
    assert_eq!(first.claim_attempt, 1);
    let ready = start_run(&store, &OwnerScope::Tenantless, &graph, "ready", t(1_000)).await;
    let batch = store
        .claim_due(&claim_policy(t(61_000), 10))
        .await
        .expect("claim");
    assert!(batch.poisoned.is_empty());
    let by_id: Vec<_> = batch.leases.iter().map(|l| l.run_id.clone()).collect();
    assert_eq!(by_id, vec![stuck.id.clone(), ready.id.clone()]);
    let steal = &batch.leases[0];
    assert_eq!(steal.claim_attempt, 2, "a steal after the TTL is attempt 2");
    assert!(steal.claim_token.is_uuid());
    assert_ne!(steal.claim_token, first.claim_token);
    assert_eq!(steal.claimed_at, t(61_000));
    assert_eq!((steal.checkpoint_seq, steal.orphan_ttl_ms), (1, 60_000));
    assert_eq!(steal.owner, OwnerScope::Tenantless);
    assert_eq!(
        (&steal.graph_id, &steal.graph_hash),
        (&graph.graph_id, &graph.graph_hash)
    );
    assert_eq!(batch.leases[1].claim_attempt, 1);
    let info = store
        .inspect_run(&Scope::System, &ready.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.claimed_at, info.wake_at, info.claim_attempts),
        (Some(t(61_000)), None, 1)
    );
}

#[tokio::test]
async fn claiming_touches_neither_document_nor_updated_at() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    claim_one(&store, t(5)).await;
    assert_eq!(
        store
            .fetch_run(&Scope::System, &run.id)
            .await
            .expect("fetch"),
        run
    );
}

#[tokio::test]
async fn an_empty_store_claims_nothing_and_changes_nothing() {
    let (store, _) = store_with_graph().await;
    let batch = assert_no_change(&store, store.claim_due(&claim_policy(t(0), 5))).await;
    assert_eq!(batch.outcome_count(), 0);
}

#[tokio::test]
async fn waiting_terminal_and_poisoned_runs_are_never_claimed() {
    let (store, graph) = store_with_graph().await;
    for (id, status, wake) in [
        ("waiting", RunStatus::Waiting, ReleaseWake::External),
        ("done", RunStatus::Done, ReleaseWake::Terminal),
    ] {
        let run = start_run(&store, &OwnerScope::Tenantless, &graph, id, t(0)).await;
        let (proposal, events) = unclaimed(&run, status, wake, t(1));
        store
            .commit_unclaimed(&Scope::System, 1, proposal, events)
            .await
            .expect("park");
    }
    start_run(&store, &OwnerScope::Tenantless, &graph, "poisoned", t(0)).await;
    let mut policy = claim_policy(t(2), 5);
    policy.max_claim_attempts = nz(1);
    policy.orphan_ttl_ms = 0;
    store.claim_due(&policy).await.expect("lease");
    policy.now = t(3);
    assert_eq!(
        store
            .claim_due(&policy)
            .await
            .expect("poison")
            .poisoned
            .len(),
        1
    );
    policy.now = t(1_000_000);
    let batch = assert_no_change(&store, store.claim_due(&policy)).await;
    assert_eq!(batch.outcome_count(), 0);
}

// ---- 129 ---------------------------------------------------------------------------------

async fn ready_and_expired(
    store: &MemoryStore,
) -> (docket_core::model::RunId, docket_core::model::RunId) {
    let graph = publish(store, &OwnerScope::Tenantless, "g", 1, t(0)).await;
    let expired = start_run(store, &OwnerScope::Tenantless, &graph, "e1", t(0)).await;
    claim_one(store, t(0)).await;
    start_run(store, &OwnerScope::Tenantless, &graph, "e2", t(1)).await;
    claim_one(store, t(1)).await;
    let ready = start_run(store, &OwnerScope::Tenantless, &graph, "r1", t(50_000)).await;
    (ready.id, expired.id)
}

#[tokio::test]
async fn demand_two_reserves_one_outcome_per_nonempty_class() {
    let store = MemoryStore::new();
    let (ready, expired) = ready_and_expired(&store).await;
    let batch = store
        .claim_due(&claim_policy(t(70_000), 2))
        .await
        .expect("claim");
    let ids: Vec<_> = batch.leases.iter().map(|l| l.run_id.clone()).collect();
    assert_eq!(
        ids,
        vec![expired, ready],
        "oldest expired, then the only ready run"
    );
}

#[tokio::test]
async fn demand_one_serves_the_preferred_class_and_falls_through() {
    let store = MemoryStore::new();
    let (ready, expired) = ready_and_expired(&store).await;
    let mut policy = claim_policy(t(70_000), 1);
    policy.preference = Some(ClaimClass::Ready);
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.leases[0].run_id, ready);
    // Ready class is now empty: the preference falls through to an expired run.
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.leases[0].run_id, expired);
    policy.preference = Some(ClaimClass::Expired);
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.leases[0].run_id.as_str(), "e2");
}

#[tokio::test]
async fn demand_one_without_preference_takes_the_oldest_eligible() {
    let store = MemoryStore::new();
    let (_, expired) = ready_and_expired(&store).await;
    let batch = store
        .claim_due(&claim_policy(t(70_000), 1))
        .await
        .expect("claim");
    assert_eq!(batch.leases[0].run_id, expired);
}

#[tokio::test]
async fn equal_wakes_break_ties_by_run_id() {
    let (store, graph) = store_with_graph().await;
    for id in ["c", "a", "b"] {
        start_run(&store, &OwnerScope::Tenantless, &graph, id, t(7)).await;
    }
    let batch = store
        .claim_due(&claim_policy(t(7), 3))
        .await
        .expect("claim");
    let ids: Vec<_> = batch
        .leases
        .iter()
        .map(|l| l.run_id.as_str().to_owned())
        .collect();
    assert_eq!(ids, vec!["a", "b", "c"]);
}

#[tokio::test]
async fn a_poisoned_head_consumes_its_class_reservation() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "e1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(1);
    store.claim_due(&policy).await.expect("claim e1");
    start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(100_000)).await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "r2", t(100_001)).await;
    policy.limit = nz(2);
    policy.now = t(200_000);
    let batch = store.claim_due(&policy).await.expect("claim");
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(batch.poisoned[0].run_id.as_str(), "e1");
    assert_eq!(batch.leases.len(), 1);
    assert_eq!(batch.leases[0].run_id.as_str(), "r1");
}

// ---- 130 ---------------------------------------------------------------------------------

#[tokio::test]
async fn future_wakes_are_excluded_until_due_inclusive_at_the_wake() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::Release(ReleaseWake::At(t(5_000))),
        t(1),
    );
    store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("retry park");
    let early = assert_no_change(&store, store.claim_due(&claim_policy(t(4_999), 5))).await;
    assert_eq!(early.outcome_count(), 0);
    let due = store
        .claim_due(&claim_policy(t(5_000), 5))
        .await
        .expect("claim");
    assert_eq!(due.leases.len(), 1);
}

// ---- 131 ---------------------------------------------------------------------------------

#[tokio::test]
async fn max_attempts_n_allows_exactly_n_launches_then_poisons() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(3);
    policy.orphan_ttl_ms = 10;
    for attempt in 1..=3 {
        policy.now = t(100 * i64::from(attempt));
        let batch = store.claim_due(&policy).await.expect("claim");
        assert_eq!(batch.leases.len(), 1, "launch {attempt}");
        assert_eq!(batch.leases[0].claim_attempt, attempt);
    }
    policy.now = t(1_000);
    let batch = store.claim_due(&policy).await.expect("claim");
    assert!(batch.leases.is_empty());
    assert_eq!(batch.poisoned.len(), 1);
    assert_eq!(batch.poisoned[0].poisoned_at, t(1_000));
    assert_eq!(
        batch.poisoned[0].reason,
        PoisonReason::MaxClaimAttemptsExceeded
    );
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.run, run, "poison touches neither seq nor document");
    assert_eq!(info.claim_attempts, 3, "attempts unchanged by poisoning");
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    assert!(info.is_poisoned());
    assert!(store
        .raw_snapshot()
        .contains("\"latest_checkpoint_type\":\"run_initialized\""));
}

#[tokio::test]
async fn a_commit_resets_attempts_so_progress_is_never_poisoned() {
    let (store, graph) = store_with_graph().await;
    let mut run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(1);
    for i in 1..=4 {
        policy.now = t(i * 10);
        let batch = store.claim_due(&policy).await.expect("claim");
        let lease = &batch.leases[0];
        assert_eq!(lease.claim_attempt, 1);
        let (proposal, events) = claimed(
            &run,
            RunStatus::Running,
            &lease.claim_token,
            ClaimedSchedule::Release(ReleaseWake::Immediate),
            t(i * 10 + 1),
        );
        run = store
            .commit_claimed(&Scope::System, proposal, events)
            .await
            .expect("progress");
    }
    assert!(store
        .raw_snapshot()
        .contains("\"latest_checkpoint_type\":\"step_committed\""));
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claim_attempts, 0);
    assert_eq!(info.run.checkpoint_seq, 5);
}

// ---- 132 / reliability A 9 ---------------------------------------------------------------

#[tokio::test]
async fn a_claim_becomes_stealable_only_strictly_after_the_ttl() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let first = claim_one(&store, t(0)).await;
    let at_boundary = assert_no_change(&store, store.claim_due(&claim_policy(t(60_000), 5))).await;
    assert_eq!(
        at_boundary.outcome_count(),
        0,
        "a live lease is never stolen"
    );
    let steal = store
        .claim_due(&claim_policy(t(60_001), 5))
        .await
        .expect("claim");
    assert_eq!(steal.leases.len(), 1);
    assert_ne!(steal.leases[0].claim_token, first.claim_token);
}

#[tokio::test]
async fn ttl_zero_steals_any_claim_older_than_now() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let first = claim_one(&store, t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.orphan_ttl_ms = 0;
    assert_eq!(
        store
            .claim_due(&policy)
            .await
            .expect("same instant")
            .outcome_count(),
        0
    );
    policy.now = t(0).add_micros(1);
    let steal = store.claim_due(&policy).await.expect("steal");
    assert_eq!(steal.leases.len(), 1);
    assert_ne!(steal.leases[0].claim_token, first.claim_token);
}

// ---- reliability A 7, 8 ------------------------------------------------------------------

#[tokio::test]
async fn a_holder_whose_lease_was_stolen_is_fenced_and_the_thief_progresses() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let a = claim_one(&store, t(0)).await;
    let b = claim_one(&store, t(60_001)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &b.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_002),
    );
    let after_b = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("b commits");
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &a.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_003),
    );
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    // A cannot commit on top of B's state either.
    let (proposal, events) = claimed(
        &after_b,
        RunStatus::Running,
        &a.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_004),
    );
    assert_rejected(
        &store,
        StoreErrorKind::StaleCheckpoint,
        store.commit_claimed(&Scope::System, proposal, events),
    )
    .await;
    let (proposal, events) = claimed(
        &after_b,
        RunStatus::Running,
        &b.claim_token,
        ClaimedSchedule::RetainClaim,
        t(60_005),
    );
    let after = store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("b continues");
    assert_eq!(after.checkpoint_seq, 3);
}

#[tokio::test]
async fn every_claim_of_a_run_mints_a_distinct_token() {
    let (store, graph) = store_with_graph().await;
    start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.orphan_ttl_ms = 0;
    policy.max_claim_attempts = nz(100);
    let mut tokens = BTreeSet::new();
    for i in 0..50 {
        policy.now = t(i);
        let batch = store.claim_due(&policy).await.expect("claim");
        tokens.insert(batch.leases[0].claim_token.as_str().to_owned());
    }
    assert_eq!(tokens.len(), 50);
}

// ---- 5 [RUN-CLAIM-LIVENESS-RECOVERY] / 134 -----------------------------------------------

#[tokio::test]
async fn refresh_is_token_guarded_and_never_moves_claimed_at_backwards() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(100)).await;
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&run.id, &ClaimToken::mint(), t(200)),
    )
    .await;
    assert_rejected(
        &store,
        StoreErrorKind::ClaimLost,
        store.refresh_claim(&rid("ghost"), &lease.claim_token, t(200)),
    )
    .await;
    store
        .refresh_claim(&run.id, &lease.claim_token, t(50))
        .await
        .expect("refresh");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claimed_at, Some(t(100)));
    store
        .refresh_claim(&run.id, &lease.claim_token, t(300))
        .await
        .expect("refresh");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.claimed_at, Some(t(300)));
}

#[tokio::test]
async fn an_expired_but_unstolen_claim_may_still_refresh() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    store
        .refresh_claim(&run.id, &lease.claim_token, t(500_000))
        .await
        .expect("refresh after expiry");
    let batch = store
        .claim_due(&claim_policy(t(500_000), 1))
        .await
        .expect("claim");
    assert_eq!(
        batch.outcome_count(),
        0,
        "the refreshed claim is live again"
    );
}

#[tokio::test]
async fn stale_release_is_a_harmless_no_op() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    claim_one(&store, t(0)).await;
    assert_no_change(
        &store,
        store.release_claim(&run.id, &ClaimToken::mint(), t(5)),
    )
    .await;
    assert_no_change(
        &store,
        store.release_claim(&rid("ghost"), &ClaimToken::mint(), t(5)),
    )
    .await;
}

#[tokio::test]
async fn current_release_wakes_at_the_release_time_and_keeps_attempts() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    store
        .release_claim(&run.id, &lease.claim_token, t(7))
        .await
        .expect("release");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.wake_at, info.claimed_at, info.claim_attempts),
        (Some(t(7)), None, 1)
    );
    // Releasing again with the old token is a no-op.
    assert_no_change(
        &store,
        store.release_claim(&run.id, &lease.claim_token, t(9)),
    )
    .await;
    // The run can be claimed again and committed with the new token.
    let again = claim_one(&store, t(8)).await;
    assert_eq!(again.claim_attempt, 2);
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &again.claim_token,
        ClaimedSchedule::RetainClaim,
        t(9),
    );
    store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit after re-claim");
}

// ---- 5 / 135 abandon ---------------------------------------------------------------------

#[tokio::test]
async fn abandon_reschedules_then_poisons_as_in_the_shared_scenario() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    // Stale abandons: wrong token, wrong seq, unknown run.
    for (id, token, seq) in [
        (run.id.clone(), ClaimToken::mint(), 1),
        (run.id.clone(), lease.claim_token.clone(), 0),
        (rid("ghost"), lease.claim_token.clone(), 1),
    ] {
        let outcome = assert_no_change(
            &store,
            store.abandon_claim(&id, &token, &abandon(seq, 10, 20, 1)),
        )
        .await;
        assert_eq!(outcome, AbandonOutcome::Stale);
    }
    let outcome = store
        .abandon_claim(&run.id, &lease.claim_token, &abandon(1, 10, 1_000, 1))
        .await
        .expect("abandon");
    assert_eq!(outcome, AbandonOutcome::Rescheduled);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.wake_at, info.claimed_at), (Some(t(1_000)), None));
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));

    let lease = claim_one(&store, t(1_000)).await;
    let outcome = store
        .abandon_claim(&run.id, &lease.claim_token, &abandon(1, 1_010, 2_000, 1))
        .await
        .expect("abandon");
    assert_eq!(outcome, AbandonOutcome::Poisoned);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.wake_at, info.claimed_at), (None, None));
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 1));
    let poison = info.poison.expect("poisoned");
    assert_eq!(poison.reason, PoisonReason::MaxClaimAbandonsExceeded);
    assert_eq!(poison.poisoned_at, t(1_010));
    assert_eq!(info.run, run, "abandon never touches the document");

    let recovered = store
        .retry_poisoned_run(&Scope::Tenantless, &run.id, t(3_000))
        .await
        .expect("retry");
    assert_eq!(recovered, run);
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(info.wake_at, Some(t(3_000)));
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 0));
    assert!(info.poison.is_none());
}

#[tokio::test]
async fn abandon_after_the_holders_first_commit_is_stale() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    let (proposal, events) = claimed(
        &run,
        RunStatus::Running,
        &lease.claim_token,
        ClaimedSchedule::RetainClaim,
        t(1),
    );
    store
        .commit_claimed(&Scope::System, proposal, events)
        .await
        .expect("commit");
    let outcome = assert_no_change(
        &store,
        store.abandon_claim(&run.id, &lease.claim_token, &abandon(1, 2, 3, 5)),
    )
    .await;
    assert_eq!(outcome, AbandonOutcome::Stale);
}

#[tokio::test]
async fn abandon_with_retry_before_now_is_an_invalid_argument() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let lease = claim_one(&store, t(0)).await;
    assert_rejected(
        &store,
        StoreErrorKind::InvalidArgument,
        store.abandon_claim(&run.id, &lease.claim_token, &abandon(1, 10, 9, 5)),
    )
    .await;
    let mut bad_backoff = abandon(1, 10, 10, 5);
    bad_backoff.mode = AbandonMode::NonPoisoning {
        backoff: Some(AbandonBackoff {
            base_ms: 100,
            cap_ms: 50,
        }),
    };
    assert_rejected(
        &store,
        StoreErrorKind::InvalidArgument,
        store.abandon_claim(&run.id, &lease.claim_token, &bad_backoff),
    )
    .await;
}

#[tokio::test]
async fn abandons_hand_the_attempt_back_so_only_launches_count_toward_poison() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(1);
    for i in 0..3 {
        policy.now = t(i * 100);
        let batch = store.claim_due(&policy).await.expect("claim");
        assert_eq!(
            batch.leases.len(),
            1,
            "round {i}: attempts were handed back"
        );
        let outcome = store
            .abandon_claim(
                &run.id,
                &batch.leases[0].claim_token,
                &abandon(1, i * 100, i * 100, 10),
            )
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
    }
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!((info.claim_attempts, info.claim_abandons), (0, 3));
}

#[tokio::test]
async fn non_poisoning_abandons_back_off_exponentially_to_the_cap() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut wakes = Vec::new();
    let mut now = 0;
    for _ in 0..4 {
        let lease = claim_one(&store, t(now)).await;
        let mut policy = abandon(1, now, now, 1);
        policy.mode = AbandonMode::NonPoisoning {
            backoff: Some(AbandonBackoff {
                base_ms: 100,
                cap_ms: 300,
            }),
        };
        let outcome = store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        let wake = info.wake_at.expect("wake");
        wakes.push((wake.millis_since(t(now)), info.claim_abandons));
        now = wake.millis_since(t(0)) as i64;
    }
    assert_eq!(wakes, vec![(100, 1), (200, 2), (300, 3), (300, 4)]);
}

#[tokio::test]
async fn non_poisoning_abandon_without_backoff_wakes_at_retry_at_and_never_poisons() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    for i in 0..3 {
        let lease = claim_one(&store, t(i * 10)).await;
        let mut policy = abandon(1, i * 10, i * 10 + 5, 1);
        policy.mode = AbandonMode::NonPoisoning { backoff: None };
        let outcome = store
            .abandon_claim(&run.id, &lease.claim_token, &policy)
            .await
            .expect("abandon");
        assert_eq!(outcome, AbandonOutcome::Rescheduled);
        let info = store
            .inspect_run(&Scope::System, &run.id)
            .await
            .expect("inspect");
        assert_eq!(info.wake_at, Some(t(i * 10 + 5)));
    }
}

// ---- 136 retry_poisoned_run --------------------------------------------------------------

#[tokio::test]
async fn retry_poisoned_is_terminal_first_scoped_and_idempotent() {
    let store = MemoryStore::new();
    let graph = publish(&store, &tenant("a"), "g", 1, t(0)).await;
    let run = start_run(&store, &tenant("a"), &graph, "r1", t(0)).await;
    // Healthy: returned unchanged, nothing written.
    let same = assert_no_change(
        &store,
        store.retry_poisoned_run(&tenant_scope("a"), &run.id, t(1)),
    )
    .await;
    assert_eq!(same, run);
    // Other tenant, tenantless and unknown: not found.
    for scope in [tenant_scope("b"), Scope::Tenantless] {
        assert_rejected(
            &store,
            StoreErrorKind::NotFound,
            store.retry_poisoned_run(&scope, &run.id, t(1)),
        )
        .await;
    }
    assert_rejected(
        &store,
        StoreErrorKind::NotFound,
        store.retry_poisoned_run(&Scope::System, &rid("ghost"), t(1)),
    )
    .await;
    // Terminal: inactive.
    let (proposal, events) = unclaimed(&run, RunStatus::Cancelled, ReleaseWake::Terminal, t(2));
    store
        .commit_unclaimed(&Scope::System, 1, proposal, events)
        .await
        .expect("cancel");
    assert_rejected(
        &store,
        StoreErrorKind::InactiveRun,
        store.retry_poisoned_run(&Scope::System, &run.id, t(3)),
    )
    .await;
}

#[tokio::test]
async fn retry_poisoned_fully_resets_an_attempts_poison() {
    let (store, graph) = store_with_graph().await;
    let run = start_run(&store, &OwnerScope::Tenantless, &graph, "r1", t(0)).await;
    let mut policy = claim_policy(t(0), 1);
    policy.max_claim_attempts = nz(2);
    policy.orphan_ttl_ms = 0;
    for i in 1..=3 {
        policy.now = t(i);
        store.claim_due(&policy).await.expect("claim");
    }
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert!(info.is_poisoned());
    assert_eq!(info.claim_attempts, 2);
    store
        .retry_poisoned_run(&Scope::System, &run.id, t(10))
        .await
        .expect("retry");
    let info = store
        .inspect_run(&Scope::System, &run.id)
        .await
        .expect("inspect");
    assert_eq!(
        (info.wake_at, info.claim_attempts, info.claim_abandons),
        (Some(t(10)), 0, 0)
    );
    assert!(!info.is_poisoned());
    let lease = claim_one(&store, t(10)).await;
    assert_eq!(lease.claim_attempt, 1);
    // A second retry on the now healthy (claimed) run changes nothing.
    assert_no_change(
        &store,
        store.retry_poisoned_run(&Scope::System, &run.id, t(11)),
    )
    .await;
}
