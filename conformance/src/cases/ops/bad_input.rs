//! Bad input is a typed `InvalidArgument` that writes nothing, checked before anything is
//! read (so even a retired owner or an unknown operation gets `InvalidArgument`).

use std::time::Duration;

use docket_core::model::MAX_PAGE_LIMIT;

use super::prelude::*;

fn nil_session() -> SessionId {
    "00000000-0000-0000-0000-000000000000"
        .parse()
        .expect("the nil UUID parses")
}

fn nil_op() -> OperationId {
    "00000000-0000-0000-0000-000000000000"
        .parse()
        .expect("the nil UUID parses")
}

/// Refuses `spec` for `owner` with `InvalidArgument`, writing nothing.
async fn refuse_registration(env: &Env<'_>, owner: &SessionId, spec: &OperationSpec) {
    env.ops_rejected(
        E::InvalidArgument,
        env.ops().register_operation(owner, spec, None, t(1_000)),
    )
    .await;
}

/// Nil owners and nil operation ids (the "empty" ids) are refused by every call.
pub async fn nil_owners_and_ids_are_invalid_arguments(env: &Env<'_>) {
    let owner = session(1);
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    let ops = env.ops();
    let now = t(1_000);
    refuse_registration(env, &nil_session(), &op_spec(2)).await;
    let mut nil_spec = op_spec(2);
    nil_spec.id = nil_op();
    refuse_registration(env, &owner, &nil_spec).await;
    let start = OperationTransition::provisioning_succeeded();
    env.ops_rejected(
        E::InvalidArgument,
        ops.transition_operation(&owner, &nil_op(), &start, now),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.transition_operation(&nil_session(), &op_id(1), &start, now),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.terminate_owner(&nil_session(), "r", now),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.retire_owner(&nil_session(), "r", now),
    )
    .await;
    env.ops_rejected(E::InvalidArgument, ops.collect_completed(&nil_session()))
        .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.operation_snapshot(&owner, &nil_op()),
    )
    .await;
    env.ops_rejected(E::InvalidArgument, ops.is_owner_retired(&nil_session()))
        .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.list_operations(&nil_session(), &OperationQuery::first(10)),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.await_completion(&owner, &nil_op(), Duration::from_millis(1)),
    )
    .await;
}

/// Display names must be 1 to 1024 bytes without control characters; source labels at
/// most 1024 bytes without control characters.
pub async fn empty_and_oversized_names_are_refused(env: &Env<'_>) {
    let owner = session(1);
    for name in [
        String::new(),
        "n".repeat(1_025),
        "tab\there".into(),
        "nul\0".into(),
    ] {
        let mut spec = op_spec(1);
        spec.display_name = name;
        refuse_registration(env, &owner, &spec).await;
    }
    for label in ["l".repeat(1_025), "line\nbreak".into()] {
        let spec = op_spec(1).with_source_label(label);
        refuse_registration(env, &owner, &spec).await;
    }
    let mut longest = op_spec(1).with_source_label("l".repeat(1_024));
    longest.display_name = "é".repeat(512);
    let stored = env.register_op(&owner, &longest).await;
    assert_eq!(stored.display_name.len(), 1_024);
    assert_eq!(env.op(&owner, &op_id(1)).await, stored);
}

/// A custom kind with a malformed name is refused; names of unknown kinds do not parse.
pub async fn malformed_and_unknown_kinds_are_refused(env: &Env<'_>) {
    let owner = session(1);
    for name in ["", "Upper", "-dash-first", "with space", &"k".repeat(65)] {
        let mut spec = op_spec(1);
        spec.kind = OperationKind::Custom(name.to_owned());
        refuse_registration(env, &owner, &spec).await;
    }
    for name in ["frobnicate", "custom:", "DetachedJobWait", "custom:Nope"] {
        let parsed = OperationKind::parse(name);
        assert!(
            matches!(parsed, Err(OpsError::InvalidArgument { .. })),
            "{name:?} parsed as {parsed:?}"
        );
    }
    let mut spec = op_spec(1);
    spec.kind = OperationKind::custom("k".repeat(64)).expect("64 bytes is the maximum");
    assert_eq!(env.register_op(&owner, &spec).await.kind, spec.kind);
}

/// Sources with empty, oversized or control-character ids, or a nil child session, are
/// refused.
pub async fn malformed_sources_are_refused(env: &Env<'_>) {
    let owner = session(1);
    for source in [
        OperationSource::detached_job("", "job"),
        OperationSource::detached_job("realm", ""),
        OperationSource::detached_job("r".repeat(256), "job"),
        OperationSource::detached_job("realm", "j\u{7}"),
        OperationSource::session_child(nil_session()),
    ] {
        refuse_registration(env, &owner, &op_spec(1).with_source(source)).await;
    }
    let widest = OperationSource::detached_job("r".repeat(255), "j".repeat(255));
    let spec = op_spec(1).with_source(widest.clone());
    assert_eq!(env.register_op(&owner, &spec).await.source, Some(widest));
}

