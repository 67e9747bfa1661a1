//! [`OperationSpec`]: what a caller registers.

use serde::{Deserialize, Serialize};

use super::ids::OperationId;
use super::kind::{OperationKind, OperationSource};

/// The registration payload of one operation. The owner is not part of it: every registry
/// call names its owner, and the record belongs to that owner for good.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OperationSpec {
    /// The operation's id (not nil), unique within its owner.
    pub id: OperationId,
    /// What kind of operation it is.
    pub kind: OperationKind,
    /// A name for people (1 to 1024 bytes, no control characters); listings sort by it.
    pub display_name: String,
    /// Where the operation comes from, for people (at most 1024 bytes, no control
    /// characters; may be empty).
    pub source_label: String,
    /// What the operation stands for outside the registry, if anything.
    pub source: Option<OperationSource>,
}

impl OperationSpec {
    /// A spec with an empty source label and no source.
    #[must_use]
    pub fn new(id: OperationId, kind: OperationKind, display_name: impl Into<String>) -> Self {
        OperationSpec {
            id,
            kind,
            display_name: display_name.into(),
            source_label: String::new(),
            source: None,
        }
    }

    /// This spec with `label` as its source label.
    #[must_use]
    pub fn with_source_label(mut self, label: impl Into<String>) -> Self {
        self.source_label = label.into();
        self
    }

    /// This spec with `source`.
    #[must_use]
    pub fn with_source(mut self, source: OperationSource) -> Self {
        self.source = Some(source);
        self
    }
}
