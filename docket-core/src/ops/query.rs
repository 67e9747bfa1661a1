//! Listing an owner's operations: [`OperationQuery`] in, [`OperationPage`] out, keyset-paged
//! by `(display_name, id)` ascending, with the rules of every other page of the workspace:
//! fetch `limit + 1` rows in final order, return the first `limit`, `has_more` says whether
//! the lookahead row existed, and the cursor is the key of the last returned row (or the
//! supplied cursor when the page is empty).

use serde::{Deserialize, Serialize};

use super::ids::OperationId;
use super::snapshot::OperationLifecycleSnapshot;

/// The key of the last operation of a page.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OperationCursor {
    /// Its display name.
    pub display_name: String,
    /// Its id.
    pub id: OperationId,
}

/// A page request over one owner's retained operations (live and terminal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationQuery {
    /// Page size, `1..=MAX_PAGE_LIMIT`.
    pub limit: u32,
    /// Exclusive cursor; `None` starts at the first display name.
    pub after: Option<OperationCursor>,
}

impl OperationQuery {
    /// The first page of `limit` operations.
    #[must_use]
    pub fn first(limit: u32) -> Self {
        OperationQuery { limit, after: None }
    }
}

/// One page of operations, ascending by display name (compared bytewise), ties by id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationPage {
    /// The operations.
    pub operations: Vec<OperationLifecycleSnapshot>,
    /// The cursor for the next page.
    pub next_after: Option<OperationCursor>,
    /// Whether more operations sort after this page.
    pub has_more: bool,
}
