//! Races with real concurrency: many tasks on a multi-threaded runtime against one
//! registry, with exact outcomes.

use std::collections::BTreeSet;
use std::sync::Arc;

use docket_core::store::Backend;
use tokio::task::JoinHandle;

use super::prelude::*;

/// Awaits a spawned task, re-raising its panic so the case fails with the task's message.
async fn joined<T>(handle: JoinHandle<T>) -> T {
    match handle.await {
        Ok(value) => value,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => panic!("a race task was cancelled: {error}"),
    }
}

fn registry(store: &Arc<dyn Backend>) -> &dyn OpsLifecycleRegistry {
    store
        .ops_registry()
        .unwrap_or_else(|| panic!("the backend stopped offering its registry"))
}

/// The ending the `writer`-th contender asks for (four kinds, all legal from Running).
fn ending(writer: usize) -> OperationTransition {
    match writer % 4 {
        0 => OperationTransition::complete(OperationResult::new(format!("writer {writer}"))),
        1 => OperationTransition::fail(format!("writer {writer}")),
        2 => OperationTransition::cancel(Some(format!("writer {writer}"))),
        _ => OperationTransition::mark_retired(),
    }
}

/// Sixteen concurrent endings of one running operation: exactly one wins, each loser gets
/// `InvalidTransition` carrying the winner's status, and the stored record is the winner's
/// with completion sequence 1. Repeated 20 times.
pub async fn sixteen_concurrent_transitions_of_one_operation_have_exactly_one_winner(
    env: &Env<'_>,
) {
    for round in 0..20 {
        let owner = session(round);
        let id = op_id(1);
        env.op_in(&owner, &op_spec(1), OperationStatus::Running)
            .await;
        let tasks: Vec<_> = (0..16)
            .map(|writer| {
                let store = Arc::clone(env.store());
                tokio::spawn(async move {
                    let transition = ending(writer);
                    let result = registry(&store)
                        .transition_operation(&owner, &id, &transition, t(1_000))
                        .await;
                    (writer, transition, result)
                })
            })
            .collect();
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for task in tasks {
            match joined(task).await {
                (writer, transition, Ok(record)) => winners.push((writer, transition, record)),
                (_, transition, Err(error)) => losers.push((transition, error)),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {} winners", winners.len());
        let (_, won, record) = &winners[0];
        let stored = env.op(&owner, &id).await;
        assert_eq!(
            &stored, record,
            "round {round}: the stored record is the winner's"
        );
        assert_eq!(stored.terminal_outcome, won.outcome, "round {round}");
        assert_eq!(
            stored.completion_seq,
            Some(CompletionSeq(1)),
            "round {round}"
        );
        for (transition, error) in losers {
            match error {
                OpsError::InvalidTransition { status, action, .. } => {
                    assert_eq!(status, stored.status, "round {round}: the winner's status");
                    assert_eq!(action, transition.action, "round {round}");
                }
                other => panic!("round {round}: a loser got {other}"),
            }
        }
    }
}

/// Thirty-two concurrent registrations under an admission limit of 4 admit exactly 4; the
/// others are refused with the limit. Repeated 10 times.
pub async fn thirty_two_concurrent_registrations_under_a_limit_of_four_admit_exactly_four(
    env: &Env<'_>,
) {
    for round in 0..10 {
        let owner = session(round);
        let tasks: Vec<_> = (0..32)
            .map(|n| {
                let store = Arc::clone(env.store());
                tokio::spawn(async move {
                    registry(&store)
                        .register_operation(&owner, &op_spec(n), Some(4), t(1_000))
                        .await
                })
            })
            .collect();
        let mut admitted = BTreeSet::new();
        for task in tasks {
            match joined(task).await {
                Ok(record) => {
                    admitted.insert(record.id);
                }
                Err(OpsError::MaxConcurrentExceeded { limit: 4, active }) => {
                    assert_eq!(active, 4, "round {round}: refused at {active} active");
                }
                Err(other) => panic!("round {round}: {other}"),
            }
        }
        assert_eq!(admitted.len(), 4, "round {round}: admitted {admitted:?}");
        let listed = ops_ok(
            env.ops()
                .list_operations(&owner, &OperationQuery::first(100))
                .await,
            "list",
        );
        let stored: BTreeSet<_> = listed.operations.iter().map(|o| o.id).collect();
        assert_eq!(stored, admitted, "round {round}");
    }
}

/// Concurrent registrations of one id: one wins, the others are `AlreadyRegistered`.
pub async fn concurrent_registrations_of_one_id_have_one_winner(env: &Env<'_>) {
    for round in 0..10 {
        let owner = session(round);
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let store = Arc::clone(env.store());
                tokio::spawn(async move {
                    registry(&store)
                        .register_operation(&owner, &op_spec(1), None, t(1_000))
                        .await
                })
            })
            .collect();
        let mut wins = 0;
        for task in tasks {
            match joined(task).await {
                Ok(_) => wins += 1,
                Err(error) => assert_eq!(error.kind(), E::AlreadyRegistered, "{error}"),
            }
        }
        assert_eq!(wins, 1, "round {round}");
    }
}

