//! Queries, pages and keyset cursors (`docs/storage-contract.md`, “Pages and cursors”).
//!
//! Page construction rules shared by all backends: fetch `limit + 1` rows in final order, keep
//! the first `limit`; `has_more` says the lookahead row existed; the cursor is the key of the
//! last returned row, or the supplied cursor when the page is empty.

use serde::{Deserialize, Serialize};

use super::event::Event;
use super::ids::{GraphHash, GraphId, RunId};
use super::run::RunStatus;
use super::scope::OwnerScope;
use super::time::Timestamp;

/// Largest page any list operation returns.
pub const MAX_PAGE_LIMIT: u32 = 1000;

/// The content address of one graph version, relative to an owner scope.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GraphRef {
    /// Graph id.
    pub graph_id: GraphId,
    /// Effective-document hash.
    pub graph_hash: GraphHash,
}

/// A published graph version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphVersion {
    /// Its address.
    pub graph_ref: GraphRef,
    /// When it was first saved (never changes on re-save).
    pub published_at: Timestamp,
}

/// Keyset cursor over graph versions (newest first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphCursor {
    /// Publication time of the last returned version.
    pub published_at: Timestamp,
    /// Hash of the last returned version.
    pub graph_hash: GraphHash,
}

/// A query over the versions of one graph id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphVersionQuery {
    /// Page size, `1..=MAX_PAGE_LIMIT`.
    pub limit: u32,
    /// Exclusive cursor; `None` starts at the newest.
    pub before: Option<GraphCursor>,
}

/// One page of graph versions, newest first by `(published_at, graph_hash)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphVersionPage {
    /// The versions.
    pub versions: Vec<GraphVersion>,
    /// Cursor for the next page.
    pub next_before: Option<GraphCursor>,
    /// Whether more versions exist past this page.
    pub has_more: bool,
}

/// Keyset cursor over runs (newest first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCursor {
    /// `started_at` of the last returned run.
    pub started_at: Timestamp,
    /// Id of the last returned run.
    pub run_id: RunId,
}

/// A query over runs.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunQuery {
    /// Page size, `1..=MAX_PAGE_LIMIT` (0 is invalid).
    pub limit: u32,
    /// Exclusive cursor; `None` starts at the newest.
    pub before: Option<RunCursor>,
    /// Only runs of this graph id.
    pub graph_id: Option<GraphId>,
    /// Only runs of this graph hash.
    pub graph_hash: Option<GraphHash>,
    /// Only runs in one of these statuses (non-empty when present).
    pub statuses: Option<Vec<RunStatus>>,
}

/// Summary columns of a run (listing never decodes the document).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// Run id.
    pub id: RunId,
    /// Owner.
    pub owner: OwnerScope,
    /// Graph id.
    pub graph_id: GraphId,
    /// Graph hash.
    pub graph_hash: GraphHash,
    /// Status.
    pub status: RunStatus,
    /// Committed step.
    pub step: u64,
    /// Committed checkpoint sequence (≥ 1).
    pub checkpoint_seq: u64,
    /// Start time.
    pub started_at: Timestamp,
    /// Last document change.
    pub updated_at: Timestamp,
    /// Terminal time.
    pub finished_at: Option<Timestamp>,
}

/// One page of runs, newest first by `(started_at, run_id)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPage {
    /// The runs.
    pub runs: Vec<RunSummary>,
    /// Cursor for the next page.
    pub next_before: Option<RunCursor>,
    /// Whether more runs exist past this page.
    pub has_more: bool,
}

/// A query over one run's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventQuery {
    /// Only events with `seq > after_seq`.
    pub after_seq: u64,
    /// Page size, `1..=MAX_PAGE_LIMIT`.
    pub limit: u32,
}

/// One page of events, ascending by seq, with the retained bounds (one consistent snapshot).
#[derive(Clone, Debug, PartialEq)]
pub struct EventPage {
    /// The events.
    pub events: Vec<Event>,
    /// Last returned seq, or the supplied `after_seq` when empty.
    pub next_after_seq: u64,
    /// Whether retained events exist past `next_after_seq`.
    pub has_more: bool,
    /// Smallest retained seq, if any event is retained.
    pub oldest_available_seq: Option<u64>,
    /// Largest retained seq, if any event is retained.
    pub latest_available_seq: Option<u64>,
    /// The run's `event_seq` (so "fully pruned" is `latest_seq > 0` with no retained bounds).
    pub latest_seq: u64,
}
