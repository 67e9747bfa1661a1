//! The shared cases. Each takes the backend kind, opens its own isolated case, and asserts
//! behaviour only through the public API.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use docket_core::model::RunQuery;
use docket_core::ops::{
    OperationId, OperationKind, OperationSource, OperationSpec, OperationStatus,
    OperationTerminalOutcome, SessionId,
};
use meerkat_compose::{
    terminal_evidence, CanonicalArgumentsHash, DeliveryLedger, DeliveryPump, DetachedJobError,
    EvidenceError, HostRunnable, HostRunnableError, HostRunnableInvocation, JobAuthority,
    JobAwaitCoordinator, JobAwaitDeliverySink, JobCompositionError, JobDeliveryApplication,
    JobDeliveryContent, JobDeliverySink, JobFailureCode, JobReference, JobResultRef,
    JobSubscription, JobTerminalEvidenceKind, JobTerminalEvidenceProjection,
    JobTerminalEvidenceProjector, JobTerminalResult, JobWorkGraphLink, OriginMemberId,
    RestartClass, RunnerIdentity, ScheduledDurableJobRunnable, ScheduledJobTemplate, ToolIdentity,
    WorkEvidenceKind, WorkEvidenceRef, WorkItemId, WorkItemRef, WorkNamespace,
};

use super::job_graph::{ATTENTION, FAIL, FLAKY, LOSE, SUCCEED};
use super::wrappers::{FailingAckLedger, PausingJobs, RecordingSink};
use super::{drain, session, Case, Handles, Kind};

const REALM: &str = "realm-a";

fn template(session: SessionId, tool: &str) -> ScheduledJobTemplate {
    ScheduledJobTemplate::new(
        REALM,
        session,
        ToolIdentity::new(tool, "1").expect("tool"),
        RunnerIdentity::new("runner", "1").expect("runner"),
        RestartClass::NonResumable,
        CanonicalArgumentsHash::new("args-hash").expect("hash"),
    )
    .expect("template")
}

fn invocation(occurrence: uuid::Uuid) -> HostRunnableInvocation {
    HostRunnableInvocation::new(occurrence, "schedule-1", "scheduled-job", 1_700_000_000_000)
}

/// The job an occurrence of `template` submits.
fn reference_for(template: &ScheduledJobTemplate, occurrence: uuid::Uuid) -> JobReference {
    let spec = template.spec_for(&invocation(occurrence)).expect("spec");
    let id = meerkat_compose::jobs::identity::job_id_of(&spec).expect("job id");
    JobReference::new(REALM, id).expect("reference")
}

/// Submits a fresh job for `session` through the schedule target.
async fn submit(h: &Handles, session: SessionId, tool: &str) -> JobReference {
    let template = template(session, tool);
    let occurrence = uuid::Uuid::new_v4();
    ScheduledDurableJobRunnable::new(h.jobs.clone(), template.clone())
        .run(invocation(occurrence))
        .await
        .expect("submitted");
    reference_for(&template, occurrence)
}

fn code(text: &str) -> JobFailureCode {
    JobFailureCode::new(text).expect("code")
}

/// Every terminal class: the tool (or `None` for a cancel) and the expected result.
fn classes() -> Vec<(Option<&'static str>, JobTerminalResult)> {
    vec![
        (
            Some(SUCCEED),
            JobTerminalResult::Succeeded {
                result_ref: Some(JobResultRef::new("result-1").expect("ref")),
            },
        ),
        (
            Some(FAIL),
            JobTerminalResult::Failed {
                code: code("scan_failed"),
                detail_ref: None,
            },
        ),
        (None, JobTerminalResult::Cancelled),
        (Some(LOSE), JobTerminalResult::WorkerLost),
        (
            Some(ATTENTION),
            JobTerminalResult::NeedsAttention {
                reason: code("credentials_blocked"),
            },
        ),
    ]
}

/// Submits a job of class `tool` and drives it to its end.
async fn ended_job(h: &Handles, session: SessionId, tool: Option<&str>) -> JobReference {
    let reference = submit(h, session, tool.unwrap_or(SUCCEED)).await;
    match tool {
        Some(_) => drain(&h.docket).await,
        None => h.authority.cancel(&reference).await.expect("cancel"),
    }
    reference
}

async fn terminal_of(h: &Handles, reference: &JobReference) -> JobTerminalResult {
    h.jobs
        .get_for_reference(reference)
        .await
        .expect("job")
        .terminal_result
        .expect("terminal")
}

