//! Backend-independent rules: the outcome-acceptance table, input validation, the bounded
//! evidence retry and the classification of transient faults.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use docket_core::ops::{OperationResult, OperationTerminalOutcome, SessionId};
use meerkat_compose::{
    wait_outcome_accepts_job_terminal, CanonicalArgumentsHash, DetachedJobError, EvidenceError,
    EvidenceGraph, EvidenceItem, EvidenceRetry, HostRunnable, HostRunnableError,
    HostRunnableInvocation, JobAuthority, JobCompositionError, JobFailureCode, JobId, JobReceipt,
    JobReference, JobSpec, JobTerminalEvidenceProjector, JobTerminalResult, JobView,
    JobWorkGraphLink, RestartClass, RunnerIdentity, ScheduledDurableJobRunnable,
    ScheduledJobTemplate, ToolIdentity, WorkEvidenceRef, WorkItemId, WorkItemRef, WorkNamespace,
};

fn code(text: &str) -> JobFailureCode {
    JobFailureCode::new(text).expect("code")
}

fn terminals() -> Vec<JobTerminalResult> {
    vec![
        JobTerminalResult::Succeeded { result_ref: None },
        JobTerminalResult::Failed {
            code: code("c"),
            detail_ref: None,
        },
        JobTerminalResult::Cancelled,
        JobTerminalResult::WorkerLost,
        JobTerminalResult::NeedsAttention { reason: code("r") },
    ]
}

/// Every recorded outcome variant, carrying `text` where it carries one.
fn outcomes(text: &str) -> Vec<Option<OperationTerminalOutcome>> {
    let completed = |is_error| {
        Some(OperationTerminalOutcome::Completed(OperationResult {
            content: text.to_owned(),
            is_error,
            duration_ms: 0,
            tokens_used: 0,
        }))
    };
    vec![
        None,
        completed(false),
        completed(true),
        Some(OperationTerminalOutcome::Failed {
            error: text.to_owned(),
        }),
        Some(OperationTerminalOutcome::Cancelled {
            reason: Some(text.to_owned()),
        }),
        Some(OperationTerminalOutcome::Cancelled { reason: None }),
        Some(OperationTerminalOutcome::Terminated {
            reason: text.to_owned(),
        }),
        Some(OperationTerminalOutcome::Aborted { reason: None }),
        Some(OperationTerminalOutcome::Retired),
    ]
}

/// The acceptance rule, restated independently: which pairs may be acknowledged.
fn expected(
    outcome: Option<&OperationTerminalOutcome>,
    terminal: &JobTerminalResult,
    text_matches: bool,
) -> bool {
    let succeeded = matches!(terminal, JobTerminalResult::Succeeded { .. });
    let failed_like = !succeeded && !matches!(terminal, JobTerminalResult::Cancelled);
    match outcome {
        None => false,
        Some(OperationTerminalOutcome::Completed(result)) => {
            succeeded && !result.is_error && text_matches
        }
        Some(OperationTerminalOutcome::Failed { .. }) => failed_like && text_matches,
        Some(_) => true,
    }
}

