//! Durability: a new store value opened on the same storage (as a restarted process would
//! open it) finds every record, every owner's retired flag and every owner's next completion
//! sequence exactly as they were.

use std::sync::Arc;

use docket_core::store::Backend;

use super::prelude::*;

/// Everything readable about `owners` through `store`: each owner's retired flag and every
/// record, page by page.
async fn observe(
    store: &Arc<dyn Backend>,
    owners: &[SessionId],
) -> Vec<(SessionId, bool, Vec<OperationLifecycleSnapshot>)> {
    let ops = store
        .ops_registry()
        .unwrap_or_else(|| panic!("the reopened store offers no registry"));
    let mut seen = Vec::new();
    for owner in owners {
        let retired = ops_ok(ops.is_owner_retired(owner).await, "retired?");
        let mut records = Vec::new();
        let mut query = OperationQuery::first(3);
        loop {
            let page = ops_ok(ops.list_operations(owner, &query).await, "list");
            records.extend(page.operations);
            if !page.has_more {
                break;
            }
            query.after = page.next_after;
        }
        seen.push((*owner, retired, records));
    }
    seen
}

/// Records in every status, progress, outcomes and retirement survive a reopen; the
/// reopened store continues each owner's completion sequence and keeps refusing the
/// retired owner's writes.
pub async fn everything_survives_a_reopen(env: &Env<'_>) {
    let (a, b, c) = (session(1), session(2), session(3));
    for (n, status) in OperationStatus::ALL.into_iter().enumerate() {
        if status != OperationStatus::Terminated {
            env.op_in(&a, &op_spec(n as u64), status).await;
        }
    }
    let ops = env.ops();
    ops_ok(ops.report_progress(&a, &op_id(1), t(900)).await, "progress");
    let spec = OperationSpec::new(op_id(40), OperationKind::DetachedJobWait, "wait — 待つ")
        .with_source(OperationSource::detached_job("realm-a", "job_123"))
        .with_source_label("label");
    env.register_op(&b, &spec).await;
    ops_ok(
        ops.provisioning_succeeded(&b, &spec.id, t(950)).await,
        "start",
    );
    env.op_in(&c, &op_spec(0), OperationStatus::Running).await;
    ops_ok(ops.retire_owner(&c, "gone", t(990)).await, "retire c");
    let owners = [a, b, c];
    let before = observe(env.store(), &owners).await;
    let raw_before = env.ops_snapshot().await;

    let reopened = env.reopen().await;
    let after = observe(&reopened, &owners).await;
    assert_eq!(after, before, "the reopened store reads what was written");
    assert_eq!(
        env.ops_snapshot().await,
        raw_before,
        "reopening changed stored bytes"
    );
    let registry = reopened
        .ops_registry()
        .unwrap_or_else(|| panic!("the reopened store offers no registry"));
    let done = ops_ok(
        registry
            .complete_operation(
                &b,
                &spec.id,
                OperationResult::new("after restart"),
                t(2_000),
            )
            .await,
        "complete after reopening",
    );
    assert_eq!(done.completion_seq, Some(CompletionSeq(1)));
    let ended_before = before
        .iter()
        .find(|(owner, _, _)| *owner == a)
        .map_or(0, |(_, _, records)| {
            records.iter().filter(|r| r.is_terminal()).count() as u64
        });
    let next = ops_ok(
        registry
            .fail_operation(&a, &op_id(1), "after restart".into(), t(2_001))
            .await,
        "fail after reopening",
    );
    assert_eq!(
        next.completion_seq,
        Some(CompletionSeq(ended_before + 1)),
        "the owner's sequence continues"
    );
    let refused = registry
        .register_operation(&c, &op_spec(9), None, t(2_002))
        .await;
    assert!(
        matches!(refused, Err(OpsError::OwnerRetired { .. })),
        "{refused:?}"
    );
    env.ops_rejected(
        E::AlreadyRegistered,
        registry.register_operation(&b, &spec, None, t(2_003)),
    )
    .await;
}

/// A write through the reopened store is visible through the first one, and the other way
/// round: both read the same storage.
pub async fn two_store_values_on_one_storage_see_each_others_writes(env: &Env<'_>) {
    let owner = session(1);
    let reopened = env.reopen().await;
    let second = reopened
        .ops_registry()
        .unwrap_or_else(|| panic!("the reopened store offers no registry"));
    ops_ok(
        second
            .register_operation(&owner, &op_spec(1), None, t(1_000))
            .await,
        "register through the second value",
    );
    ops_ok(
        env.ops()
            .provisioning_succeeded(&owner, &op_id(1), t(1_001))
            .await,
        "start through the first",
    );
    let seen = ops_ok(second.operation_snapshot(&owner, &op_id(1)).await, "read")
        .unwrap_or_else(|| panic!("the second value lost the record"));
    assert_eq!(seen.status, OperationStatus::Running);
    assert_eq!(seen.started_at, Some(t(1_001)));
}