async fn item(h: &Handles, id: &str) -> WorkItemRef {
    let item = WorkItemRef {
        realm_id: REALM.into(),
        namespace: WorkNamespace::new("default").expect("ns"),
        item_id: WorkItemId::new(id).expect("id"),
    };
    h.store.evidence.ensure_item(&item).await.expect("item");
    item
}

fn coordinator(h: &Handles, jobs: Arc<dyn JobAuthority>) -> JobAwaitCoordinator {
    JobAwaitCoordinator::new(REALM, jobs, h.ops().clone(), h.clock.clone())
}

fn wait_id(session: &SessionId, reference: &JobReference) -> OperationId {
    OperationId::for_detached_job_wait(session, REALM, reference.job_id().as_str())
}

async fn op_status(
    h: &Handles,
    session: &SessionId,
    reference: &JobReference,
) -> Option<OperationStatus> {
    h.ops()
        .operation_snapshot(session, &wait_id(session, reference))
        .await
        .expect("snapshot")
        .map(|op| op.status)
}

fn terminal_application(
    reference: &JobReference,
    session: SessionId,
    terminal: JobTerminalResult,
) -> JobDeliveryApplication {
    JobDeliveryApplication::Notification {
        job_id: reference.job_id().clone(),
        delivery_sequence: 1,
        subscription: JobSubscription::origin(session),
        content: JobDeliveryContent::Terminal(terminal),
    }
}

fn pump(h: &Handles, ledger: Arc<dyn DeliveryLedger>, sink: Arc<RecordingSink>) -> DeliveryPump {
    let await_sink = JobAwaitDeliverySink::new(coordinator(h, h.jobs.clone()), sink);
    DeliveryPump::new(
        REALM,
        h.jobs.clone(),
        ledger,
        JobTerminalEvidenceProjector::new(h.jobs.clone(), h.store.evidence.clone()),
        Arc::new(await_sink),
    )
}

async fn run_count(h: &Handles) -> usize {
    let query = RunQuery {
        limit: 100,
        ..RunQuery::default()
    };
    h.authority
        .realm_docket(REALM)
        .expect("realm")
        .list_runs(&query)
        .await
        .expect("runs")
        .runs
        .len()
}

// ---------------------------------------------------------------- schedule → job

pub async fn redelivering_one_occurrence_ten_times_yields_one_job_and_one_run(kind: Kind) {
    let (case, mut h) = Case::open(kind).await;
    let origin = session();
    let template = template(origin, SUCCEED);
    let occurrence = uuid::Uuid::new_v4();
    for delivery in 0..10 {
        if delivery == 5 {
            // Drop every handle and reopen the same data, as a restarted process would.
            drop(h);
            h = case.connect().await;
        }
        let outcome = ScheduledDurableJobRunnable::new(h.jobs.clone(), template.clone())
            .run(invocation(occurrence))
            .await;
        assert!(outcome.is_ok(), "delivery {delivery}: {outcome:?}");
    }
    assert_eq!(run_count(&h).await, 1, "exactly one run");
    let reference = reference_for(&template, occurrence);
    let job = h.jobs.get_for_reference(&reference).await.expect("the job");
    assert_eq!(
        job.terminal_result, None,
        "redelivery never advances the job"
    );
    let receipt = h
        .jobs
        .submit(template.spec_for(&invocation(occurrence)).expect("spec"))
        .await
        .expect("dedup");
    assert!(receipt.deduplicated);
    assert_eq!(&receipt.job_id, reference.job_id());
    let again = h.jobs.get_for_reference(&reference).await.expect("the job");
    assert_eq!(
        (again.attempt_count, again.fence),
        (job.attempt_count, job.fence)
    );
}

pub async fn changed_template_is_a_submission_conflict_and_starts_no_second_run(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let occurrence = uuid::Uuid::new_v4();
    let original = template(origin, SUCCEED);
    ScheduledDurableJobRunnable::new(h.jobs.clone(), original.clone())
        .run(invocation(occurrence))
        .await
        .expect("first delivery");
    let drifted = original
        .clone()
        .with_origin_member_id(OriginMemberId::new("member-2").expect("member"));
    let direct = h
        .jobs
        .submit(drifted.spec_for(&invocation(occurrence)).expect("spec"))
        .await;
    assert_eq!(direct.err(), Some(DetachedJobError::SubmissionConflict));
    let through_schedule = ScheduledDurableJobRunnable::new(h.jobs.clone(), drifted)
        .run(invocation(occurrence))
        .await;
    assert!(
        matches!(&through_schedule, Err(HostRunnableError::Failed { detail }) if detail.contains("different specification")),
        "{through_schedule:?}"
    );
    assert_eq!(run_count(&h).await, 1, "no second run");
}

