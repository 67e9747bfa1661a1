//! Every cell of the state machine, one named case per cell: each registry call on an
//! operation that is absent, provisioning, running, retiring or terminal (each of the six
//! terminal statuses in turn). The expectation of every cell is written out here, not taken
//! from the rules under test.
//!
//! A move checks the stored record afterwards (status, outcome of the matching variant,
//! completion sequence and times); a refusal checks the typed error (an `InvalidTransition`
//! carries the status it found and the refused call) and that nothing stored changed.

use super::prelude::*;

/// Where the operation starts.
#[derive(Clone, Copy, Debug)]
enum From {
    Absent,
    In(OperationStatus),
    /// Each terminal status in turn.
    Terminal,
}

/// The registry call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Register,
    Start,
    Fail,
    Abort,
    Cancel,
    RequestRetire,
    MarkRetired,
    Complete,
    TerminateOwner,
    Progress,
}

/// What the cell must do.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The operation moves to this status.
    Becomes(OperationStatus),
    /// One more progress tick; the status stays.
    Counts,
    /// `InvalidTransition` carrying the current status; nothing changes.
    Invalid,
    /// `NotFound`; nothing changes.
    NotFound,
    /// `AlreadyRegistered`; nothing changes.
    AlreadyRegistered,
    /// The owner-wide termination leaves the operation alone and writes nothing.
    Untouched,
}

/// The case's own instant for the call under test.
const AT: i64 = 1_000;

impl Call {
    fn action(self) -> Option<OperationAction> {
        match self {
            Call::Register => None,
            Call::Start => Some(OperationAction::ProvisioningSucceeded),
            Call::Fail => Some(OperationAction::Fail),
            Call::Abort => Some(OperationAction::AbortProvisioning),
            Call::Cancel => Some(OperationAction::Cancel),
            Call::RequestRetire => Some(OperationAction::RequestRetire),
            Call::MarkRetired => Some(OperationAction::MarkRetired),
            Call::Complete => Some(OperationAction::Complete),
            Call::TerminateOwner => Some(OperationAction::Terminate),
            Call::Progress => Some(OperationAction::ReportProgress),
        }
    }

    /// The outcome a successful ending call records.
    fn outcome(self) -> Option<OperationTerminalOutcome> {
        match self {
            Call::Fail => Some(OperationTerminalOutcome::Failed {
                error: "cell failure".into(),
            }),
            Call::Abort => Some(OperationTerminalOutcome::Aborted {
                reason: Some("cell abort".into()),
            }),
            Call::Cancel => Some(OperationTerminalOutcome::Cancelled {
                reason: Some("cell cancel".into()),
            }),
            Call::MarkRetired => Some(OperationTerminalOutcome::Retired),
            Call::Complete => Some(OperationTerminalOutcome::Completed(OperationResult {
                content: "cell result".into(),
                is_error: false,
                duration_ms: 5,
                tokens_used: 7,
            })),
            Call::TerminateOwner => Some(OperationTerminalOutcome::Terminated {
                reason: "cell terminate".into(),
            }),
            Call::Register | Call::Start | Call::RequestRetire | Call::Progress => None,
        }
    }
}

/// What a call returned, whichever call it was.
#[derive(Debug)]
enum Returned {
    Record(Box<OperationLifecycleSnapshot>),
    Terminated(Vec<CompletedOperation>),
}

