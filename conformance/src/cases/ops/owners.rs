//! Owners: every record belongs to the session that registered it, and retiring a session
//! ends its live operations and closes it to writes for good while reads keep working.

use super::prelude::*;

/// Every call a retired owner must refuse, each on one of its operations.
fn every_write(
    ops: &dyn OpsLifecycleRegistry,
    owner: SessionId,
    id: OperationId,
) -> Vec<futures::future::BoxFuture<'_, Result<(), OpsError>>> {
    let now = t(5_000);
    let transition = move |transition: OperationTransition| -> futures::future::BoxFuture<'_, _> {
        Box::pin(async move {
            ops.transition_operation(&owner, &id, &transition, now)
                .await
                .map(drop)
        })
    };
    vec![
        Box::pin(async move {
            ops.register_operation(&owner, &op_spec(50), None, now)
                .await
                .map(drop)
        }),
        transition(OperationTransition::provisioning_succeeded()),
        transition(OperationTransition::complete(OperationResult::new("late"))),
        transition(OperationTransition::fail("late")),
        transition(OperationTransition::cancel(None)),
        transition(OperationTransition::abort_provisioning(None)),
        transition(OperationTransition::request_retire()),
        transition(OperationTransition::mark_retired()),
        transition(OperationTransition::report_progress()),
        Box::pin(async move { ops.terminate_owner(&owner, "again", now).await.map(drop) }),
        Box::pin(async move { ops.collect_completed(&owner).await.map(drop) }),
    ]
}

/// Another owner's operation is `NotFound` on every call, exactly like an unknown id, and
/// invisible to its reads.
pub async fn another_owners_operation_is_not_found(env: &Env<'_>) {
    let (owner, stranger) = (session(1), session(2));
    let id = op_id(1);
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    let ops = env.ops();
    let now = t(1_000);
    for transition in [
        OperationTransition::provisioning_succeeded(),
        OperationTransition::complete(OperationResult::new("mine")),
        OperationTransition::fail("mine"),
        OperationTransition::cancel(None),
        OperationTransition::request_retire(),
        OperationTransition::mark_retired(),
        OperationTransition::report_progress(),
    ] {
        let error = env
            .ops_rejected(
                E::NotFound,
                ops.transition_operation(&stranger, &id, &transition, now),
            )
            .await;
        assert!(matches!(error, OpsError::NotFound { id: missing } if missing == id));
    }
    assert_eq!(
        ops_ok(ops.operation_snapshot(&stranger, &id).await, "read"),
        None
    );
    let terminated = ops_ok(ops.terminate_owner(&stranger, "not yours", now).await, "t");
    assert!(terminated.is_empty());
    let listed = ops_ok(
        ops.list_operations(&stranger, &OperationQuery::first(10))
            .await,
        "list",
    );
    assert!(listed.operations.is_empty());
    assert_eq!(
        env.op(&owner, &id).await.status,
        OperationStatus::Running,
        "the owner's record is untouched"
    );
}

/// The same id under two owners is two operations with separate lives and sequences.
pub async fn the_same_id_under_two_owners_is_two_operations(env: &Env<'_>) {
    let (a, b) = (session(1), session(2));
    let spec = op_spec(1);
    env.op_in(&a, &spec, OperationStatus::Completed).await;
    let other = env.register_op(&b, &spec).await;
    assert_eq!(other.status, OperationStatus::Provisioning);
    assert_eq!(other.owner, b);
    assert_eq!(
        env.op(&a, &spec.id).await.status,
        OperationStatus::Completed
    );
    let ended = ops_ok(
        env.ops()
            .abort_provisioning(&b, &spec.id, None, t(1_000))
            .await,
        "abort",
    );
    assert_eq!(ended.completion_seq, Some(CompletionSeq(1)));
    let listed = ops_ok(
        env.ops()
            .list_operations(&a, &OperationQuery::first(10))
            .await,
        "list",
    );
    assert_eq!(listed.operations.len(), 1);
    assert_eq!(listed.operations[0].owner, a);
}

