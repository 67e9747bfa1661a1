//! What a record holds over its life: the registered spec and times, outcomes, progress,
//! completion sequences, collection, the admission limit, retention, listing, and the
//! completion watch.

use std::sync::Arc;
use std::time::Duration;

use super::prelude::*;

/// How long a watch may take to notice an ending.
const WATCH_DEADLINE: Duration = Duration::from_secs(30);

fn query(limit: u32, after: Option<OperationCursor>) -> OperationQuery {
    OperationQuery { limit, after }
}

/// The display names of a page, in order.
fn names(page: &docket_core::ops::OperationPage) -> Vec<&str> {
    page.operations
        .iter()
        .map(|o| o.display_name.as_str())
        .collect()
}

/// Registration stores the spec exactly (custom kind, source, label, Unicode name), the
/// owner and the caller's instant, in Provisioning with nothing else set.
pub async fn registration_stores_the_spec_the_owner_and_the_time(env: &Env<'_>) {
    let owner = session(1);
    let spec = OperationSpec::new(
        op_id(7),
        OperationKind::custom("mob.member-child_2").expect("a valid custom kind"),
        "attendre la tâche — 待つ",
    )
    .with_source_label("scheduler/tick 42")
    .with_source(OperationSource::detached_job("realm-a", "job_123"));
    let returned = ops_ok(
        env.ops()
            .register_operation(&owner, &spec, None, t(1_000))
            .await,
        "register",
    );
    let expected = OperationLifecycleSnapshot {
        id: op_id(7),
        owner,
        kind: spec.kind.clone(),
        display_name: "attendre la tâche — 待つ".into(),
        source_label: "scheduler/tick 42".into(),
        source: Some(OperationSource::detached_job("realm-a", "job_123")),
        status: OperationStatus::Provisioning,
        progress_count: 0,
        terminal_outcome: None,
        completion_seq: None,
        created_at: t(1_000),
        started_at: None,
        completed_at: None,
    };
    assert_eq!(returned, expected);
    assert_eq!(env.op(&owner, &op_id(7)).await, expected);
    let child = session(9);
    let with_child = OperationSpec::new(op_id(8), OperationKind::DetachedJobWait, "child")
        .with_source(OperationSource::session_child(child));
    let stored = env.register_op(&owner, &with_child).await;
    assert_eq!(stored.child_session_id(), Some(child));
    assert_eq!(env.op(&owner, &op_id(8)).await.source, with_child.source);
}

/// A start stamps `started_at`, an ending stamps `completed_at`, and the elapsed time runs
/// from registration to the ending.
pub async fn a_life_stamps_its_start_and_its_end(env: &Env<'_>) {
    let owner = session(1);
    let ops = env.ops();
    let id = op_id(1);
    ops_ok(
        ops.register_operation(&owner, &op_spec(1), None, t(1_000))
            .await,
        "register",
    );
    let started = ops_ok(
        ops.provisioning_succeeded(&owner, &id, t(1_500)).await,
        "start",
    );
    assert_eq!(started.started_at, Some(t(1_500)));
    assert_eq!(started.completed_at, None);
    assert_eq!(started.elapsed_ms(), None);
    let done = ops_ok(
        ops.complete_operation(&owner, &id, OperationResult::new("ok"), t(4_000))
            .await,
        "complete",
    );
    assert_eq!(done.created_at, t(1_000));
    assert_eq!(done.started_at, Some(t(1_500)));
    assert_eq!(done.completed_at, Some(t(4_000)));
    assert_eq!(done.elapsed_ms(), Some(3_000));
    assert_eq!(env.op(&owner, &id).await, done);
}

