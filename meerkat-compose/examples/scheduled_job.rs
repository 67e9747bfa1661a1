//! A schedule occurrence (delivered twice) submits one detached job; a Docket worker runs
//! it; its terminal evidence lands on a work item; the session that awaited the job prints
//! the outcome it saw.
//!
//! ```text
//! cargo run -p meerkat-compose --example scheduled_job                      # SQLite in a temp dir
//! cargo run -p meerkat-compose --all-features --example scheduled_job -- --backend postgres://postgres@127.0.0.1:5432/test
//! cargo run -p meerkat-compose --all-features --example scheduled_job -- --backend redis://127.0.0.1:6379
//! ```

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use docket::{connect_backend, nodes, Docket};
use docket_core::graph::GraphDocument;
use docket_core::model::{Clock, SystemClock, ValueMap};
use docket_core::node::{FnNode, NodeOutcome};
use docket_core::ops::{OpsLifecycleRegistry, SessionId};
use meerkat_compose::{
    connect_compose_store, BackendOps, CanonicalArgumentsHash, DeliveryPump, DocketJobAuthority,
    HostRunnable, HostRunnableInvocation, JobAuthority, JobAwaitCoordinator, JobAwaitDeliverySink,
    JobDeliveryApplication, JobDeliverySink, JobReference, JobTerminalEvidenceProjector,
    JobWorkGraphLink, RestartClass, RunnerIdentity, ScheduledDurableJobRunnable,
    ScheduledJobTemplate, ToolIdentity, WorkItemId, WorkItemRef, WorkNamespace,
};

const REALM: &str = "example-realm";

/// The session's own inbox: it prints what it receives.
struct PrintingSink;

#[async_trait]
impl JobDeliverySink for PrintingSink {
    async fn apply(&self, application: JobDeliveryApplication) -> Result<(), String> {
        let (job, session, terminal) = application.parts();
        println!("delivered to session {session}: job {job} ended {terminal:?}");
        Ok(())
    }
}

fn graph() -> Result<GraphDocument, Box<dyn Error>> {
    Ok(GraphDocument::from_value(json!({
        "schema_version": 1,
        "id": "nightly-scan",
        "fields": { "result_ref": { "schema": { "type": "string" } } },
        "outputs": { "result_ref": {} },
        "nodes": { "scan": { "implementation": "example.scan" } },
        "edges": {
            "begin": { "from": "$start", "to": "scan" },
            "end": { "from": "scan", "to": "$finish" }
        }
    }))?)
}

fn backend_url() -> Result<(String, Option<tempfile::TempDir>), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite://{}", dir.path().join("scheduled_job.db").display());
            Ok((url, Some(dir)))
        }
        [flag, url] if flag == "--backend" => Ok((url.clone(), None)),
        _ => Err("usage: scheduled_job [--backend URL]".into()),
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let (url, _dir) = backend_url()?;
    println!("backend: {}", docket::connect::redact(&url));

    // Run store first (it stamps a fresh SQLite file), then the compose tables beside it.
    let backend = connect_backend(&url).await?;
    let store = connect_compose_store(&url).await?;
    let scan = FnNode::new(|_: &ValueMap, _: &ValueMap, _| {
        NodeOutcome::update(json!({"result_ref": "report-42"}))
    });
    let docket = Docket::builder(
        backend.clone(),
        nodes::registry().with("example.scan", scan)?,
    )
    .build()?;
    let authority = DocketJobAuthority::new(docket.clone(), graph()?, store.ledger.clone())?;
    let jobs: Arc<dyn JobAuthority> = Arc::new(authority);
    let ops: Arc<dyn OpsLifecycleRegistry> = Arc::new(BackendOps::new(backend)?);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);

    // A schedule occurrence, delivered twice: one job.
    let session = SessionId::random();
    let template = ScheduledJobTemplate::new(
        REALM,
        session,
        ToolIdentity::new("scanner", "1.0")?,
        RunnerIdentity::new("docket", "0.1")?,
        RestartClass::Replayable,
        CanonicalArgumentsHash::new("sha256:args")?,
    )?;
    let target = ScheduledDurableJobRunnable::new(jobs.clone(), template.clone());
    let invocation = HostRunnableInvocation::new(uuid::Uuid::new_v4(), "nightly", "scan", 0);
    for delivery in 1..=2 {
        target.run(invocation.clone()).await?;
        println!("occurrence delivery {delivery}: accepted");
    }
    let spec = template.spec_for(&invocation)?;
    let receipt = jobs.submit(spec).await?;
    println!(
        "job {} (deduplicated: {})",
        receipt.job_id, receipt.deduplicated
    );
    let reference = JobReference::new(REALM, receipt.job_id)?;

    // Its evidence goes to a work item; its origin session awaits it.
    let item = WorkItemRef {
        realm_id: REALM.into(),
        namespace: WorkNamespace::new("default")?,
        item_id: WorkItemId::new(format!("review-{}", invocation.occurrence_id))?,
    };
    store.evidence.ensure_item(&item).await?;
    let coordinator = JobAwaitCoordinator::new(REALM, jobs.clone(), ops.clone(), clock);
    let pump = DeliveryPump::new(
        REALM,
        jobs.clone(),
        store.ledger.clone(),
        JobTerminalEvidenceProjector::new(jobs.clone(), store.evidence.clone()),
        Arc::new(JobAwaitDeliverySink::new(
            coordinator.clone(),
            Arc::new(PrintingSink),
        )),
    );
    pump.link(&JobWorkGraphLink::new(reference.clone(), item.clone())?)
        .await?;
    let awaited = coordinator.await_job(&session, &reference).await?;
    println!(
        "session {session} awaits (already ended: {})",
        awaited.already_terminal
    );

    // A worker runs the job; the pump delivers its end.
    let worker = docket.start_worker();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let outcome = loop {
        let report = pump.pump_once(100).await?;
        if let Some((job, why)) = report.blocked.first() {
            return Err(format!("delivery of {job} blocked: {why}").into());
        }
        let op = ops
            .operation_snapshot(&session, &awaited.operation_id)
            .await?;
        if let Some(outcome) = op.and_then(|op| op.terminal_outcome) {
            break outcome;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err("the job did not end within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    worker.shutdown().await;

    let evidence = store.evidence.get_item(&item).await?.evidence;
    for entry in &evidence {
        println!(
            "evidence on {}: {} {}",
            item.item_id,
            entry.kind,
            entry.summary.as_deref().unwrap_or("")
        );
    }
    println!("the awaiting session saw: {outcome:?}");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scheduled_job: {error}");
            ExitCode::FAILURE
        }
    }
}
