//! The read model of one operation ([`OperationLifecycleSnapshot`]) and what draining
//! completed operations returns ([`CompletedOperation`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::Timestamp;

use super::ids::{OperationId, SessionId};
use super::kind::{OperationKind, OperationSource};
use super::outcome::OperationTerminalOutcome;
use super::status::{OperationPublicResultClass, OperationStatus};

/// The position of a terminal transition among its owner's terminal transitions: 1 for the
/// first, then exactly one more for each next one. Never reused, even after the record is
/// collected or evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CompletionSeq(pub u64);

impl CompletionSeq {
    /// The first sequence an owner mints.
    pub const FIRST: CompletionSeq = CompletionSeq(1);

    /// The number.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CompletionSeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Everything the registry knows about one operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationLifecycleSnapshot {
    /// The id.
    pub id: OperationId,
    /// The owner, fixed at registration.
    pub owner: SessionId,
    /// The kind.
    pub kind: OperationKind,
    /// The display name.
    pub display_name: String,
    /// The source label.
    pub source_label: String,
    /// The source, if any.
    pub source: Option<OperationSource>,
    /// The status.
    pub status: OperationStatus,
    /// Progress ticks reported while running or retiring.
    pub progress_count: u64,
    /// How it ended; present exactly when the status is terminal, of the matching variant.
    pub terminal_outcome: Option<OperationTerminalOutcome>,
    /// Its place in the owner's completion order; present exactly when terminal.
    pub completion_seq: Option<CompletionSeq>,
    /// The caller's `now` at registration.
    pub created_at: Timestamp,
    /// The caller's `now` when it entered Running.
    pub started_at: Option<Timestamp>,
    /// The caller's `now` when it turned terminal.
    pub completed_at: Option<Timestamp>,
}

impl OperationLifecycleSnapshot {
    /// Whether no transition leaves its status.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// The coarse public reading of its status.
    #[must_use]
    pub fn public_result_class(&self) -> OperationPublicResultClass {
        self.status.public_result_class()
    }

    /// The child session, when its source is one.
    #[must_use]
    pub fn child_session_id(&self) -> Option<SessionId> {
        self.source
            .as_ref()
            .and_then(OperationSource::child_session_id)
    }

    /// Milliseconds from registration to the terminal transition, once terminal (by the
    /// callers' clocks, floored at zero).
    #[must_use]
    pub fn elapsed_ms(&self) -> Option<u64> {
        self.completed_at
            .map(|done| done.millis_since(self.created_at))
    }
}

/// One terminal operation drained by `collect_completed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedOperation {
    /// The id (free to register again once drained).
    pub id: OperationId,
    /// Its completion sequence.
    pub completion_seq: CompletionSeq,
    /// How it ended.
    pub outcome: OperationTerminalOutcome,
}
