//! In-memory evidence graph and delivery ledger (lost at exit; for tests and examples).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use crate::ports::error::{DetachedJobError, EvidenceError};
use crate::ports::evidence::{EvidenceGraph, EvidenceItem, WorkEvidenceRef};
use crate::ports::ids::{check_scope_component, JobId, JobReference, WorkItemRef};
use crate::ports::ledger::DeliveryLedger;

type ItemKey = (String, String, String);
type JobKey = (String, String);

#[derive(Debug, Default)]
struct State {
    items: BTreeMap<ItemKey, (u64, Vec<WorkEvidenceRef>)>,
    jobs: BTreeMap<JobKey, bool>,
    links: BTreeMap<JobKey, BTreeSet<(String, String)>>,
}

/// Evidence and ledger in one mutex-guarded map; clones share the state, so a clone stands in
/// for "the same database reopened".
#[derive(Clone, Debug, Default)]
pub struct MemoryComposeStore {
    state: Arc<Mutex<State>>,
}

impl MemoryComposeStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-call; every write below is
        // a single insert, so the state is still consistent.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn item_key(item: &WorkItemRef) -> ItemKey {
    (
        item.realm_id.clone(),
        item.namespace.to_string(),
        item.item_id.to_string(),
    )
}

fn job_key(job: &JobReference) -> JobKey {
    (job.realm_id().to_owned(), job.job_id().to_string())
}

fn not_found(item: &WorkItemRef) -> EvidenceError {
    EvidenceError::NotFound {
        realm_id: item.realm_id.clone(),
        namespace: item.namespace.clone(),
        id: item.item_id.clone(),
    }
}

#[async_trait]
impl EvidenceGraph for MemoryComposeStore {
    async fn ensure_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        check_scope_component("work item realm", &item.realm_id)
            .map_err(EvidenceError::InvalidInput)?;
        let mut state = self.lock();
        let (revision, evidence) = state.items.entry(item_key(item)).or_default().clone();
        Ok(EvidenceItem {
            item: item.clone(),
            revision,
            evidence,
        })
    }

    async fn get_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError> {
        let state = self.lock();
        let (revision, evidence) = state
            .items
            .get(&item_key(item))
            .ok_or_else(|| not_found(item))?;
        Ok(EvidenceItem {
            item: item.clone(),
            revision: *revision,
            evidence: evidence.clone(),
        })
    }

    async fn add_evidence(
        &self,
        item: &WorkItemRef,
        expected_revision: u64,
        evidence: &WorkEvidenceRef,
    ) -> Result<EvidenceItem, EvidenceError> {
        evidence.check_generic()?;
        let mut state = self.lock();
        let (revision, list) = state
            .items
            .get_mut(&item_key(item))
            .ok_or_else(|| not_found(item))?;
        if *revision != expected_revision {
            return Err(EvidenceError::StaleRevision {
                id: item.item_id.clone(),
                expected: expected_revision,
                actual: *revision,
            });
        }
        *revision += 1;
        list.push(evidence.clone());
        Ok(EvidenceItem {
            item: item.clone(),
            revision: *revision,
            evidence: list.clone(),
        })
    }
}

#[async_trait]
impl DeliveryLedger for MemoryComposeStore {
    async fn record_pending(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        self.lock().jobs.entry(job_key(job)).or_insert(false);
        Ok(())
    }

    async fn pending(&self, realm: &str, limit: u32) -> Result<Vec<JobId>, DetachedJobError> {
        let state = self.lock();
        state
            .jobs
            .iter()
            .filter(|((r, _), delivered)| r == realm && !**delivered)
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|((_, job), _)| JobId::new(job.clone()))
            .collect()
    }

    async fn mark_delivered(&self, job: &JobReference) -> Result<(), DetachedJobError> {
        self.lock().jobs.insert(job_key(job), true);
        Ok(())
    }

    async fn is_delivered(&self, job: &JobReference) -> Result<bool, DetachedJobError> {
        Ok(self
            .lock()
            .jobs
            .get(&job_key(job))
            .copied()
            .unwrap_or(false))
    }

    async fn link(&self, job: &JobReference, item: &WorkItemRef) -> Result<(), DetachedJobError> {
        self.lock()
            .links
            .entry(job_key(job))
            .or_default()
            .insert((item.namespace.to_string(), item.item_id.to_string()));
        Ok(())
    }

    async fn links(&self, job: &JobReference) -> Result<Vec<WorkItemRef>, DetachedJobError> {
        let state = self.lock();
        let Some(links) = state.links.get(&job_key(job)) else {
            return Ok(Vec::new());
        };
        links
            .iter()
            .map(|(namespace, item)| to_item_ref(job.realm_id(), namespace, item))
            .collect()
    }
}

/// Rebuilds a stored item reference; a stored value that no longer validates is a corrupt
/// store, reported as a permanent fault.
pub(crate) fn to_item_ref(
    realm: &str,
    namespace: &str,
    item: &str,
) -> Result<WorkItemRef, DetachedJobError> {
    use crate::ports::ids::{WorkItemId, WorkNamespace};
    Ok(WorkItemRef {
        realm_id: realm.to_owned(),
        namespace: WorkNamespace::new(namespace)
            .map_err(|e| DetachedJobError::store(false, format!("stored link: {e}")))?,
        item_id: WorkItemId::new(item)
            .map_err(|e| DetachedJobError::store(false, format!("stored link: {e}")))?,
    })
}
