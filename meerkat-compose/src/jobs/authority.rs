//! [`DocketJobAuthority`]: detached jobs as durable Docket runs.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Value};

use docket::{Docket, DocketError, StartOptions};
use docket_core::graph::GraphDocument;
use docket_core::model::{GraphRef, Run, RunId, TenantId, ValueMap};
use docket_core::ops::SessionId;
use docket_core::store::StoreError;

use crate::jobs::identity::{fingerprint, job_id_of};
use crate::jobs::restart::graph_for_class;
use crate::jobs::terminal::terminal_result_of;
use crate::ports::authority::JobAuthority;
use crate::ports::error::DetachedJobError;
use crate::ports::ids::{check_scope_component, JobId, JobReference};
use crate::ports::job::{JobReceipt, JobSpec, JobView, RestartClass};
use crate::ports::ledger::DeliveryLedger;

/// The run metadata key under which a job's identity is stored.
pub const JOB_METADATA_KEY: &str = "meerkat_job";

/// The version of the stored job identity document.
const JOB_METADATA_VERSION: u64 = 1;

/// Builds a job run's input from its spec.
pub type JobInput = Arc<dyn Fn(&JobSpec) -> ValueMap + Send + Sync>;

/// A [`JobAuthority`] whose jobs are Docket runs.
///
/// * **Identity.** A job's run id is derived from `(realm, submission_key)` (see
///   [`crate::jobs::identity::job_id_for`]); the job id is the same text. Starting the run
///   again meets the existing one (`Conflict`), whose stored fingerprint decides between a
///   deduplicated receipt and `SubmissionConflict`.
/// * **Realm = tenant.** Each realm is a Docket tenant: a job is read in its realm's scope only,
///   so another realm's job is `NotFound`, as is any run that is not a job.
/// * **Stored with the run** (metadata `meerkat_job`): realm, origin session, submission key,
///   fingerprint, restart class.
/// * **Execution.** Every job runs the host's graph (published in each realm on first use),
///   driven by the ordinary Docket worker; its restart class picks the node retry policies
///   ([`crate::jobs::restart`]), and its nodes end a job as failed, worker-lost or needing
///   attention through the failure reasons of [`crate::jobs::terminal`].
/// * **Delivery.** Before starting the run, the job is recorded pending in the
///   [`DeliveryLedger`], so its terminal result is delivered even if this process dies right
///   after the run ends (see [`crate::DeliveryPump`]).
/// * **Attempt view.** [`JobView::fence`] is the run's checkpoint sequence and
///   [`JobView::attempt_count`] its superstep count: both move only when the run advances,
///   never on a redelivered submission or a read.
#[derive(Clone)]
pub struct DocketJobAuthority {
    docket: Docket,
    graph: Arc<GraphDocument>,
    strict_graph: Arc<GraphDocument>,
    ledger: Arc<dyn DeliveryLedger>,
    input: JobInput,
    published: Arc<Mutex<HashMap<(String, bool), GraphRef>>>,
}

impl fmt::Debug for DocketJobAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DocketJobAuthority")
            .field("docket", &self.docket)
            .field("ledger", &self.ledger)
            .finish_non_exhaustive()
    }
}