async fn perform(
    env: &Env<'_>,
    owner: &SessionId,
    spec: &OperationSpec,
    call: Call,
) -> Result<Returned, OpsError> {
    let ops = env.ops();
    let id = &spec.id;
    let now = t(AT);
    let reason = |o: Option<OperationTerminalOutcome>| match o {
        Some(
            OperationTerminalOutcome::Aborted { reason }
            | OperationTerminalOutcome::Cancelled { reason },
        ) => reason,
        _ => None,
    };
    let record = match call {
        Call::Register => ops.register_operation(owner, spec, None, now).await,
        Call::Start => ops.provisioning_succeeded(owner, id, now).await,
        Call::Fail => {
            ops.fail_operation(owner, id, "cell failure".into(), now)
                .await
        }
        Call::Abort => {
            ops.abort_provisioning(owner, id, reason(call.outcome()), now)
                .await
        }
        Call::Cancel => {
            ops.cancel_operation(owner, id, reason(call.outcome()), now)
                .await
        }
        Call::RequestRetire => ops.request_retire(owner, id, now).await,
        Call::MarkRetired => ops.mark_retired(owner, id, now).await,
        Call::Complete => {
            let result = match call.outcome() {
                Some(OperationTerminalOutcome::Completed(result)) => result,
                _ => OperationResult::default(),
            };
            ops.complete_operation(owner, id, result, now).await
        }
        Call::TerminateOwner => {
            return ops
                .terminate_owner(owner, "cell terminate", now)
                .await
                .map(Returned::Terminated)
        }
        Call::Progress => ops.report_progress(owner, id, now).await,
    };
    record.map(|r| Returned::Record(Box::new(r)))
}

/// Runs one cell from every status `from` stands for, each on its own owner.
async fn cell(env: &Env<'_>, from: From, call: Call, expect: Expect) {
    let starts: Vec<Option<OperationStatus>> = match from {
        From::Absent => vec![None],
        From::In(status) => vec![Some(status)],
        From::Terminal => OperationStatus::TERMINAL.into_iter().map(Some).collect(),
    };
    for (index, start) in starts.into_iter().enumerate() {
        let owner = session(100 + index as u64);
        let spec = op_spec(1);
        let before = match start {
            Some(status) => Some(env.op_in(&owner, &spec, status).await),
            None => None,
        };
        let context = format!("{call:?} from {start:?}");
        check(env, &owner, &spec, call, expect, before, &context).await;
    }
}

async fn check(
    env: &Env<'_>,
    owner: &SessionId,
    spec: &OperationSpec,
    call: Call,
    expect: Expect,
    before: Option<OperationLifecycleSnapshot>,
    context: &str,
) {
    let id = spec.id;
    match expect {
        Expect::Becomes(status) => {
            let returned = ops_ok(perform(env, owner, spec, call).await, context);
            let stored = env.op(owner, &id).await;
            match returned {
                Returned::Record(record) => assert_eq!(*record, stored, "{context}: returned"),
                Returned::Terminated(ended) => {
                    assert_eq!(ended.len(), 1, "{context}: terminated {ended:?}");
                    assert_eq!(ended[0].id, id, "{context}");
                    assert_eq!(Some(ended[0].completion_seq), stored.completion_seq);
                }
            }
            assert_eq!(stored.status, status, "{context}: status");
            assert_moved(&stored, before.as_ref(), call, context);
        }
        Expect::Counts => {
            let before = before.unwrap_or_else(|| panic!("{context}: no record to count on"));
            ops_ok(perform(env, owner, spec, call).await, context);
            let stored = env.op(owner, &id).await;
            assert_eq!(stored.status, before.status, "{context}: the status stays");
            assert_eq!(
                stored.progress_count,
                before.progress_count + 1,
                "{context}: one more tick"
            );
            let mut rest = stored.clone();
            rest.progress_count = before.progress_count;
            assert_eq!(rest, before, "{context}: nothing else changes");
        }
        Expect::Invalid => {
            let before = before.unwrap_or_else(|| panic!("{context}: no record to refuse"));
            let error = env
                .ops_rejected(E::InvalidTransition, perform(env, owner, spec, call))
                .await;
            match error {
                OpsError::InvalidTransition {
                    id: refused,
                    status,
                    action,
                } => {
                    assert_eq!(refused, id, "{context}");
                    assert_eq!(status, before.status, "{context}: the status it found");
                    assert_eq!(Some(action), call.action(), "{context}: the refused call");
                }
                other => panic!("{context}: {other}"),
            }
        }
        Expect::NotFound => {
            let error = env
                .ops_rejected(E::NotFound, perform(env, owner, spec, call))
                .await;
            assert!(
                matches!(error, OpsError::NotFound { id: missing } if missing == id),
                "{context}: {error}"
            );
        }
        Expect::AlreadyRegistered => {
            let error = env
                .ops_rejected(E::AlreadyRegistered, perform(env, owner, spec, call))
                .await;
            assert!(
                matches!(error, OpsError::AlreadyRegistered { id: taken } if taken == id),
                "{context}: {error}"
            );
        }
        Expect::Untouched => {
            let returned = env.ops_unchanged(perform(env, owner, spec, call)).await;
            assert!(
                matches!(&returned, Returned::Terminated(ended) if ended.is_empty()),
                "{context}: {returned:?}"
            );
        }
    }
}