/// A transition whose outcome is missing, superfluous or of another variant than its
/// action's target status is refused; so is termination of a single operation.
pub async fn an_outcome_that_does_not_fit_its_action_is_refused(env: &Env<'_>) {
    let owner = session(1);
    let id = op_id(1);
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    let ops = env.ops();
    let refused = [
        OperationTransition {
            action: OperationAction::Complete,
            outcome: Some(OperationTerminalOutcome::Failed { error: "e".into() }),
        },
        OperationTransition {
            action: OperationAction::Fail,
            outcome: Some(OperationTerminalOutcome::Completed(OperationResult::new(
                "x",
            ))),
        },
        OperationTransition {
            action: OperationAction::Cancel,
            outcome: Some(OperationTerminalOutcome::Aborted { reason: None }),
        },
        OperationTransition {
            action: OperationAction::MarkRetired,
            outcome: None,
        },
        OperationTransition {
            action: OperationAction::Complete,
            outcome: None,
        },
        OperationTransition {
            action: OperationAction::ReportProgress,
            outcome: Some(OperationTerminalOutcome::Retired),
        },
        OperationTransition {
            action: OperationAction::ProvisioningSucceeded,
            outcome: Some(OperationTerminalOutcome::Cancelled { reason: None }),
        },
        OperationTransition {
            action: OperationAction::Terminate,
            outcome: Some(OperationTerminalOutcome::Terminated { reason: "r".into() }),
        },
    ];
    for transition in &refused {
        env.ops_rejected(
            E::InvalidArgument,
            ops.transition_operation(&owner, &id, transition, t(1_000)),
        )
        .await;
    }
    // Bad input is refused before the record is even looked at.
    env.ops_rejected(
        E::InvalidArgument,
        ops.transition_operation(&owner, &op_id(99), &refused[0], t(1_000)),
    )
    .await;
    assert_eq!(env.op(&owner, &id).await.status, OperationStatus::Running);
}

/// Errors and reasons may be at most 64 KiB, result content at most 1 MiB; both limits are
/// inclusive.
pub async fn oversized_texts_are_refused(env: &Env<'_>) {
    let owner = session(1);
    for n in 1..=4 {
        env.op_in(&owner, &op_spec(n), OperationStatus::Running)
            .await;
    }
    let ops = env.ops();
    let now = t(1_000);
    let kib64 = 64 * 1024;
    let mib = 1024 * 1024;
    env.ops_rejected(
        E::InvalidArgument,
        ops.fail_operation(&owner, &op_id(1), "e".repeat(kib64 + 1), now),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.cancel_operation(&owner, &op_id(1), Some("r".repeat(kib64 + 1)), now),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.complete_operation(
            &owner,
            &op_id(1),
            OperationResult::new("c".repeat(mib + 1)),
            now,
        ),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.terminate_owner(&owner, &"r".repeat(kib64 + 1), now),
    )
    .await;
    env.ops_rejected(
        E::InvalidArgument,
        ops.retire_owner(&owner, &"r".repeat(kib64 + 1), now),
    )
    .await;
    let big = OperationResult::new("c".repeat(mib));
    ops_ok(
        ops.complete_operation(&owner, &op_id(1), big.clone(), now)
            .await,
        "1 MiB of content",
    );
    assert_eq!(
        env.op(&owner, &op_id(1)).await.terminal_outcome,
        Some(OperationTerminalOutcome::Completed(big))
    );
    ops_ok(
        ops.fail_operation(&owner, &op_id(2), "e".repeat(kib64), now)
            .await,
        "64 KiB of error",
    );
}

/// An admission limit of zero would admit nothing and is refused, and listing limits must
/// be within `1..=MAX_PAGE_LIMIT`.
pub async fn zero_limits_and_page_limits_out_of_range_are_refused(env: &Env<'_>) {
    let owner = session(1);
    let ops = env.ops();
    env.ops_rejected(
        E::InvalidArgument,
        ops.register_operation(&owner, &op_spec(1), Some(0), t(1_000)),
    )
    .await;
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        env.ops_rejected(
            E::InvalidArgument,
            ops.list_operations(&owner, &OperationQuery::first(limit)),
        )
        .await;
    }
    ops_ok(
        ops.list_operations(&owner, &OperationQuery::first(MAX_PAGE_LIMIT))
            .await,
        "the maximum limit",
    );
}