pub async fn submission_keys_never_deduplicate_across_realms(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let occurrence = uuid::Uuid::new_v4();
    let origin = session();
    let mut ids = Vec::new();
    for realm in ["realm-a", "realm-b"] {
        let template = ScheduledJobTemplate::new(
            realm,
            origin,
            ToolIdentity::new(SUCCEED, "1").expect("tool"),
            RunnerIdentity::new("runner", "1").expect("runner"),
            RestartClass::NonResumable,
            CanonicalArgumentsHash::new("h").expect("hash"),
        )
        .expect("template");
        let receipt = h
            .jobs
            .submit(template.spec_for(&invocation(occurrence)).expect("spec"))
            .await
            .expect("submit");
        assert!(!receipt.deduplicated, "{realm}");
        ids.push(receipt.job_id);
    }
    assert_ne!(ids[0], ids[1]);
    // Concealment: realm-b's job is not visible through realm-a.
    let foreign = JobReference::new("realm-a", ids[1].clone()).expect("reference");
    assert!(matches!(
        h.jobs.get_for_reference(&foreign).await,
        Err(DetachedJobError::NotFound(_))
    ));
}

// ---------------------------------------------------------------- job → evidence

pub async fn eight_racing_projectors_add_exactly_one_evidence_entry(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let reference = ended_job(&h, session(), Some(SUCCEED)).await;
    let terminal = terminal_of(&h, &reference).await;
    let link = JobWorkGraphLink::new(reference.clone(), item(&h, "item-race").await).expect("link");
    let mut racers = Vec::new();
    for _ in 0..8 {
        let projector = JobTerminalEvidenceProjector::new(h.jobs.clone(), h.store.evidence.clone());
        let (link, terminal) = (link.clone(), terminal.clone());
        racers.push(tokio::spawn(async move {
            projector.project_terminal(&link, &terminal).await
        }));
    }
    let (mut added, mut present) = (0, 0);
    for racer in racers {
        match racer.await.expect("joined").expect("projected") {
            JobTerminalEvidenceProjection::Added(JobTerminalEvidenceKind::Succeeded) => added += 1,
            JobTerminalEvidenceProjection::AlreadyPresent(JobTerminalEvidenceKind::Succeeded) => {
                present += 1
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((added, present), (1, 7));
    let stored = h
        .store
        .evidence
        .get_item(link.work_item())
        .await
        .expect("item");
    assert_eq!(stored.evidence.len(), 1);
    assert_eq!(stored.revision, 1);
    assert_eq!(
        stored.evidence[0],
        terminal_evidence(&reference, &terminal).expect("evidence")
    );
}

pub async fn every_terminal_class_maps_to_its_evidence_exactly_once(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let target = item(&h, "item-classes").await;
    let mut kinds = Vec::new();
    for (tool, expected) in classes() {
        let reference = ended_job(&h, session(), tool).await;
        assert_eq!(terminal_of(&h, &reference).await, expected);
        let link = JobWorkGraphLink::new(reference.clone(), target.clone()).expect("link");
        let a = JobTerminalEvidenceProjector::new(h.jobs.clone(), h.store.evidence.clone());
        let b = a.clone();
        let (left, right) = tokio::join!(
            a.project_terminal(&link, &expected),
            b.project_terminal(&link, &expected)
        );
        let kind = JobTerminalEvidenceKind::from_terminal(&expected);
        let mut outcomes = [left.expect("left"), right.expect("right")];
        outcomes.sort_by_key(|o| matches!(o, JobTerminalEvidenceProjection::AlreadyPresent(_)));
        assert_eq!(
            outcomes,
            [
                JobTerminalEvidenceProjection::Added(kind),
                JobTerminalEvidenceProjection::AlreadyPresent(kind)
            ]
        );
        kinds.push(kind.evidence_kind());
    }
    let stored = h.store.evidence.get_item(&target).await.expect("item");
    let stored_kinds: Vec<&str> = stored.evidence.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(stored_kinds, kinds);
    assert_eq!(
        kinds,
        [
            "meerkat.detached_job.terminal.succeeded",
            "meerkat.detached_job.terminal.failed",
            "meerkat.detached_job.terminal.cancelled",
            "meerkat.detached_job.terminal.worker_lost",
            "meerkat.detached_job.terminal.needs_attention",
        ]
    );
}

pub async fn disabled_workgraph_still_checks_job_truth(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let reference = ended_job(&h, session(), Some(SUCCEED)).await;
    let terminal = terminal_of(&h, &reference).await;
    let link = JobWorkGraphLink::new(reference, item(&h, "item-off").await).expect("link");
    let projector = JobTerminalEvidenceProjector::disabled(h.jobs.clone());
    assert_eq!(
        projector
            .project_terminal(&link, &terminal)
            .await
            .expect("projected"),
        JobTerminalEvidenceProjection::WorkGraphDisabled
    );
    let wrong = JobTerminalResult::Cancelled;
    assert!(matches!(
        projector.project_terminal(&link, &wrong).await,
        Err(JobCompositionError::Corrupt(_))
    ));
}

pub async fn projecting_a_non_terminal_job_or_a_conflicting_entry_is_corrupt(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let projector = JobTerminalEvidenceProjector::new(h.jobs.clone(), h.store.evidence.clone());
    let queued = submit(&h, session(), SUCCEED).await;
    let target = item(&h, "item-corrupt").await;
    let some_result = JobTerminalResult::Succeeded { result_ref: None };
    let link = JobWorkGraphLink::new(queued.clone(), target.clone()).expect("link");
    assert!(matches!(
        projector.project_terminal(&link, &some_result).await,
        Err(JobCompositionError::Corrupt(_))
    ));
    drain(&h.docket).await;
    let terminal = terminal_of(&h, &queued).await;
    // Someone else wrote evidence under the job's id with another summary.
    let mut forged = terminal_evidence(&queued, &terminal).expect("evidence");
    forged.summary = Some("something else".into());
    h.store
        .evidence
        .add_evidence(&target, 0, &forged)
        .await
        .expect("forged");
    assert!(matches!(
        projector.project_terminal(&link, &terminal).await,
        Err(JobCompositionError::Corrupt(_))
    ));
    assert_eq!(
        h.store
            .evidence
            .get_item(&target)
            .await
            .expect("item")
            .evidence
            .len(),
        1
    );
}

// ---------------------------------------------------------------- session waits

pub async fn await_is_durable_authorized_and_reopen_does_not_advance_the_job(kind: Kind) {
    let (case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    let before = h.jobs.get_for_reference(&reference).await.expect("job");
    let receipt = coordinator(&h, h.jobs.clone())
        .await_job(&origin, &reference)
        .await
        .expect("await");
    assert!(!receipt.already_terminal);
    assert_eq!(receipt.operation_id, wait_id(&origin, &reference));
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Running)
    );
    drop(h);
    let h = case.connect().await;
    let again = coordinator(&h, h.jobs.clone())
        .await_job(&origin, &reference)
        .await
        .expect("await again");
    assert_eq!(again.operation_id, receipt.operation_id);
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Running)
    );
    let after = h.jobs.get_for_reference(&reference).await.expect("job");
    assert_eq!(
        (after.attempt_count, after.fence),
        (before.attempt_count, before.fence)
    );
    // Another session, and another realm, see NotFound.
    let stranger = coordinator(&h, h.jobs.clone())
        .await_job(&session(), &reference)
        .await;
    assert!(matches!(
        stranger,
        Err(JobCompositionError::Job(DetachedJobError::NotFound(_)))
    ));
    let foreign =
        JobAwaitCoordinator::new("realm-b", h.jobs.clone(), h.ops().clone(), h.clock.clone())
            .await_job(&origin, &reference)
            .await;
    assert!(matches!(
        foreign,
        Err(JobCompositionError::Job(DetachedJobError::NotFound(_)))
    ));
}