/// Every way of ending stores its outcome exactly, free texts included (NUL, Unicode,
/// empty).
pub async fn every_ending_records_its_exact_outcome(env: &Env<'_>) {
    let owner = session(1);
    let ops = env.ops();
    let result = OperationResult {
        content: "line one\nline two\u{0}after NUL — ünïcode 🚀".into(),
        is_error: true,
        duration_ms: u64::from(u32::MAX) + 5,
        tokens_used: 12_345,
    };
    let mut expected = Vec::new();
    for (n, status) in [
        (1, OperationStatus::Running),
        (2, OperationStatus::Running),
        (3, OperationStatus::Provisioning),
        (4, OperationStatus::Running),
        (5, OperationStatus::Retiring),
        (6, OperationStatus::Provisioning),
    ] {
        env.op_in(&owner, &op_spec(n), status).await;
    }
    let now = t(1_000);
    ops_ok(
        ops.complete_operation(&owner, &op_id(1), result.clone(), now)
            .await,
        "complete",
    );
    expected.push((1, OperationTerminalOutcome::Completed(result)));
    ops_ok(
        ops.fail_operation(&owner, &op_id(2), String::new(), now)
            .await,
        "fail",
    );
    expected.push((
        2,
        OperationTerminalOutcome::Failed {
            error: String::new(),
        },
    ));
    ops_ok(
        ops.abort_provisioning(&owner, &op_id(3), None, now).await,
        "abort",
    );
    expected.push((3, OperationTerminalOutcome::Aborted { reason: None }));
    ops_ok(
        ops.cancel_operation(&owner, &op_id(4), Some("tab\tand \"quotes\"".into()), now)
            .await,
        "cancel",
    );
    expected.push((
        4,
        OperationTerminalOutcome::Cancelled {
            reason: Some("tab\tand \"quotes\"".into()),
        },
    ));
    ops_ok(ops.mark_retired(&owner, &op_id(5), now).await, "retire");
    expected.push((5, OperationTerminalOutcome::Retired));
    ops_ok(
        ops.terminate_owner(&owner, "session \u{0} closed", now)
            .await,
        "terminate",
    );
    expected.push((
        6,
        OperationTerminalOutcome::Terminated {
            reason: "session \u{0} closed".into(),
        },
    ));
    for (seq, (n, outcome)) in expected.into_iter().enumerate() {
        let stored = env.op(&owner, &op_id(n)).await;
        assert_eq!(stored.terminal_outcome, Some(outcome), "operation {n}");
        assert_eq!(
            stored.completion_seq,
            Some(CompletionSeq(seq as u64 + 1)),
            "operation {n}"
        );
    }
}

/// Once terminal, a record never changes: every call on it is refused and its bytes stay.
pub async fn terminal_records_are_immutable(env: &Env<'_>) {
    let owner = session(1);
    let spec = op_spec(1);
    let id = spec.id;
    let done = env.op_in(&owner, &spec, OperationStatus::Completed).await;
    let ops = env.ops();
    let now = t(1_000);
    env.ops_rejected(
        E::AlreadyRegistered,
        ops.register_operation(&owner, &spec, None, now),
    )
    .await;
    let transitions = [
        OperationTransition::provisioning_succeeded(),
        OperationTransition::complete(OperationResult::new("again")),
        OperationTransition::fail("late"),
        OperationTransition::cancel(None),
        OperationTransition::abort_provisioning(None),
        OperationTransition::request_retire(),
        OperationTransition::mark_retired(),
        OperationTransition::report_progress(),
    ];
    for transition in &transitions {
        env.ops_rejected(
            E::InvalidTransition,
            ops.transition_operation(&owner, &id, transition, now),
        )
        .await;
    }
    let terminated = env
        .ops_unchanged(ops.terminate_owner(&owner, "later", now))
        .await;
    assert!(terminated.is_empty());
    assert_eq!(env.op(&owner, &id).await, done);
}

/// Progress ticks count one each while running and while retiring, and the status stays.
pub async fn progress_ticks_count_while_running_and_retiring(env: &Env<'_>) {
    let owner = session(1);
    let id = op_id(1);
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    let ops = env.ops();
    for tick in 1..=3 {
        let record = ops_ok(
            ops.report_progress(&owner, &id, t(1_000 + tick)).await,
            "progress",
        );
        assert_eq!(record.progress_count, tick as u64);
        assert_eq!(record.status, OperationStatus::Running);
    }
    ops_ok(ops.request_retire(&owner, &id, t(2_000)).await, "retire");
    let record = ops_ok(ops.report_progress(&owner, &id, t(2_001)).await, "progress");
    assert_eq!(record.progress_count, 4);
    assert_eq!(record.status, OperationStatus::Retiring);
    let done = ops_ok(
        ops.complete_operation(&owner, &id, OperationResult::new("ok"), t(3_000))
            .await,
        "complete",
    );
    assert_eq!(done.progress_count, 4, "the count survives the ending");
}