/// The side effects of a move, against the record before it.
fn assert_moved(
    stored: &OperationLifecycleSnapshot,
    before: Option<&OperationLifecycleSnapshot>,
    call: Call,
    context: &str,
) {
    let Some(before) = before else {
        // A registration: a fresh Provisioning record stamped with the call's instant.
        assert_eq!(stored.created_at, t(AT), "{context}: created_at");
        assert_eq!(stored.started_at, None, "{context}");
        assert_eq!(stored.progress_count, 0, "{context}");
        assert_eq!(stored.terminal_outcome, None, "{context}");
        assert_eq!(stored.completion_seq, None, "{context}");
        return;
    };
    assert_eq!(
        stored.created_at, before.created_at,
        "{context}: created_at"
    );
    assert_eq!(stored.kind, before.kind, "{context}");
    assert_eq!(stored.display_name, before.display_name, "{context}");
    assert_eq!(stored.progress_count, before.progress_count, "{context}");
    if call == Call::Start {
        assert_eq!(stored.started_at, Some(t(AT)), "{context}: started_at");
    } else {
        assert_eq!(
            stored.started_at, before.started_at,
            "{context}: started_at"
        );
    }
    if stored.status.is_terminal() {
        assert_eq!(
            stored.terminal_outcome,
            call.outcome(),
            "{context}: outcome"
        );
        // The owner's first terminal transition.
        assert_eq!(
            stored.completion_seq,
            Some(CompletionSeq(1)),
            "{context}: completion_seq"
        );
        assert_eq!(stored.completed_at, Some(t(AT)), "{context}: completed_at");
    } else {
        assert_eq!(stored.terminal_outcome, None, "{context}");
        assert_eq!(stored.completion_seq, None, "{context}");
        assert_eq!(stored.completed_at, None, "{context}");
    }
}

/// Declares the cell cases: `name: (from, call) => expect;`.
macro_rules! cells {
    ($($name:ident: ($from:expr, $call:ident) => $expect:expr;)*) => {
        $(
            #[doc = concat!("`", stringify!($call), "` from `", stringify!($from), "`: ",
                            stringify!($expect), ".")]
            pub async fn $name(env: &Env<'_>) {
                #[allow(unused_imports)]
                use Expect::*;
                #[allow(unused_imports)]
                use OperationStatus::*;
                cell(env, $from, Call::$call, $expect).await;
            }
        )*
    };
}

const ABSENT: From = From::Absent;
const PROVISIONING: From = From::In(OperationStatus::Provisioning);
const RUNNING: From = From::In(OperationStatus::Running);
const RETIRING: From = From::In(OperationStatus::Retiring);
const TERMINAL: From = From::Terminal;