impl DocketJobAuthority {
    /// An authority running every job as a run of `graph` on `docket` (with the retry
    /// policies of its restart class, see [`crate::jobs::restart`]), recording deliveries in
    /// `ledger`. Runs start with an empty input; see [`DocketJobAuthority::with_input`].
    ///
    /// # Errors
    /// `InvalidInput` if the graph cannot be rewritten for non-resumable jobs.
    pub fn new(
        docket: Docket,
        graph: GraphDocument,
        ledger: Arc<dyn DeliveryLedger>,
    ) -> Result<Self, DetachedJobError> {
        let strict_graph = graph_for_class(&graph, RestartClass::NonResumable)?;
        Ok(DocketJobAuthority {
            docket: docket.tenantless(),
            graph: Arc::new(graph),
            strict_graph: Arc::new(strict_graph),
            ledger,
            input: Arc::new(|_: &JobSpec| ValueMap::new()),
            published: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The same authority building each run's input with `input`.
    #[must_use]
    pub fn with_input(
        mut self,
        input: impl Fn(&JobSpec) -> ValueMap + Send + Sync + 'static,
    ) -> Self {
        self.input = Arc::new(input);
        self
    }

    /// The delivery ledger.
    #[must_use]
    pub fn ledger(&self) -> &Arc<dyn DeliveryLedger> {
        &self.ledger
    }

    /// The Docket facade (tenantless; scope it with [`DocketJobAuthority::realm_docket`]).
    #[must_use]
    pub fn docket(&self) -> &Docket {
        &self.docket
    }

    /// The facade scoped to `realm`.
    ///
    /// # Errors
    /// `InvalidInput` for a realm that is not a valid tenant id.
    pub fn realm_docket(&self, realm: &str) -> Result<Docket, DetachedJobError> {
        let tenant = TenantId::new(realm)
            .map_err(|e| DetachedJobError::InvalidInput(format!("realm {realm:?}: {e}")))?;
        Ok(self.docket.tenant(tenant))
    }

    /// Requests cancellation of a job's run (a run already cancelled stays so).
    ///
    /// # Errors
    /// `NotFound`; `InvalidTransition` for a job that already ended otherwise; `Store`.
    pub async fn cancel(&self, reference: &JobReference) -> Result<(), DetachedJobError> {
        self.get_for_reference(reference).await?;
        let docket = self.realm_docket(reference.realm_id())?;
        let run_id = run_id_of(reference.job_id())?;
        match docket.cancel_run(&run_id).await {
            Ok(_) => Ok(()),
            Err(DocketError::NotFound) => {
                Err(DetachedJobError::NotFound(reference.job_id().clone()))
            }
            Err(DocketError::Runtime(e)) => Err(DetachedJobError::InvalidTransition {
                job_id: reference.job_id().clone(),
                detail: e.to_string(),
            }),
            Err(e) => Err(store_error(&e)),
        }
    }

    async fn graph_ref(
        &self,
        realm: &str,
        class: RestartClass,
        docket: &Docket,
    ) -> Result<GraphRef, DetachedJobError> {
        let key = (realm.to_owned(), class == RestartClass::NonResumable);
        if let Some(found) = self.published_ref(&key) {
            return Ok(found);
        }
        let graph = if key.1 {
            &self.strict_graph
        } else {
            &self.graph
        };
        let publication = docket.publish_graph(graph).await.map_err(|e| match e {
            DocketError::InvalidGraph { .. } => DetachedJobError::InvalidInput(e.to_string()),
            other => store_error(&other),
        })?;
        if let Ok(mut published) = self.published.lock() {
            published.insert(key, publication.graph_ref.clone());
        }
        Ok(publication.graph_ref)
    }

    fn published_ref(&self, key: &(String, bool)) -> Option<GraphRef> {
        self.published.lock().ok()?.get(key).cloned()
    }

    async fn existing(
        &self,
        docket: &Docket,
        job_id: &JobId,
        fingerprint: &str,
        restart_class: RestartClass,
    ) -> Result<JobReceipt, DetachedJobError> {
        let run = fetch(docket, job_id).await?;
        let stored = StoredJob::of(&run).ok_or_else(|| {
            DetachedJobError::store(
                false,
                format!("run {job_id} exists but is not a detached job"),
            )
        })?;
        if stored.fingerprint != fingerprint {
            return Err(DetachedJobError::SubmissionConflict);
        }
        Ok(JobReceipt {
            job_id: job_id.clone(),
            deduplicated: true,
            restart_class,
        })
    }
}

#[async_trait]
impl JobAuthority for DocketJobAuthority {
    async fn submit(&self, spec: JobSpec) -> Result<JobReceipt, DetachedJobError> {
        check_scope_component("job realm", &spec.realm_id)
            .map_err(DetachedJobError::InvalidInput)?;
        let docket = self.realm_docket(&spec.realm_id)?;
        let job_id = job_id_of(&spec)?;
        let fingerprint = fingerprint(&spec)?;
        let reference = JobReference::new(spec.realm_id.clone(), job_id.clone())?;
        // An existing run answers without any write: redelivery never touches the run.
        match self
            .existing(&docket, &job_id, &fingerprint, spec.restart_class)
            .await
        {
            Ok(receipt) => {
                self.ledger.record_pending(&reference).await?;
                return Ok(receipt);
            }
            Err(DetachedJobError::NotFound(_)) => {}
            Err(other) => return Err(other),
        }
        // Pending first: a crash after the run exists but before this line would otherwise
        // leave a run whose terminal result is never delivered.
        self.ledger.record_pending(&reference).await?;
        let graph_ref = self
            .graph_ref(&spec.realm_id, spec.restart_class, &docket)
            .await?;
        let metadata = StoredJob::metadata(&spec, &fingerprint);
        let options = StartOptions {
            run_id: Some(run_id_of(&job_id)?),
            metadata,
        };
        match docket
            .start_run(&graph_ref, (self.input)(&spec), options)
            .await
        {
            Ok(_) => Ok(JobReceipt {
                job_id,
                deduplicated: false,
                restart_class: spec.restart_class,
            }),
            Err(DocketError::Store(StoreError::Conflict)) => {
                self.existing(&docket, &job_id, &fingerprint, spec.restart_class)
                    .await
            }
            Err(DocketError::Runtime(e)) => Err(DetachedJobError::InvalidInput(e.to_string())),
            Err(e) => Err(store_error(&e)),
        }
    }

    async fn get_for_reference(
        &self,
        reference: &JobReference,
    ) -> Result<JobView, DetachedJobError> {
        let not_found = || DetachedJobError::NotFound(reference.job_id().clone());
        let docket = self
            .realm_docket(reference.realm_id())
            .map_err(|_| not_found())?;
        let run = fetch(&docket, reference.job_id()).await?;
        let stored = StoredJob::of(&run).ok_or_else(not_found)?;
        if stored.realm != reference.realm_id() {
            return Err(not_found());
        }
        Ok(JobView {
            job_id: reference.job_id().clone(),
            realm_id: stored.realm,
            origin_session_id: stored.origin_session,
            terminal_result: terminal_result_of(&run),
            attempt_count: run.step,
            fence: run.checkpoint_seq,
        })
    }
}

fn run_id_of(job_id: &JobId) -> Result<RunId, DetachedJobError> {
    RunId::new(job_id.as_str())
        .map_err(|e| DetachedJobError::InvalidInput(format!("job id {job_id}: {e}")))
}

async fn fetch(docket: &Docket, job_id: &JobId) -> Result<Run, DetachedJobError> {
    let Ok(run_id) = RunId::new(job_id.as_str()) else {
        return Err(DetachedJobError::NotFound(job_id.clone()));
    };
    match docket.fetch_run(&run_id).await {
        Ok(run) => Ok(run),
        Err(DocketError::NotFound) => Err(DetachedJobError::NotFound(job_id.clone())),
        Err(e) => Err(store_error(&e)),
    }
}

/// A Docket failure as a store fault: transient when the store says retrying may succeed,
/// or when the outcome is ambiguous (submission is idempotent, so repeating it is safe).
fn store_error(error: &DocketError) -> DetachedJobError {
    let transient = match error {
        DocketError::Store(e) => e.is_retryable() || matches!(e, StoreError::Ambiguous { .. }),
        DocketError::Timeout { .. } => true,
        _ => false,
    };
    DetachedJobError::store(transient, error)
}

/// The job identity stored in a run's metadata.
struct StoredJob {
    realm: String,
    origin_session: SessionId,
    fingerprint: String,
}

impl StoredJob {
    fn metadata(spec: &JobSpec, fingerprint: &str) -> ValueMap {
        let mut metadata = ValueMap::new();
        metadata.insert(
            JOB_METADATA_KEY.into(),
            json!({
                "version": JOB_METADATA_VERSION,
                "realm": spec.realm_id,
                "origin_session": spec.origin_session_id.to_string(),
                "submission_key": spec.submission_key.as_str(),
                "fingerprint": fingerprint,
                "restart_class": spec.restart_class,
            }),
        );
        metadata
    }

    /// The stored identity, or `None` for a run that is not a job (or one written by an
    /// unknown version).
    fn of(run: &Run) -> Option<StoredJob> {
        let doc = run.metadata.get(JOB_METADATA_KEY)?;
        if doc.get("version")?.as_u64()? != JOB_METADATA_VERSION {
            return None;
        }
        Some(StoredJob {
            realm: doc.get("realm")?.as_str()?.to_owned(),
            origin_session: doc.get("origin_session")?.as_str()?.parse().ok()?,
            fingerprint: doc.get("fingerprint").and_then(Value::as_str)?.to_owned(),
        })
    }
}