/// Each owner counts its own endings from 1, one per terminal transition, through
/// termination and collection alike.
pub async fn completion_sequences_count_each_owners_endings_from_one(env: &Env<'_>) {
    let (a, b) = (session(1), session(2));
    let ops = env.ops();
    for n in 0..5 {
        env.op_in(&a, &op_spec(n), OperationStatus::Running).await;
    }
    for n in 0..2 {
        env.op_in(&b, &op_spec(n), OperationStatus::Running).await;
    }
    let seq_of = |r: OperationLifecycleSnapshot| r.completion_seq.map(CompletionSeq::get);
    let ended = ops_ok(
        ops.complete_operation(&a, &op_id(4), OperationResult::new("x"), t(1_000))
            .await,
        "a4",
    );
    assert_eq!(seq_of(ended), Some(1));
    let ended = ops_ok(
        ops.cancel_operation(&b, &op_id(1), None, t(1_001)).await,
        "b1",
    );
    assert_eq!(seq_of(ended), Some(1), "owner b counts on its own");
    let ended = ops_ok(
        ops.fail_operation(&a, &op_id(0), "e".into(), t(1_002))
            .await,
        "a0",
    );
    assert_eq!(seq_of(ended), Some(2));
    let ended = ops_ok(ops.mark_retired(&b, &op_id(0), t(1_003)).await, "b0");
    assert_eq!(seq_of(ended), Some(2));
    let terminated = ops_ok(ops.terminate_owner(&a, "stop", t(1_004)).await, "terminate");
    let order: Vec<_> = terminated
        .iter()
        .map(|c| (c.id, c.completion_seq.get()))
        .collect();
    assert_eq!(
        order,
        vec![(op_id(1), 3), (op_id(2), 4), (op_id(3), 5)],
        "live operations end in id order"
    );
    let drained = ops_ok(ops.collect_completed(&a).await, "collect");
    assert_eq!(drained.len(), 5);
    env.op_in(&a, &op_spec(9), OperationStatus::Running).await;
    let ended = ops_ok(
        ops.cancel_operation(&a, &op_id(9), None, t(2_000)).await,
        "a9",
    );
    assert_eq!(seq_of(ended), Some(6), "a sequence is never reused");
}

/// Collection drains the owner's terminal records in completion order, leaves live ones,
/// frees the ids for a new registration; a second collection finds nothing and writes
/// nothing.
pub async fn collect_completed_drains_in_completion_order_and_frees_the_ids(env: &Env<'_>) {
    let owner = session(1);
    let ops = env.ops();
    for n in 0..4 {
        env.op_in(&owner, &op_spec(n), OperationStatus::Running)
            .await;
    }
    // End them out of id order: 2, 0, 3 (1 stays live).
    ops_ok(
        ops.complete_operation(&owner, &op_id(2), OperationResult::new("two"), t(1_000))
            .await,
        "2",
    );
    ops_ok(
        ops.fail_operation(&owner, &op_id(0), "zero".into(), t(1_001))
            .await,
        "0",
    );
    ops_ok(
        ops.cancel_operation(&owner, &op_id(3), None, t(1_002))
            .await,
        "3",
    );
    let drained = ops_ok(ops.collect_completed(&owner).await, "collect");
    let expected = vec![
        CompletedOperation {
            id: op_id(2),
            completion_seq: CompletionSeq(1),
            outcome: OperationTerminalOutcome::Completed(OperationResult::new("two")),
        },
        CompletedOperation {
            id: op_id(0),
            completion_seq: CompletionSeq(2),
            outcome: OperationTerminalOutcome::Failed {
                error: "zero".into(),
            },
        },
        CompletedOperation {
            id: op_id(3),
            completion_seq: CompletionSeq(3),
            outcome: OperationTerminalOutcome::Cancelled { reason: None },
        },
    ];
    assert_eq!(drained, expected);
    for n in [0, 2, 3] {
        let gone = ops_ok(ops.operation_snapshot(&owner, &op_id(n)).await, "read");
        assert_eq!(gone, None, "operation {n} was drained");
    }
    assert_eq!(
        env.op(&owner, &op_id(1)).await.status,
        OperationStatus::Running
    );
    let again = env.ops_unchanged(ops.collect_completed(&owner)).await;
    assert!(again.is_empty(), "a second collection is empty: {again:?}");
    let fresh = env.register_op(&owner, &op_spec(2)).await;
    assert_eq!(fresh.status, OperationStatus::Provisioning);
    let nobody = env.ops_unchanged(ops.collect_completed(&session(5))).await;
    assert!(nobody.is_empty());
}