/// Concurrent endings of many operations of two owners: each owner's completion sequences
/// are exactly 1..=n, each used once, and match the stored records. Repeated 10 times.
pub async fn concurrent_endings_mint_gap_free_sequences_per_owner(env: &Env<'_>) {
    const PER_OWNER: u64 = 16;
    for round in 0..10 {
        let owners = [session(2 * round), session(2 * round + 1)];
        for owner in &owners {
            for n in 0..PER_OWNER {
                env.op_in(owner, &op_spec(n), OperationStatus::Running)
                    .await;
            }
        }
        let tasks: Vec<_> = owners
            .iter()
            .flat_map(|owner| (0..PER_OWNER).map(move |n| (*owner, n)))
            .map(|(owner, n)| {
                let store = Arc::clone(env.store());
                tokio::spawn(async move {
                    let transition = ending(n as usize);
                    let record = registry(&store)
                        .transition_operation(&owner, &op_id(n), &transition, t(1_000))
                        .await;
                    (owner, ops_ok(record, "an ending of a running operation"))
                })
            })
            .collect();
        let mut minted: Vec<(SessionId, u64)> = Vec::new();
        for task in tasks {
            let (owner, record) = joined(task).await;
            let seq = record
                .completion_seq
                .unwrap_or_else(|| panic!("round {round}: an ending without a sequence"));
            minted.push((owner, seq.get()));
        }
        for owner in &owners {
            let mut seqs: Vec<u64> = minted
                .iter()
                .filter(|(o, _)| o == owner)
                .map(|(_, seq)| *seq)
                .collect();
            seqs.sort_unstable();
            let expected: Vec<u64> = (1..=PER_OWNER).collect();
            assert_eq!(seqs, expected, "round {round}: owner {owner}");
            let drained = ops_ok(env.ops().collect_completed(owner).await, "collect");
            let order: Vec<u64> = drained.iter().map(|c| c.completion_seq.get()).collect();
            assert_eq!(
                order, expected,
                "round {round}: stored sequences of {owner}"
            );
        }
    }
}

/// Retiring an owner while its operations are being completed: every operation ends
/// exactly once (completed before the retirement, or terminated by it), sequences stay
/// gap-free, and every write after the retirement is refused.
pub async fn retirement_racing_endings_ends_each_operation_once(env: &Env<'_>) {
    const OPS: u64 = 8;
    for round in 0..10 {
        let owner = session(round);
        for n in 0..OPS {
            env.op_in(&owner, &op_spec(n), OperationStatus::Running)
                .await;
        }
        let completions: Vec<_> = (0..OPS)
            .map(|n| {
                let store = Arc::clone(env.store());
                tokio::spawn(async move {
                    registry(&store)
                        .complete_operation(
                            &owner,
                            &op_id(n),
                            OperationResult::new("raced"),
                            t(1_000),
                        )
                        .await
                })
            })
            .collect();
        let retire = {
            let store = Arc::clone(env.store());
            tokio::spawn(async move {
                registry(&store)
                    .retire_owner(&owner, "unregistered", t(1_000))
                    .await
            })
        };
        let mut completed = BTreeSet::new();
        for (n, task) in completions.into_iter().enumerate() {
            match joined(task).await {
                Ok(_) => {
                    completed.insert(op_id(n as u64));
                }
                Err(error) => assert!(
                    matches!(
                        error,
                        OpsError::OwnerRetired { .. }
                            | OpsError::InvalidTransition {
                                status: OperationStatus::Terminated,
                                ..
                            }
                    ),
                    "round {round}: {error}"
                ),
            }
        }
        let terminated = ops_ok(joined(retire).await, "retire");
        let terminated_ids: BTreeSet<_> = terminated.iter().map(|c| c.id).collect();
        assert!(completed.is_disjoint(&terminated_ids), "round {round}");
        assert_eq!(
            completed.len() + terminated_ids.len(),
            OPS as usize,
            "round {round}: every operation ended once"
        );
        let mut seqs = Vec::new();
        for n in 0..OPS {
            let record = env.op(&owner, &op_id(n)).await;
            let expected = if completed.contains(&op_id(n)) {
                OperationStatus::Completed
            } else {
                OperationStatus::Terminated
            };
            assert_eq!(record.status, expected, "round {round}: operation {n}");
            seqs.push(record.completion_seq.map_or(0, CompletionSeq::get));
        }
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=OPS).collect::<Vec<_>>(), "round {round}");
        let late = env
            .ops()
            .register_operation(&owner, &op_spec(OPS), None, t(2_000))
            .await;
        assert!(
            matches!(late, Err(OpsError::OwnerRetired { .. })),
            "round {round}: {late:?}"
        );
    }
}