cells! {
    absent_register_creates_a_provisioning_record: (ABSENT, Register) => Becomes(Provisioning);
    absent_provisioning_succeeded_is_not_found: (ABSENT, Start) => NotFound;
    absent_fail_is_not_found: (ABSENT, Fail) => NotFound;
    absent_abort_provisioning_is_not_found: (ABSENT, Abort) => NotFound;
    absent_cancel_is_not_found: (ABSENT, Cancel) => NotFound;
    absent_request_retire_is_not_found: (ABSENT, RequestRetire) => NotFound;
    absent_mark_retired_is_not_found: (ABSENT, MarkRetired) => NotFound;
    absent_complete_is_not_found: (ABSENT, Complete) => NotFound;
    absent_terminate_owner_writes_nothing: (ABSENT, TerminateOwner) => Untouched;
    absent_report_progress_is_not_found: (ABSENT, Progress) => NotFound;

    provisioning_register_is_already_registered: (PROVISIONING, Register) => AlreadyRegistered;
    provisioning_provisioning_succeeded_runs_it: (PROVISIONING, Start) => Becomes(Running);
    provisioning_fail_fails_it: (PROVISIONING, Fail) => Becomes(Failed);
    provisioning_abort_provisioning_aborts_it: (PROVISIONING, Abort) => Becomes(Aborted);
    provisioning_cancel_cancels_it: (PROVISIONING, Cancel) => Becomes(Cancelled);
    provisioning_request_retire_is_invalid: (PROVISIONING, RequestRetire) => Invalid;
    provisioning_mark_retired_is_invalid: (PROVISIONING, MarkRetired) => Invalid;
    provisioning_complete_is_invalid: (PROVISIONING, Complete) => Invalid;
    provisioning_terminate_owner_terminates_it: (PROVISIONING, TerminateOwner) => Becomes(Terminated);
    provisioning_report_progress_is_invalid: (PROVISIONING, Progress) => Invalid;

    running_register_is_already_registered: (RUNNING, Register) => AlreadyRegistered;
    running_provisioning_succeeded_is_invalid: (RUNNING, Start) => Invalid;
    running_fail_fails_it: (RUNNING, Fail) => Becomes(Failed);
    running_abort_provisioning_is_invalid: (RUNNING, Abort) => Invalid;
    running_cancel_cancels_it: (RUNNING, Cancel) => Becomes(Cancelled);
    running_request_retire_makes_it_retiring: (RUNNING, RequestRetire) => Becomes(Retiring);
    running_mark_retired_retires_it: (RUNNING, MarkRetired) => Becomes(Retired);
    running_complete_completes_it: (RUNNING, Complete) => Becomes(Completed);
    running_terminate_owner_terminates_it: (RUNNING, TerminateOwner) => Becomes(Terminated);
    running_report_progress_counts_a_tick: (RUNNING, Progress) => Counts;

    retiring_register_is_already_registered: (RETIRING, Register) => AlreadyRegistered;
    retiring_provisioning_succeeded_is_invalid: (RETIRING, Start) => Invalid;
    retiring_fail_fails_it: (RETIRING, Fail) => Becomes(Failed);
    retiring_abort_provisioning_is_invalid: (RETIRING, Abort) => Invalid;
    retiring_cancel_cancels_it: (RETIRING, Cancel) => Becomes(Cancelled);
    retiring_request_retire_is_invalid: (RETIRING, RequestRetire) => Invalid;
    retiring_mark_retired_retires_it: (RETIRING, MarkRetired) => Becomes(Retired);
    retiring_complete_completes_it: (RETIRING, Complete) => Becomes(Completed);
    retiring_terminate_owner_terminates_it: (RETIRING, TerminateOwner) => Becomes(Terminated);
    retiring_report_progress_counts_a_tick: (RETIRING, Progress) => Counts;

    terminal_register_is_already_registered: (TERMINAL, Register) => AlreadyRegistered;
    terminal_provisioning_succeeded_is_invalid: (TERMINAL, Start) => Invalid;
    terminal_fail_is_invalid: (TERMINAL, Fail) => Invalid;
    terminal_abort_provisioning_is_invalid: (TERMINAL, Abort) => Invalid;
    terminal_cancel_is_invalid: (TERMINAL, Cancel) => Invalid;
    terminal_request_retire_is_invalid: (TERMINAL, RequestRetire) => Invalid;
    terminal_mark_retired_is_invalid: (TERMINAL, MarkRetired) => Invalid;
    terminal_complete_is_invalid: (TERMINAL, Complete) => Invalid;
    terminal_terminate_owner_leaves_it_alone: (TERMINAL, TerminateOwner) => Untouched;
    terminal_report_progress_is_invalid: (TERMINAL, Progress) => Invalid;
}