/// The admission limit counts only live operations of the owner: at the limit a
/// registration is refused with the limit and the count, and an ending makes room.
pub async fn the_admission_limit_counts_only_live_operations(env: &Env<'_>) {
    let (owner, other) = (session(1), session(2));
    let ops = env.ops();
    let now = t(1_000);
    for n in 0..2 {
        ops_ok(
            ops.register_operation(&owner, &op_spec(n), Some(2), now)
                .await,
            "under the limit",
        );
    }
    ops_ok(
        ops.register_operation(&other, &op_spec(0), Some(1), now)
            .await,
        "another owner has its own count",
    );
    let refused = env
        .ops_rejected(
            E::MaxConcurrentExceeded,
            ops.register_operation(&owner, &op_spec(2), Some(2), now),
        )
        .await;
    assert!(
        matches!(
            refused,
            OpsError::MaxConcurrentExceeded {
                limit: 2,
                active: 2
            }
        ),
        "{refused}"
    );
    ops_ok(
        ops.abort_provisioning(&owner, &op_id(0), None, now).await,
        "end one",
    );
    ops_ok(
        ops.register_operation(&owner, &op_spec(2), Some(2), now)
            .await,
        "room again",
    );
    ops_ok(
        ops.register_operation(&owner, &op_spec(3), None, now).await,
        "no limit",
    );
    let refused = env
        .ops_rejected(
            E::MaxConcurrentExceeded,
            ops.register_operation(&owner, &op_spec(4), Some(3), now),
        )
        .await;
    assert!(
        matches!(
            refused,
            OpsError::MaxConcurrentExceeded {
                limit: 3,
                active: 3
            }
        ),
        "{refused}"
    );
    ops_ok(
        ops.register_operation(&owner, &op_spec(4), Some(4), now)
            .await,
        "a larger limit of a later call",
    );
}

/// An owner keeps its newest 256 terminal records: each ending beyond that evicts the
/// oldest (smallest sequence) in the same write, live records are never evicted, an evicted
/// id may be registered again, and sequences keep counting.
pub async fn retention_keeps_the_newest_256_terminal_records(env: &Env<'_>) {
    const ENDED: u64 = 258;
    let owner = session(1);
    let ops = env.ops();
    let live = op_spec(1_000);
    env.register_op(&owner, &live).await;
    for n in 0..ENDED {
        env.register_op(&owner, &op_spec(n)).await;
        let ended = ops_ok(
            ops.abort_provisioning(&owner, &op_id(n), None, t(1_000 + n as i64))
                .await,
            "abort",
        );
        assert_eq!(ended.completion_seq, Some(CompletionSeq(n + 1)));
    }
    for n in 0..2 {
        let gone = ops_ok(ops.operation_snapshot(&owner, &op_id(n)).await, "read");
        assert_eq!(gone, None, "operation {n} (sequence {}) was evicted", n + 1);
    }
    let oldest_kept = env.op(&owner, &op_id(2)).await;
    assert_eq!(oldest_kept.completion_seq, Some(CompletionSeq(3)));
    assert_eq!(
        env.op(&owner, &live.id).await.status,
        OperationStatus::Provisioning
    );
    let mut listed = 0;
    let mut after = None;
    loop {
        let page = ops_ok(
            ops.list_operations(&owner, &query(100, after)).await,
            "list",
        );
        listed += page.operations.len();
        if !page.has_more {
            break;
        }
        after = page.next_after;
    }
    assert_eq!(listed, 256 + 1, "256 terminal records and the live one");
    env.register_op(&owner, &op_spec(0)).await;
    let ended = ops_ok(
        ops.abort_provisioning(&owner, &op_id(0), None, t(5_000))
            .await,
        "abort again",
    );
    assert_eq!(ended.completion_seq, Some(CompletionSeq(ENDED + 1)));
    let gone = ops_ok(ops.operation_snapshot(&owner, &op_id(2)).await, "read");
    assert_eq!(gone, None, "the next oldest made room");
}

