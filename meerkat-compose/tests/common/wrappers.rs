//! Test doubles wrapped around the real ports: a pausing job authority, a ledger that fails
//! to acknowledge, a recording sink.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;

use meerkat_compose::{
    DeliveryLedger, DetachedJobError, JobAuthority, JobDeliveryApplication, JobDeliverySink, JobId,
    JobReceipt, JobReference, JobSpec, JobView, WorkItemRef,
};

/// Reads through to the real authority, but holds the *first* read's answer until released,
/// so a test can change the world between a caller's read and its next step.
#[derive(Debug)]
pub struct PausingJobs {
    inner: Arc<dyn JobAuthority>,
    gate: Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>,
}

/// The test's side of the gate: `reached` fires when the first read is held.
pub struct Gate {
    pub reached: oneshot::Receiver<()>,
    pub release: oneshot::Sender<()>,
}

impl PausingJobs {
    pub fn new(inner: Arc<dyn JobAuthority>) -> (Arc<Self>, Gate) {
        let (reached_tx, reached_rx) = oneshot::channel();
        let (release_tx, release_rx) = oneshot::channel();
        (
            Arc::new(PausingJobs {
                inner,
                gate: Mutex::new(Some((reached_tx, release_rx))),
            }),
            Gate {
                reached: reached_rx,
                release: release_tx,
            },
        )
    }
}

#[async_trait]
impl JobAuthority for PausingJobs {
    async fn submit(&self, spec: JobSpec) -> Result<JobReceipt, DetachedJobError> {
        self.inner.submit(spec).await
    }

    async fn get_for_reference(
        &self,
        reference: &JobReference,
    ) -> Result<JobView, DetachedJobError> {
        let answer = self.inner.get_for_reference(reference).await;
        let gate = self.gate.lock().expect("gate").take();
        if let Some((reached, release)) = gate {
            let _ = reached.send(());
            let _ = release.await;
        }
        answer
    }
}

/// A ledger whose acknowledgements fail while `fail_acks` is set: the process "dies" after
/// delivering and before acknowledging.
#[derive(Debug)]
pub struct FailingAckLedger {
    pub inner: Arc<dyn DeliveryLedger>,
    pub fail_acks: AtomicBool,
}

#[async_trait]
impl DeliveryLedger for FailingAckLedger {
    async fn record_pending(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        self.inner.record_pending(job).await
    }
    async fn pending(&self, realm: &str, limit: u32) -> Result<Vec<JobId>, DetachedJobError> {
        self.inner.pending(realm, limit).await
    }
    async fn mark_delivered(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        if self.fail_acks.load(Ordering::SeqCst) {
            return Err(DetachedJobError::store(
                true,
                "injected: killed before the acknowledgement",
            ));
        }
        self.inner.mark_delivered(job).await
    }
    async fn is_delivered(&self, job: &JobReference) -> Result<bool, DetachedJobError> {
        self.inner.is_delivered(job).await
    }
    async fn link(&self, job: &JobReference, item: &WorkItemRef) -> Result<(), DetachedJobError> {
        self.inner.link(job, item).await
    }
    async fn links(&self, job: &JobReference) -> Result<Vec<WorkItemRef>, DetachedJobError> {
        self.inner.links(job).await
    }
}

/// Records every application it is given.
#[derive(Debug, Default)]
pub struct RecordingSink {
    pub applied: Mutex<Vec<JobDeliveryApplication>>,
    pub calls: AtomicUsize,
}

impl RecordingSink {
    pub fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl JobDeliverySink for RecordingSink {
    async fn apply(&self, application: JobDeliveryApplication) -> Result<(), String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.applied.lock().expect("sink").push(application);
        Ok(())
    }
}
