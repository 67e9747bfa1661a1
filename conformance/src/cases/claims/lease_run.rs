//! The run a lease may carry (`docs/storage-contract.md`, “The run in a lease”): a store may
//! hand each lease its run's document, sparing the claimer a read; when it does, the document
//! is exactly what `fetch_run` returns right after the claim. A store that leaves it out
//! passes these cases too — the claimer then reads the run itself.

use docket_core::store::ClaimPolicy;

use crate::cases::prelude::*;

/// Asserts that each lease's run, where the store gave one, is the run `fetch_run` returns
/// now. Returns how many leases carried one.
async fn assert_lease_runs_are_the_stored_runs(env: &Env<'_>, leases: &[ClaimLease]) -> usize {
    let mut carried = 0;
    for lease in leases {
        if let Some(run) = &lease.run {
            carried += 1;
            assert_eq!(
                run,
                &env.fetch(&lease.run_id).await,
                "the run a lease carries must be the stored run at the lease's checkpoint"
            );
            assert_eq!(run.checkpoint_seq, lease.checkpoint_seq);
        }
    }
    carried
}

/// A ready run's lease, a steal's lease and a lease after a commit carry, if anything, the
/// run as `fetch_run` returns it.
pub async fn a_lease_carries_the_stored_run_or_nothing(env: &Env<'_>) {
    let c = env.claimed("r1").await;
    assert_lease_runs_are_the_stored_runs(env, std::slice::from_ref(&c.lease)).await;

    // A steal: the run is the same document, leased again.
    let thief = env.claim(t(10 + 60_000).add_micros(1)).await;
    assert_lease_runs_are_the_stored_runs(env, std::slice::from_ref(&thief)).await;

    // After a commit that releases the run, the next lease carries the new checkpoint.
    let moment = moment_to(&c.run, RunStatus::Running, t(60_020));
    let proposal = with_schedule(
        claimed_commit(&moment, &thief.claim_token, t(60_020)),
        ClaimedSchedule::Release(ReleaseWake::Immediate),
    );
    let committed = ok(
        env.store()
            .commit_claimed(&Scope::System, proposal, moment.events.clone())
            .await,
        "commit_claimed",
    );
    let lease = env.claim(t(60_021)).await;
    assert_eq!(lease.checkpoint_seq, committed.checkpoint_seq);
    assert_lease_runs_are_the_stored_runs(env, std::slice::from_ref(&lease)).await;
}

/// A claim of many runs, oldest first and tenant-fair, pairs each lease with its own run.
pub async fn each_lease_of_a_batch_carries_its_own_run_or_nothing(env: &Env<'_>) {
    for (k, owner) in [tenant("a"), tenant("b"), OwnerScope::Tenantless]
        .iter()
        .enumerate()
    {
        let graph = env.publish_tiny(owner).await;
        for i in 0..3 {
            env.start(&graph, &format!("r{k}{i}"), t(i64::from(i)))
                .await;
        }
    }
    let mut oldest = claim_policy(t(10), 4);
    oldest.policy = ClaimPolicy::Oldest;
    let first = env.claim_all(&oldest).await;
    assert_eq!(first.leases.len(), 4);
    let mut fair = claim_policy(t(10), 5);
    fair.policy = ClaimPolicy::TenantFair;
    let second = env.claim_all(&fair).await;
    assert_eq!(second.leases.len(), 5);
    for batch in [&first, &second] {
        assert_lease_runs_are_the_stored_runs(env, &batch.leases).await;
    }
}