/// Terminating an owner ends its live operations in id order, each with the next sequence,
/// and leaves its terminal ones and other owners alone.
pub async fn terminate_owner_ends_live_operations_in_id_order(env: &Env<'_>) {
    let (owner, other) = (session(1), session(2));
    let ops = env.ops();
    let done = env
        .op_in(&owner, &op_spec(0), OperationStatus::Completed)
        .await;
    env.op_in(&owner, &op_spec(3), OperationStatus::Provisioning)
        .await;
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    env.op_in(&owner, &op_spec(2), OperationStatus::Retiring)
        .await;
    let bystander = env
        .op_in(&other, &op_spec(1), OperationStatus::Running)
        .await;
    let terminated = ops_ok(
        ops.terminate_owner(&owner, "bye", t(1_000)).await,
        "terminate",
    );
    let outcome = OperationTerminalOutcome::Terminated {
        reason: "bye".into(),
    };
    let expected: Vec<_> = [(1, 2), (2, 3), (3, 4)]
        .into_iter()
        .map(|(n, seq)| CompletedOperation {
            id: op_id(n),
            completion_seq: CompletionSeq(seq),
            outcome: outcome.clone(),
        })
        .collect();
    assert_eq!(terminated, expected);
    for n in 1..=3 {
        let record = env.op(&owner, &op_id(n)).await;
        assert_eq!(record.status, OperationStatus::Terminated);
        assert_eq!(record.completed_at, Some(t(1_000)));
    }
    assert_eq!(env.op(&owner, &op_id(0)).await, done);
    assert_eq!(env.op(&other, &op_id(1)).await, bystander);
    env.register_op(&owner, &op_spec(7)).await;
}

/// Listing sorts by display name compared as bytes, then by id, and includes retained
/// terminal records.
pub async fn listing_sorts_by_display_name_bytes_then_id(env: &Env<'_>) {
    let owner = session(1);
    let named = [
        (5, "b"),
        (4, "a"),
        (3, "é"),
        (2, "B"),
        (1, "a b"),
        (0, "a"),
        (6, "ab"),
    ];
    for (n, name) in named {
        let spec = OperationSpec::new(op_id(n), OperationKind::BackgroundToolOp, name);
        env.register_op(&owner, &spec).await;
    }
    ops_ok(
        env.ops()
            .abort_provisioning(&owner, &op_id(3), None, t(1_000))
            .await,
        "end one",
    );
    let page = ops_ok(
        env.ops().list_operations(&owner, &query(100, None)).await,
        "list",
    );
    assert_eq!(names(&page), ["B", "a", "a", "a b", "ab", "b", "é"]);
    let ids: Vec<_> = page.operations.iter().map(|o| o.id).collect();
    assert_eq!(ids[1], op_id(0), "equal names break ties by id");
    assert_eq!(ids[2], op_id(4));
    assert_eq!(page.operations[6].status, OperationStatus::Aborted);
    assert!(!page.has_more);
}