pub async fn awaiting_an_ended_job_closes_the_binding_for_every_class(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    for (tool, expected) in classes() {
        let origin = session();
        let reference = ended_job(&h, origin, tool).await;
        let receipt = coordinator(&h, h.jobs.clone())
            .await_job(&origin, &reference)
            .await
            .expect("await");
        assert!(receipt.already_terminal);
        let op = h
            .ops()
            .operation_snapshot(&origin, &receipt.operation_id)
            .await
            .expect("snap")
            .expect("op");
        let encoded = expected.canonical_json().expect("json");
        let outcome_matches = match (&expected, &op.terminal_outcome) {
            (JobTerminalResult::Succeeded { .. }, Some(OperationTerminalOutcome::Completed(r))) => {
                r.content == encoded
            }
            (
                JobTerminalResult::Cancelled,
                Some(OperationTerminalOutcome::Cancelled { reason }),
            ) => reason.as_deref() == Some(encoded.as_str()),
            (_, Some(OperationTerminalOutcome::Failed { error })) => *error == encoded,
            _ => false,
        };
        assert!(outcome_matches, "{expected:?} → {op:?}");
    }
}

pub async fn completion_racing_await_registration_resolves_from_latest_truth(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    let (pausing, gate) = PausingJobs::new(h.jobs.clone());
    let coordinator = coordinator(&h, pausing);
    let waiter = {
        let reference = reference.clone();
        tokio::spawn(async move { coordinator.await_job(&origin, &reference).await })
    };
    gate.reached.await.expect("first read held");
    drain(&h.docket).await; // the job completes while the awaiter holds a stale read
    gate.release.send(()).expect("release");
    let receipt = waiter.await.expect("joined").expect("await");
    assert!(receipt.already_terminal);
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Completed)
    );
}