/// Retiring an owner terminates its live operations in id order, and from then on every
/// write of that owner is `OwnerRetired` and changes nothing.
pub async fn a_retired_owner_refuses_every_write(env: &Env<'_>) {
    let owner = session(1);
    let ops = env.ops();
    env.op_in(&owner, &op_spec(0), OperationStatus::Completed)
        .await;
    env.op_in(&owner, &op_spec(2), OperationStatus::Running)
        .await;
    env.op_in(&owner, &op_spec(1), OperationStatus::Provisioning)
        .await;
    assert!(!ops_ok(ops.is_owner_retired(&owner).await, "retired?"));
    let terminated = ops_ok(
        ops.retire_owner(&owner, "unregistered", t(1_000)).await,
        "retire",
    );
    let ids: Vec<_> = terminated
        .iter()
        .map(|c| (c.id, c.completion_seq.get()))
        .collect();
    assert_eq!(ids, vec![(op_id(1), 2), (op_id(2), 3)]);
    assert!(ops_ok(ops.is_owner_retired(&owner).await, "retired?"));
    for (index, write) in every_write(ops, owner, op_id(2)).into_iter().enumerate() {
        let error = env.ops_rejected(E::OwnerRetired, write).await;
        assert!(
            matches!(error, OpsError::OwnerRetired { owner: o } if o == owner),
            "write {index}: {error}"
        );
    }
    // An id the owner never held: the retired flag is checked before the record.
    for write in every_write(ops, owner, op_id(77)) {
        env.ops_rejected(E::OwnerRetired, write).await;
    }
}

/// A retired owner's records stay readable: snapshots, listing, the retired flag and
/// watches of ended operations.
pub async fn reads_keep_working_after_retirement(env: &Env<'_>) {
    let owner = session(1);
    let ops = env.ops();
    let done = env
        .op_in(&owner, &op_spec(0), OperationStatus::Completed)
        .await;
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    ops_ok(ops.retire_owner(&owner, "bye", t(1_000)).await, "retire");
    assert_eq!(env.op(&owner, &op_id(0)).await, done);
    let live = env.op(&owner, &op_id(1)).await;
    assert_eq!(live.status, OperationStatus::Terminated);
    assert_eq!(
        live.terminal_outcome,
        Some(OperationTerminalOutcome::Terminated {
            reason: "bye".into()
        })
    );
    let listed = ops_ok(
        ops.list_operations(&owner, &OperationQuery::first(10))
            .await,
        "list",
    );
    assert_eq!(listed.operations.len(), 2);
    let watched = ops_ok(
        ops.await_completion(&owner, &op_id(1), std::time::Duration::from_secs(3_600))
            .await,
        "watch",
    );
    assert_eq!(Some(watched), live.terminal_outcome);
}

/// Retiring a retired owner changes nothing and ends nothing.
pub async fn retiring_twice_changes_nothing(env: &Env<'_>) {
    let owner = session(1);
    env.op_in(&owner, &op_spec(0), OperationStatus::Running)
        .await;
    let first = ops_ok(
        env.ops().retire_owner(&owner, "bye", t(1_000)).await,
        "retire",
    );
    assert_eq!(first.len(), 1);
    let second = env
        .ops_unchanged(env.ops().retire_owner(&owner, "again", t(2_000)))
        .await;
    assert!(second.is_empty(), "{second:?}");
}

/// Retirement is per owner: other owners keep working, and an owner never seen can be
/// retired, which closes it before its first registration.
pub async fn retirement_is_per_owner(env: &Env<'_>) {
    let (retired, open, unseen) = (session(1), session(2), session(3));
    let ops = env.ops();
    env.op_in(&retired, &op_spec(0), OperationStatus::Running)
        .await;
    env.op_in(&open, &op_spec(0), OperationStatus::Running)
        .await;
    ops_ok(ops.retire_owner(&retired, "bye", t(1_000)).await, "retire");
    assert!(!ops_ok(ops.is_owner_retired(&open).await, "open?"));
    ops_ok(
        ops.complete_operation(&open, &op_id(0), OperationResult::new("ok"), t(1_001))
            .await,
        "the other owner still writes",
    );
    assert!(!ops_ok(ops.is_owner_retired(&unseen).await, "unseen?"));
    let nothing = ops_ok(
        ops.retire_owner(&unseen, "never used", t(1_002)).await,
        "retire",
    );
    assert!(nothing.is_empty());
    assert!(ops_ok(
        ops.is_owner_retired(&unseen).await,
        "unseen retired?"
    ));
    env.ops_rejected(
        E::OwnerRetired,
        ops.register_operation(&unseen, &op_spec(0), None, t(1_003)),
    )
    .await;
}

/// Terminating an owner (without retiring it) leaves it open for new registrations.
pub async fn terminate_owner_leaves_the_owner_open(env: &Env<'_>) {
    let owner = session(1);
    env.op_in(&owner, &op_spec(0), OperationStatus::Running)
        .await;
    let ops = env.ops();
    let ended = ops_ok(
        ops.terminate_owner(&owner, "restart", t(1_000)).await,
        "terminate",
    );
    assert_eq!(ended.len(), 1);
    assert!(!ops_ok(ops.is_owner_retired(&owner).await, "retired?"));
    let fresh = env.register_op(&owner, &op_spec(1)).await;
    assert_eq!(fresh.status, OperationStatus::Provisioning);
}