/// Pages follow an exclusive cursor, report whether more follow, and an empty page echoes
/// the cursor it was given.
pub async fn listing_pages_with_an_exclusive_cursor(env: &Env<'_>) {
    let owner = session(1);
    for n in 0..5 {
        env.register_op(&owner, &op_spec(n)).await;
    }
    let ops = env.ops();
    let first = ops_ok(ops.list_operations(&owner, &query(2, None)).await, "page 1");
    assert_eq!(names(&first), ["op-000", "op-001"]);
    assert!(first.has_more);
    let cursor = first.next_after.clone().expect("a cursor");
    assert_eq!(
        cursor,
        OperationCursor {
            display_name: "op-001".into(),
            id: op_id(1)
        }
    );
    let second = ops_ok(
        ops.list_operations(&owner, &query(2, Some(cursor))).await,
        "page 2",
    );
    assert_eq!(names(&second), ["op-002", "op-003"]);
    assert!(second.has_more);
    let third = ops_ok(
        ops.list_operations(&owner, &query(2, second.next_after.clone()))
            .await,
        "page 3",
    );
    assert_eq!(names(&third), ["op-004"]);
    assert!(!third.has_more);
    let beyond = OperationCursor {
        display_name: "zzz".into(),
        id: op_id(0),
    };
    let empty = ops_ok(
        ops.list_operations(&owner, &query(2, Some(beyond.clone())))
            .await,
        "past the end",
    );
    assert!(empty.operations.is_empty());
    assert_eq!(empty.next_after, Some(beyond));
    assert!(!empty.has_more);
    let exact = ops_ok(ops.list_operations(&owner, &query(5, None)).await, "exact");
    assert_eq!(exact.operations.len(), 5);
    assert!(!exact.has_more, "an exactly full last page has no more");
    let unknown = ops_ok(
        ops.list_operations(&session(9), &query(5, None)).await,
        "nobody",
    );
    assert!(unknown.operations.is_empty());
    assert_eq!(unknown.next_after, None);
}

/// A watch started before the ending resolves with the stored outcome once another task
/// ends the operation; several watches all resolve.
pub async fn a_watch_resolves_when_the_operation_ends(env: &Env<'_>) {
    let owner = session(1);
    let id = op_id(1);
    env.op_in(&owner, &op_spec(1), OperationStatus::Running)
        .await;
    let watchers: Vec<_> = (0..3)
        .map(|_| {
            let store = Arc::clone(env.store());
            tokio::spawn(async move {
                let ops = store.ops_registry().expect("the registry is offered");
                ops.await_completion(&owner, &id, Duration::from_millis(20))
                    .await
            })
        })
        .collect();
    tokio::task::yield_now().await;
    ops_ok(
        env.ops()
            .fail_operation(&owner, &id, "watched".into(), t(1_000))
            .await,
        "fail",
    );
    for watcher in watchers {
        let outcome = tokio::time::timeout(WATCH_DEADLINE, watcher)
            .await
            .unwrap_or_else(|_| panic!("no watch resolved within {WATCH_DEADLINE:?}"))
            .unwrap_or_else(|e| panic!("a watch task failed: {e}"));
        assert_eq!(
            ops_ok(outcome, "watch"),
            OperationTerminalOutcome::Failed {
                error: "watched".into()
            }
        );
    }
}

/// A watch on an operation that has already ended resolves at once (its poll interval is
/// an hour), and a watch on an unknown one is `NotFound`.
pub async fn a_watch_on_an_ended_or_unknown_operation_answers_at_once(env: &Env<'_>) {
    let owner = session(1);
    let spec = op_spec(1);
    let done = env.op_in(&owner, &spec, OperationStatus::Retired).await;
    let hour = Duration::from_secs(3_600);
    let outcome = tokio::time::timeout(
        WATCH_DEADLINE,
        env.ops().await_completion(&owner, &spec.id, hour),
    )
    .await
    .unwrap_or_else(|_| panic!("the watch of an ended operation waited"));
    assert_eq!(Some(ops_ok(outcome, "watch")), done.terminal_outcome);
    let unknown = tokio::time::timeout(
        WATCH_DEADLINE,
        env.ops().await_completion(&owner, &op_id(2), hour),
    )
    .await
    .unwrap_or_else(|_| panic!("the watch of an unknown operation waited"));
    assert!(
        matches!(unknown, Err(OpsError::NotFound { .. })),
        "{unknown:?}"
    );
    let elsewhere = tokio::time::timeout(
        WATCH_DEADLINE,
        env.ops().await_completion(&session(2), &spec.id, hour),
    )
    .await
    .unwrap_or_else(|_| panic!("the watch of another owner's operation waited"));
    assert!(
        matches!(elsewhere, Err(OpsError::NotFound { .. })),
        "{elsewhere:?}"
    );
}