pub async fn delivery_racing_await_registration_still_completes_the_wait(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, FAIL).await;
    let sink = Arc::new(RecordingSink::default());
    let pump = pump(&h, h.store.ledger.clone(), sink.clone());
    let (pausing, gate) = PausingJobs::new(h.jobs.clone());
    let coordinator = coordinator(&h, pausing);
    let waiter = {
        let reference = reference.clone();
        tokio::spawn(async move { coordinator.await_job(&origin, &reference).await })
    };
    gate.reached.await.expect("first read held");
    drain(&h.docket).await;
    // The delivery runs to its end before the binding exists: it finds none and skips it.
    let report = pump.pump_once(100).await.expect("pump");
    assert_eq!(report.delivered, vec![reference.job_id().clone()]);
    assert_eq!(op_status(&h, &origin, &reference).await, None);
    gate.release.send(()).expect("release");
    let receipt = waiter.await.expect("joined").expect("await");
    assert!(receipt.already_terminal);
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Failed)
    );
    assert_eq!(sink.count(), 1);
}

pub async fn terminal_delivery_closes_the_wait_once_and_still_reaches_the_sink(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    coordinator(&h, h.jobs.clone())
        .await_job(&origin, &reference)
        .await
        .expect("await");
    drain(&h.docket).await;
    let terminal = terminal_of(&h, &reference).await;
    let downstream = Arc::new(RecordingSink::default());
    let sink = JobAwaitDeliverySink::new(coordinator(&h, h.jobs.clone()), downstream.clone());
    for _ in 0..2 {
        sink.apply(terminal_application(&reference, origin, terminal.clone()))
            .await
            .expect("applied");
    }
    let op = h
        .ops()
        .operation_snapshot(&origin, &wait_id(&origin, &reference))
        .await
        .expect("snap")
        .expect("op");
    assert_eq!(op.status, OperationStatus::Completed);
    assert_eq!(
        op.completion_seq.map(|s| s.get()),
        Some(1),
        "closed exactly once"
    );
    assert_eq!(downstream.count(), 2);
}

pub async fn delivery_without_a_binding_never_blocks_the_sink(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = ended_job(&h, origin, Some(SUCCEED)).await;
    let terminal = terminal_of(&h, &reference).await;
    let subscriber = session();
    let downstream = Arc::new(RecordingSink::default());
    let sink = JobAwaitDeliverySink::new(coordinator(&h, h.jobs.clone()), downstream.clone());
    sink.apply(terminal_application(&reference, subscriber, terminal))
        .await
        .expect("applied");
    assert_eq!(downstream.count(), 1);
    assert_eq!(
        op_status(&h, &subscriber, &reference).await,
        None,
        "no binding was created"
    );
}

pub async fn a_foreign_operation_at_the_wait_id_is_rejected_and_left_running(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = ended_job(&h, origin, Some(SUCCEED)).await;
    let terminal = terminal_of(&h, &reference).await;
    let id = wait_id(&origin, &reference);
    let spec = OperationSpec::new(id, OperationKind::BackgroundToolOp, "not a wait");
    h.ops()
        .register_operation(&origin, &spec, None, h.clock.now())
        .await
        .expect("register");
    h.ops()
        .provisioning_succeeded(&origin, &id, h.clock.now())
        .await
        .expect("start");
    let applied = coordinator(&h, h.jobs.clone())
        .apply_terminal(&origin, &reference, &terminal)
        .await;
    assert!(
        matches!(applied, Err(JobCompositionError::Corrupt(_))),
        "{applied:?}"
    );
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Running)
    );
}

pub async fn activity_is_projected_only_while_the_binding_runs(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    let coordinator = coordinator(&h, h.jobs.clone());
    coordinator
        .await_job(&origin, &reference)
        .await
        .expect("await");
    let activity = coordinator
        .activity_for_session(&origin)
        .await
        .expect("activity")
        .expect("some");
    assert_eq!(activity.job_ids, vec![reference.job_id().clone()]);
    assert!(activity.since_ms > 0);
    drain(&h.docket).await;
    let terminal = terminal_of(&h, &reference).await;
    coordinator
        .apply_terminal(&origin, &reference, &terminal)
        .await
        .expect("applied");
    assert_eq!(
        coordinator
            .activity_for_session(&origin)
            .await
            .expect("activity"),
        None
    );
}

