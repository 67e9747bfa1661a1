//! Wake hints (`docs/storage-contract.md`, “Wake hints”). A backend that declares
//! [`crate::Capabilities::wakeups`] must deliver a hint to every subscriber when something becomes
//! due; one that does not must return `None` — every case asserts one or the other, none is
//! skipped.

use std::time::Duration;

use futures::StreamExt;

use docket_core::store::Wakeups;

use crate::cases::prelude::*;

/// How long a hint may take to arrive.
const HINT_DEADLINE: Duration = Duration::from_secs(10);

/// A fresh subscription, or `None` after asserting the backend offers none (as declared).
fn subscribe(env: &Env<'_>) -> Option<Wakeups> {
    let stream = env.store().wakeups();
    if env.capabilities().wakeups {
        assert!(
            stream.is_some(),
            "the harness declares wakeups but the backend returns no stream"
        );
    } else {
        assert!(
            stream.is_none(),
            "the backend offers wakeups but the harness does not declare them"
        );
    }
    stream
}

/// Waits for the next hint within the deadline.
async fn expect_hint(stream: &mut Wakeups, what: &str) {
    match tokio::time::timeout(HINT_DEADLINE, stream.next()).await {
        Ok(Some(())) => {}
        Ok(None) => panic!("the hint stream ended instead of hinting {what}"),
        Err(_) => panic!("no hint within {HINT_DEADLINE:?} after {what}"),
    }
}

/// The declared capability and the backend agree: a stream exactly when declared.
pub async fn wakeups_are_offered_exactly_when_declared(env: &Env<'_>) {
    let first = subscribe(env).is_some();
    let second = subscribe(env).is_some();
    assert_eq!(first, second, "every call answers the same");
}

/// A due initialize wakes a subscriber.
pub async fn a_due_initialize_wakes_a_subscriber(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let Some(mut hints) = subscribe(env) else {
        return;
    };
    env.start(&graph, "r1", t(0)).await;
    expect_hint(&mut hints, "a due initialize").await;
}

/// Every subscriber gets its own hint.
pub async fn every_subscriber_gets_its_own_hint(env: &Env<'_>) {
    let graph = env.publish_tiny(&OwnerScope::Tenantless).await;
    let (Some(mut a), Some(mut b)) = (subscribe(env), subscribe(env)) else {
        return;
    };
    env.start(&graph, "r1", t(0)).await;
    expect_hint(&mut a, "a due initialize (first subscriber)").await;
    expect_hint(&mut b, "a due initialize (second subscriber)").await;
}

/// A claimed commit that releases with an immediate wake hints.
pub async fn an_immediate_release_commit_wakes_a_subscriber(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let Some(mut hints) = subscribe(env) else {
        return;
    };
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    let proposal = with_schedule(
        claimed_commit(&moment, &c.lease.claim_token, t(20)),
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    );
    ok(
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone())
            .await,
        "commit_claimed",
    );
    expect_hint(&mut hints, "an immediate release").await;
}

/// A signal commit that leaves the run due hints.
pub async fn a_due_signal_commit_wakes_a_subscriber(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    let Some(mut hints) = subscribe(env) else {
        return;
    };
    let moment = moment_to(&c.run, RunStatus::Running, t(20));
    ok(
        env.store()
            .commit_unclaimed(
                &Scope::System,
                c.run.checkpoint_seq,
                unclaimed_commit(&moment, t(20)),
                moment.events.clone(),
            )
            .await,
        "commit_unclaimed",
    );
    expect_hint(&mut hints, "a due signal commit").await;
}

/// Recovering a poisoned run makes it due, and hints.
pub async fn poison_recovery_wakes_a_subscriber(env: &Env<'_>) {
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
    assert_eq!(env.claim_all(&policy).await.poisoned.len(), 1);
    let Some(mut hints) = subscribe(env) else {
        return;
    };
    ok(
        env.store()
            .retry_poisoned_run(&Scope::System, &run.id, t(4))
            .await,
        "retry_poisoned_run",
    );
    expect_hint(&mut hints, "a poison recovery").await;
}