#[test]
fn outcome_acceptance_holds_for_every_combination() {
    let mut checked = 0;
    for terminal in terminals() {
        let encoded = terminal.canonical_json().expect("json");
        for text_matches in [true, false] {
            let text = if text_matches {
                encoded.clone()
            } else {
                format!("{encoded} ")
            };
            for outcome in outcomes(&text) {
                assert_eq!(
                    wait_outcome_accepts_job_terminal(outcome.as_ref(), &terminal, &encoded),
                    expected(outcome.as_ref(), &terminal, text_matches),
                    "outcome {outcome:?}, terminal {terminal:?}, text matches: {text_matches}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 5 * 2 * 9);
}

#[test]
fn a_template_realm_must_be_canonical() {
    let make = |realm: &str| {
        ScheduledJobTemplate::new(
            realm,
            SessionId::random(),
            ToolIdentity::new("t", "1").expect("tool"),
            RunnerIdentity::new("r", "1").expect("runner"),
            RestartClass::NonResumable,
            CanonicalArgumentsHash::new("h").expect("hash"),
        )
    };
    for bad in [" r", "r ", "", "r\u{0}"] {
        assert!(
            matches!(make(bad), Err(JobCompositionError::InvalidInput(_))),
            "{bad:?}"
        );
    }
    assert!(make("r").is_ok());
}

fn item(realm: &str) -> WorkItemRef {
    WorkItemRef {
        realm_id: realm.into(),
        namespace: WorkNamespace::new("default").expect("ns"),
        item_id: WorkItemId::new("i").expect("id"),
    }
}

fn job(realm: &str) -> JobReference {
    JobReference::new(realm, JobId::new("job_1").expect("id")).expect("reference")
}

#[test]
fn links_across_realms_are_refused() {
    assert!(matches!(
        JobWorkGraphLink::new(job("realm-a"), item("realm-b")),
        Err(JobCompositionError::InvalidInput(_))
    ));
    assert!(JobWorkGraphLink::new(job("realm-a"), item("realm-a")).is_ok());
}

/// A job authority with one ended job, or failing transiently on every call.
#[derive(Debug)]
struct FixedJobs {
    transient: bool,
}

#[async_trait]
impl JobAuthority for FixedJobs {
    async fn submit(&self, _: JobSpec) -> Result<JobReceipt, DetachedJobError> {
        if self.transient {
            return Err(DetachedJobError::store(true, "connection reset"));
        }
        Err(DetachedJobError::store(false, "read-only database"))
    }

    async fn get_for_reference(
        &self,
        reference: &JobReference,
    ) -> Result<JobView, DetachedJobError> {
        Ok(JobView {
            job_id: reference.job_id().clone(),
            realm_id: reference.realm_id().to_owned(),
            origin_session_id: SessionId::random(),
            terminal_result: Some(JobTerminalResult::Cancelled),
            attempt_count: 1,
            fence: 1,
        })
    }
}

/// An evidence graph whose item always moves under the writer.
#[derive(Debug, Default)]
struct AlwaysMoving {
    writes: AtomicU32,
}

#[async_trait]
impl EvidenceGraph for AlwaysMoving {
    async fn ensure_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        self.get_item(item).await
    }

    async fn get_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        Ok(EvidenceItem {
            item: item.clone(),
            revision: u64::from(self.writes.load(Ordering::SeqCst)),
            evidence: Vec::new(),
        })
    }

    async fn add_evidence(
        &self,
        item: &WorkItemRef,
        expected: u64,
        _: &WorkEvidenceRef,
    ) -> Result<EvidenceItem, EvidenceError> {
        let actual = u64::from(self.writes.fetch_add(1, Ordering::SeqCst)) + 1;
        Err(EvidenceError::StaleRevision {
            id: item.item_id.clone(),
            expected,
            actual,
        })
    }
}

#[tokio::test]
async fn the_evidence_retry_is_bounded_and_its_failure_is_transient() {
    let graph = Arc::new(AlwaysMoving::default());
    let projector =
        JobTerminalEvidenceProjector::new(Arc::new(FixedJobs { transient: false }), graph.clone())
            .with_retry(EvidenceRetry {
                max_attempts: 5,
                initial_backoff: Duration::from_micros(10),
                max_backoff: Duration::from_micros(40),
            });
    let link = JobWorkGraphLink::new(job("realm-a"), item("realm-a")).expect("link");
    let outcome = projector
        .project_terminal(&link, &JobTerminalResult::Cancelled)
        .await;
    match outcome {
        Err(error @ JobCompositionError::WorkGraph(EvidenceError::StaleRevision { .. })) => {
            assert!(error.is_transient());
        }
        other => panic!("expected a stale revision, got {other:?}"),
    }
    assert_eq!(
        graph.writes.load(Ordering::SeqCst),
        5,
        "exactly max_attempts writes"
    );
}

#[tokio::test]
async fn transient_store_faults_leave_the_occurrence_retryable() {
    let template = ScheduledJobTemplate::new(
        "realm-a",
        SessionId::random(),
        ToolIdentity::new("t", "1").expect("tool"),
        RunnerIdentity::new("r", "1").expect("runner"),
        RestartClass::NonResumable,
        CanonicalArgumentsHash::new("h").expect("hash"),
    )
    .expect("template");
    let invocation = HostRunnableInvocation::new(uuid::Uuid::new_v4(), "s", "n", 0);
    let transient =
        ScheduledDurableJobRunnable::new(Arc::new(FixedJobs { transient: true }), template.clone())
            .run(invocation.clone())
            .await;
    assert!(
        matches!(transient, Err(HostRunnableError::Retryable { .. })),
        "{transient:?}"
    );
    let permanent =
        ScheduledDurableJobRunnable::new(Arc::new(FixedJobs { transient: false }), template)
            .run(invocation)
            .await;
    assert!(
        matches!(permanent, Err(HostRunnableError::Failed { .. })),
        "{permanent:?}"
    );
}

#[test]
fn occurrence_keys_drive_the_spec() {
    let template = ScheduledJobTemplate::new(
        "realm-a",
        SessionId::random(),
        ToolIdentity::new("t", "1").expect("tool"),
        RunnerIdentity::new("r", "1").expect("runner"),
        RestartClass::Replayable,
        CanonicalArgumentsHash::new("h").expect("hash"),
    )
    .expect("template");
    let occurrence = uuid::Uuid::from_u128(0x0190_a5e2_0000_7000_8000_0000_0000_0001);
    let spec = template
        .spec_for(&HostRunnableInvocation::new(occurrence, "s", "n", 0))
        .expect("spec");
    let key = "schedule_occurrence:0190a5e2-0000-7000-8000-000000000001";
    assert_eq!(spec.submission_key.as_str(), key);
    assert_eq!(spec.execution_intent_id.as_str(), key);
    assert_eq!(spec.interaction_lineage_id.as_str(), key);
    assert_eq!(spec.restart_class, RestartClass::Replayable);
}