pub async fn delivery_after_owner_termination_applies_cleanly(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    coordinator(&h, h.jobs.clone())
        .await_job(&origin, &reference)
        .await
        .expect("await");
    h.ops()
        .terminate_owner(&origin, "session closed", h.clock.now())
        .await
        .expect("terminate");
    drain(&h.docket).await;
    let terminal = terminal_of(&h, &reference).await;
    let downstream = Arc::new(RecordingSink::default());
    let sink = JobAwaitDeliverySink::new(coordinator(&h, h.jobs.clone()), downstream.clone());
    sink.apply(terminal_application(&reference, origin, terminal))
        .await
        .expect("applied");
    assert_eq!(downstream.count(), 1);
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Terminated)
    );
}

pub async fn two_concurrent_awaits_both_succeed_with_one_operation(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    for _ in 0..5 {
        let origin = session();
        let reference = submit(&h, origin, SUCCEED).await;
        let (a, b) = (
            coordinator(&h, h.jobs.clone()),
            coordinator(&h, h.jobs.clone()),
        );
        let (ra, rb) = (reference.clone(), reference.clone());
        let left = tokio::spawn(async move { a.await_job(&origin, &ra).await });
        let right = tokio::spawn(async move { b.await_job(&origin, &rb).await });
        let left = left.await.expect("joined").expect("left await");
        let right = right.await.expect("joined").expect("right await");
        assert_eq!(left.operation_id, right.operation_id);
        assert_eq!(
            op_status(&h, &origin, &reference).await,
            Some(OperationStatus::Running)
        );
    }
}

pub async fn failed_or_cancelled_delivery_while_provisioning_lets_await_succeed(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    for (tool, expected_status) in [
        (Some(FAIL), OperationStatus::Failed),
        (None, OperationStatus::Cancelled),
    ] {
        let origin = session();
        let reference = ended_job(&h, origin, tool).await;
        let terminal = terminal_of(&h, &reference).await;
        // A registrar registered the binding and has not started it yet…
        let id = wait_id(&origin, &reference);
        let spec = OperationSpec::new(
            id,
            OperationKind::DetachedJobWait,
            format!("await detached job {}", reference.job_id()),
        )
        .with_source_label("await_job")
        .with_source(OperationSource::detached_job(
            REALM,
            reference.job_id().as_str(),
        ));
        h.ops()
            .register_operation(&origin, &spec, None, h.clock.now())
            .await
            .expect("register");
        // …when the delivery closes it from Provisioning.
        coordinator(&h, h.jobs.clone())
            .apply_terminal(&origin, &reference, &terminal)
            .await
            .expect("applied");
        assert_eq!(
            op_status(&h, &origin, &reference).await,
            Some(expected_status)
        );
        // The registrar's start now meets a closed binding: the await still succeeds.
        let receipt = coordinator(&h, h.jobs.clone())
            .await_job(&origin, &reference)
            .await
            .expect("await");
        assert!(receipt.already_terminal);
        assert_eq!(
            op_status(&h, &origin, &reference).await,
            Some(expected_status)
        );
    }
}

pub async fn a_terminal_that_disagrees_with_the_job_is_corrupt_and_leaves_the_op(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    let coordinator = coordinator(&h, h.jobs.clone());
    coordinator
        .await_job(&origin, &reference)
        .await
        .expect("await");
    drain(&h.docket).await;
    let wrong = JobTerminalResult::WorkerLost;
    let applied = coordinator
        .apply_terminal(&origin, &reference, &wrong)
        .await;
    assert!(
        matches!(applied, Err(JobCompositionError::Corrupt(_))),
        "{applied:?}"
    );
    assert_eq!(
        op_status(&h, &origin, &reference).await,
        Some(OperationStatus::Running)
    );
}

// ---------------------------------------------------------------- crash and restart

