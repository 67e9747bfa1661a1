//! The [`EvidenceGraph`] port: work items that carry an ordered, append-only list of
//! evidence under a revision.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::error::EvidenceError;
use super::ids::WorkItemRef;

/// Confirmation kinds. Everything but [`WorkEvidenceKind::SelfAttest`] is *reserved*: it may
/// satisfy a completion policy, so the generic [`EvidenceGraph::add_evidence`] refuses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkEvidenceKind {
    /// The worker's own statement.
    #[default]
    SelfAttest,
    /// The host confirmed.
    HostConfirmation,
    /// The principal confirmed.
    PrincipalConfirmation,
    /// A supervisor confirmed.
    SupervisorConfirmation,
    /// A reviewer confirmed.
    ReviewerConfirmation,
}

/// The `kind` strings that name reserved evidence when sent as plain text.
pub const RESERVED_EVIDENCE_KINDS: [&str; 4] = [
    "host_confirmation",
    "principal_confirmation",
    "supervisor_confirmation",
    "reviewer_confirmation",
];

/// One piece of evidence on a work item. Equality is structural over every field; optional
/// fields are left out of the serde form when absent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorkEvidenceRef {
    /// Provenance and display kind (opaque).
    pub kind: String,
    /// The evidence id (unique by convention of the writer; the graph does not deduplicate).
    pub id: String,
    /// A short label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// A summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// A typed confirmation kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_kind: Option<WorkEvidenceKind>,
    /// Who confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirming_owner_key: Option<String>,
}

impl WorkEvidenceRef {
    /// Refuses reserved evidence (a typed reserved confirmation kind, or a reserved `kind`
    /// string) and empty ids or kinds.
    ///
    /// # Errors
    /// [`EvidenceError::InvalidInput`] naming the reason.
    pub fn check_generic(&self) -> Result<(), EvidenceError> {
        if self.id.trim().is_empty() || self.kind.trim().is_empty() {
            return Err(EvidenceError::InvalidInput(
                "evidence needs a non-empty id and kind".into(),
            ));
        }
        if matches!(self.confirmation_kind, Some(kind) if kind != WorkEvidenceKind::SelfAttest) {
            return Err(EvidenceError::InvalidInput(
                "reserved confirmation evidence cannot be added through the generic path".into(),
            ));
        }
        if RESERVED_EVIDENCE_KINDS.contains(&self.kind.as_str()) {
            return Err(EvidenceError::InvalidInput(format!(
                "evidence kind {:?} is reserved",
                self.kind
            )));
        }
        Ok(())
    }
}

/// A work item as the evidence port sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvidenceItem {
    /// Where it lives.
    pub item: WorkItemRef,
    /// Grows by one with every accepted write.
    pub revision: u64,
    /// Evidence in the order it was added.
    pub evidence: Vec<WorkEvidenceRef>,
}

/// Durable work items with evidence.
///
/// # Contract
/// * `add_evidence` appends under `expected_revision`: exactly one of several writers at one
///   revision wins, the others get [`EvidenceError::StaleRevision`] and nothing changes.
/// * Evidence is never deduplicated by the graph and never closes an item.
///
/// # Cancel safety
/// Reads are cancel safe; a dropped write may or may not have been applied (read to find out).
#[async_trait]
pub trait EvidenceGraph: Send + Sync + std::fmt::Debug + 'static {
    /// Creates the item at revision 0 with no evidence; an existing item is returned as is.
    ///
    /// # Errors
    /// `InvalidInput` (realm), `Store`.
    async fn ensure_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError>;

    /// The item.
    ///
    /// # Errors
    /// `NotFound`, `Store`.
    async fn get_item(&self, item: &WorkItemRef) -> Result<EvidenceItem, EvidenceError>;

    /// Appends `evidence` if the item is still at `expected_revision`, and returns the item
    /// after the write (revision + 1).
    ///
    /// # Errors
    /// `InvalidInput` (reserved or empty evidence, checked first), `NotFound`,
    /// `StaleRevision`, `Store`.
    async fn add_evidence(
        &self,
        item: &WorkItemRef,
        expected_revision: u64,
        evidence: &WorkEvidenceRef,
    ) -> Result<EvidenceItem, EvidenceError>;
}
