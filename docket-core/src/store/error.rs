//! The one error type every store returns.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// A boxed, shareable source error (driver errors are converted, never exposed as types).
pub type SourceError = Arc<dyn StdError + Send + Sync + 'static>;

/// The portable error algebra of the store traits (`docs/storage-contract.md`, “Error
/// vocabulary”).
///
/// Backends map their native failures explicitly (SQLSTATE 40001/40P01, `SQLITE_BUSY`,
/// connection loss, Redis `BUSY`) into these variants; no driver error type crosses the traits.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The scoped graph, run or event is absent (including "owned by another tenant").
    #[error("not found")]
    NotFound,
    /// A malformed proposal, an immutable-identity mismatch or an invalid schedule/event.
    #[error("invalid transition: {reason}")]
    InvalidTransition {
        /// What was wrong.
        reason: String,
    },
    /// The claim token or the checkpoint fence no longer matches.
    #[error("stale checkpoint: the fence (checkpoint_seq or claim token) no longer matches")]
    StaleCheckpoint,
    /// The run id already exists (in any scope).
    #[error("conflict: the run id already exists")]
    Conflict,
    /// A stored event at this seq has different content.
    #[error("event conflict at seq {seq}: a different event is already stored")]
    EventConflict {
        /// The contested seq.
        seq: u64,
    },
    /// Different bytes are already stored under this graph address.
    #[error("graph content conflict: different content is stored under this address")]
    GraphContentConflict,
    /// The graph's bytes do not hash to the given address.
    #[error("invalid graph hash: the content does not hash to the given address")]
    InvalidGraphHash,
    /// The graph document cannot be stored (wrong id, unencodable, ...).
    #[error("invalid graph document: {reason}")]
    InvalidGraphDocument {
        /// What was wrong.
        reason: String,
    },
    /// Stored graph bytes fail verification (never reported as absent).
    #[error("corrupt graph: {detail}")]
    CorruptGraph {
        /// What failed.
        detail: String,
    },
    /// A stored record cannot be decoded or breaks an invariant (never reported as absent).
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// Which record, e.g. `"run row r1"`.
        what: String,
        /// What failed.
        detail: String,
    },
    /// The run is terminal and the operation needs a live run.
    #[error("inactive run: the run is terminal")]
    InactiveRun,
    /// A caller-supplied argument is out of range (limit 0, retry_at < now, ...).
    #[error("invalid argument: {reason}")]
    InvalidArgument {
        /// What was wrong.
        reason: String,
    },
    /// The backend could not be reached or refused the operation; nothing was written.
    #[error("store unavailable ({}): {source}", if *.retryable { "retryable" } else { "permanent" })]
    Unavailable {
        /// Whether retrying later may succeed.
        retryable: bool,
        /// The underlying failure.
        source: SourceError,
    },
    /// The write was sent but its outcome is unknown (connection lost after sending).
    #[error("ambiguous outcome: the write may or may not have been applied: {source}")]
    Ambiguous {
        /// The underlying failure.
        source: SourceError,
    },
}

/// The variant of a [`StoreError`] without its payload, for comparisons across backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum StoreErrorKind {
    NotFound,
    InvalidTransition,
    StaleCheckpoint,
    Conflict,
    EventConflict,
    GraphContentConflict,
    InvalidGraphHash,
    InvalidGraphDocument,
    CorruptGraph,
    Corrupt,
    InactiveRun,
    InvalidArgument,
    Unavailable,
    Ambiguous,
}

impl StoreError {
    /// The payload-free variant.
    #[must_use]
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            StoreError::NotFound => StoreErrorKind::NotFound,
            StoreError::InvalidTransition { .. } => StoreErrorKind::InvalidTransition,
            StoreError::StaleCheckpoint => StoreErrorKind::StaleCheckpoint,
            StoreError::Conflict => StoreErrorKind::Conflict,
            StoreError::EventConflict { .. } => StoreErrorKind::EventConflict,
            StoreError::GraphContentConflict => StoreErrorKind::GraphContentConflict,
            StoreError::InvalidGraphHash => StoreErrorKind::InvalidGraphHash,
            StoreError::InvalidGraphDocument { .. } => StoreErrorKind::InvalidGraphDocument,
            StoreError::CorruptGraph { .. } => StoreErrorKind::CorruptGraph,
            StoreError::Corrupt { .. } => StoreErrorKind::Corrupt,
            StoreError::InactiveRun => StoreErrorKind::InactiveRun,
            StoreError::InvalidArgument { .. } => StoreErrorKind::InvalidArgument,
            StoreError::Unavailable { .. } => StoreErrorKind::Unavailable,
            StoreError::Ambiguous { .. } => StoreErrorKind::Ambiguous,
        }
    }

    /// Whether retrying the same call later may succeed without changing it.
    ///
    /// Only infrastructure failures are retryable; [`StoreError::Ambiguous`] is *not*: the
    /// caller must first find out whether the write landed (`docs/engine.md`, “Ambiguous commits”).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable {
                retryable: true,
                ..
            }
        )
    }

    /// Whether the backend refused the operation for a reason retrying will not fix — a
    /// read-only database, missing privileges, a server setting Docket cannot work with — as
    /// opposed to a transient outage ([`StoreError::is_retryable`]) or a refusal about this
    /// one call's arguments or data.
    ///
    /// Backends only map their native errors onto `Unavailable { retryable }`; the engine
    /// decides what a permanent failure means (a worker whose claim polls keep failing this
    /// way stops with an error instead of retrying forever).
    #[must_use]
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable {
                retryable: false,
                ..
            }
        )
    }

    /// An invalid-transition error.
    pub fn invalid_transition(reason: impl Into<String>) -> Self {
        StoreError::InvalidTransition {
            reason: reason.into(),
        }
    }

    /// An invalid-argument error.
    pub fn invalid_argument(reason: impl Into<String>) -> Self {
        StoreError::InvalidArgument {
            reason: reason.into(),
        }
    }

    /// A corrupt-record error.
    pub fn corrupt(what: impl Into<String>, detail: impl fmt::Display) -> Self {
        StoreError::Corrupt {
            what: what.into(),
            detail: detail.to_string(),
        }
    }

    /// A retryable unavailability caused by `source`.
    pub fn retryable(source: impl StdError + Send + Sync + 'static) -> Self {
        StoreError::Unavailable {
            retryable: true,
            source: Arc::new(source),
        }
    }

    /// A permanent unavailability caused by `source`.
    pub fn permanent(source: impl StdError + Send + Sync + 'static) -> Self {
        StoreError::Unavailable {
            retryable: false,
            source: Arc::new(source),
        }
    }

    /// An ambiguous outcome caused by `source`.
    pub fn ambiguous(source: impl StdError + Send + Sync + 'static) -> Self {
        StoreError::Ambiguous {
            source: Arc::new(source),
        }
    }
}

/// A plain message usable as a [`SourceError`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Message(pub String);