async fn delivered_state(
    h: &Handles,
    origin: &SessionId,
    reference: &JobReference,
    target: &WorkItemRef,
) -> (usize, Option<OperationStatus>, Option<u64>, bool) {
    let evidence = h
        .store
        .evidence
        .get_item(target)
        .await
        .expect("item")
        .evidence;
    let ours = evidence
        .iter()
        .filter(|e| e.id == format!("detached_job:{}:terminal", reference.job_id()))
        .count();
    let op = h
        .ops()
        .operation_snapshot(origin, &wait_id(origin, reference))
        .await
        .expect("snap");
    let delivered = h
        .store
        .ledger
        .is_delivered(reference)
        .await
        .expect("ledger");
    (
        ours,
        op.as_ref().map(|o| o.status),
        op.and_then(|o| o.completion_seq).map(|s| s.get()),
        delivered,
    )
}

pub async fn crash_between_terminal_commit_and_delivery_delivers_once_after_restart(kind: Kind) {
    let (case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, SUCCEED).await;
    let target = item(&h, "item-crash").await;
    let sink = Arc::new(RecordingSink::default());
    pump(&h, h.store.ledger.clone(), sink.clone())
        .link(&JobWorkGraphLink::new(reference.clone(), target.clone()).expect("link"))
        .await
        .expect("linked");
    coordinator(&h, h.jobs.clone())
        .await_job(&origin, &reference)
        .await
        .expect("await");
    drain(&h.docket).await; // the run's terminal commit; the process dies before delivering
    drop(h);
    let h = case.connect().await;
    assert_eq!(
        delivered_state(&h, &origin, &reference, &target).await,
        (0, Some(OperationStatus::Running), None, false)
    );
    let sink = Arc::new(RecordingSink::default());
    let pump = pump(&h, h.store.ledger.clone(), sink.clone());
    let report = pump.pump_once(100).await.expect("pump");
    assert_eq!(report.delivered, vec![reference.job_id().clone()]);
    let again = pump.pump_once(100).await.expect("pump again");
    assert!(again.delivered.is_empty() && again.blocked.is_empty());
    assert_eq!(
        delivered_state(&h, &origin, &reference, &target).await,
        (1, Some(OperationStatus::Completed), Some(1), true)
    );
    assert_eq!(sink.count(), 1);
}

pub async fn crash_after_delivery_before_acknowledgement_delivers_once_after_restart(kind: Kind) {
    let (case, h) = Case::open(kind).await;
    let origin = session();
    let reference = submit(&h, origin, ATTENTION).await;
    let target = item(&h, "item-ack").await;
    let failing = Arc::new(FailingAckLedger {
        inner: h.store.ledger.clone(),
        fail_acks: AtomicBool::new(true),
    });
    let sink = Arc::new(RecordingSink::default());
    let first = pump(&h, failing.clone(), sink.clone());
    first
        .link(&JobWorkGraphLink::new(reference.clone(), target.clone()).expect("link"))
        .await
        .expect("linked");
    coordinator(&h, h.jobs.clone())
        .await_job(&origin, &reference)
        .await
        .expect("await");
    drain(&h.docket).await;
    let report = first.pump_once(100).await.expect("pump");
    assert_eq!(report.blocked.len(), 1, "the acknowledgement was killed");
    assert_eq!(
        delivered_state(&h, &origin, &reference, &target).await,
        (1, Some(OperationStatus::Failed), Some(1), false)
    );
    failing.fail_acks.store(false, Ordering::SeqCst);
    drop((first, failing, h));
    let h = case.connect().await;
    let report = pump(&h, h.store.ledger.clone(), sink.clone())
        .pump_once(100)
        .await
        .expect("pump");
    assert_eq!(report.delivered, vec![reference.job_id().clone()]);
    assert_eq!(
        delivered_state(&h, &origin, &reference, &target).await,
        (1, Some(OperationStatus::Failed), Some(1), true)
    );
    // The sink may see the replay (its contract says so); the evidence and the wait do not.
    assert_eq!(sink.count(), 2);
}

// ---------------------------------------------------------------- the evidence port

pub async fn evidence_port_refuses_stale_revisions_and_reserved_evidence(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let target = item(&h, "item-port").await;
    let plain = WorkEvidenceRef {
        kind: "note".into(),
        id: "e1".into(),
        label: None,
        summary: Some("{\"a\":1}".into()),
        confirmation_kind: None,
        confirming_owner_key: None,
    };
    let written = h
        .store
        .evidence
        .add_evidence(&target, 0, &plain)
        .await
        .expect("first");
    assert_eq!(written.revision, 1);
    let stale = h.store.evidence.add_evidence(&target, 0, &plain).await;
    assert!(
        matches!(
            stale,
            Err(EvidenceError::StaleRevision {
                expected: 0,
                actual: 1,
                ..
            })
        ),
        "{stale:?}"
    );
    let reserved_kind = WorkEvidenceRef {
        kind: "host_confirmation".into(),
        ..plain.clone()
    };
    let typed = WorkEvidenceRef {
        confirmation_kind: Some(WorkEvidenceKind::PrincipalConfirmation),
        ..plain.clone()
    };
    for refused in [reserved_kind, typed] {
        let outcome = h.store.evidence.add_evidence(&target, 1, &refused).await;
        assert!(
            matches!(outcome, Err(EvidenceError::InvalidInput(_))),
            "{outcome:?}"
        );
    }
    let missing = WorkItemRef {
        item_id: WorkItemId::new("absent").expect("id"),
        ..target.clone()
    };
    assert!(matches!(
        h.store.evidence.add_evidence(&missing, 0, &plain).await,
        Err(EvidenceError::NotFound { .. })
    ));
    let stored = h.store.evidence.get_item(&target).await.expect("item");
    assert_eq!(stored.evidence, vec![plain]);
    assert_eq!(stored.revision, 1);
}

// ---------------------------------------------------------------- restart classes

pub async fn restart_classes_choose_the_retry_policy(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let origin = session();
    let mut results = Vec::new();
    for class in [RestartClass::NonResumable, RestartClass::Replayable] {
        let template = ScheduledJobTemplate::new(
            REALM,
            origin,
            ToolIdentity::new(FLAKY, "1").expect("tool"),
            RunnerIdentity::new("runner", "1").expect("runner"),
            class,
            CanonicalArgumentsHash::new("args-hash").expect("hash"),
        )
        .expect("template");
        let occurrence = uuid::Uuid::new_v4();
        ScheduledDurableJobRunnable::new(h.jobs.clone(), template.clone())
            .run(invocation(occurrence))
            .await
            .expect("submitted");
        drain(&h.docket).await;
        results.push(terminal_of(&h, &reference_for(&template, occurrence)).await);
    }
    assert_eq!(
        results,
        [
            JobTerminalResult::Failed {
                code: code("node_failed"),
                detail_ref: None
            },
            JobTerminalResult::Succeeded {
                result_ref: Some(JobResultRef::new("result-1").expect("ref"))
            },
        ]
    );
}

// ---------------------------------------------------------------- delivery isolation

pub async fn a_blocked_delivery_holds_back_neither_other_jobs_nor_other_realms(kind: Kind) {
    let (_case, h) = Case::open(kind).await;
    let sink = Arc::new(RecordingSink::default());
    let pump = pump(&h, h.store.ledger.clone(), sink.clone());
    let blocked = submit(&h, session(), SUCCEED).await;
    let healthy = submit(&h, session(), FAIL).await;
    // The blocked job's work item does not exist yet: its projection fails.
    let missing = WorkItemRef {
        realm_id: REALM.into(),
        namespace: WorkNamespace::new("default").expect("ns"),
        item_id: WorkItemId::new("item-later").expect("id"),
    };
    pump.link(&JobWorkGraphLink::new(blocked.clone(), missing.clone()).expect("link"))
        .await
        .expect("linked");
    // A job of another realm is never delivered by this realm's pump.
    let other_realm = ScheduledJobTemplate::new(
        "realm-b",
        session(),
        ToolIdentity::new(SUCCEED, "1").expect("tool"),
        RunnerIdentity::new("runner", "1").expect("runner"),
        RestartClass::NonResumable,
        CanonicalArgumentsHash::new("h").expect("hash"),
    )
    .expect("template");
    let foreign = h
        .jobs
        .submit(
            other_realm
                .spec_for(&invocation(uuid::Uuid::new_v4()))
                .expect("spec"),
        )
        .await
        .expect("submitted");
    drain(&h.docket).await;
    let first = pump.pump_once(100).await.expect("pump");
    assert_eq!(first.delivered, vec![healthy.job_id().clone()]);
    assert_eq!(
        first
            .blocked
            .iter()
            .map(|(id, _)| id.clone())
            .collect::<Vec<_>>(),
        vec![blocked.job_id().clone()]
    );
    let foreign = JobReference::new("realm-b", foreign.job_id).expect("reference");
    assert!(!h.store.ledger.is_delivered(&foreign).await.expect("ledger"));
    // Healed: the next pass delivers the blocked job, once.
    h.store.evidence.ensure_item(&missing).await.expect("item");
    let second = pump.pump_once(100).await.expect("pump");
    assert_eq!(second.delivered, vec![blocked.job_id().clone()]);
    assert!(second.blocked.is_empty());
    assert_eq!(
        h.store
            .evidence
            .get_item(&missing)
            .await
            .expect("item")
            .evidence
            .len(),
        1
    );
    assert_eq!(sink.count(), 2);
}
