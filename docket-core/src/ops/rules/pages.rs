//! Listing order and page construction.
//!
//! Operations list ascending by display name compared as bytes (PostgreSQL `COLLATE "C"`,
//! SQLite `BINARY`), ties broken by id (the hyphenated lowercase UUID, whose byte order is
//! UUID order).

use std::cmp::Ordering;

use crate::ops::query::{OperationCursor, OperationPage, OperationQuery};
use crate::ops::snapshot::OperationLifecycleSnapshot;

/// The listing order of two records.
#[must_use]
pub fn listing_order(a: &OperationLifecycleSnapshot, b: &OperationLifecycleSnapshot) -> Ordering {
    a.display_name
        .as_bytes()
        .cmp(b.display_name.as_bytes())
        .then_with(|| a.id.cmp(&b.id))
}

/// Whether `record` sorts strictly after `cursor` (so it belongs to the page after it).
#[must_use]
pub fn is_after(record: &OperationLifecycleSnapshot, cursor: &OperationCursor) -> bool {
    record
        .display_name
        .as_bytes()
        .cmp(cursor.display_name.as_bytes())
        .then_with(|| record.id.cmp(&cursor.id))
        == Ordering::Greater
}

/// Builds a page from `rows`: the rows after the query's cursor, in listing order, fetched
/// as at most `limit + 1`. The cursor is the last returned row's key, or the supplied cursor
/// when the page is empty.
#[must_use]
pub fn operation_page(
    rows: Vec<OperationLifecycleSnapshot>,
    query: &OperationQuery,
) -> OperationPage {
    let mut operations = rows;
    let limit = query.limit as usize;
    let has_more = operations.len() > limit;
    operations.truncate(limit);
    let next_after = operations
        .last()
        .map(|r| OperationCursor {
            display_name: r.display_name.clone(),
            id: r.id,
        })
        .or_else(|| query.after.clone());
    OperationPage {
        operations,
        next_after,
        has_more,
    }
}

/// The page of `all` (one owner's records, any order) that `query` asks for: sorts, skips to
/// the cursor and builds the page. For in-process stores that hold every record anyway.
#[must_use]
pub fn page_of(mut all: Vec<OperationLifecycleSnapshot>, query: &OperationQuery) -> OperationPage {
    all.sort_by(listing_order);
    let rows: Vec<_> = all
        .into_iter()
        .filter(|r| query.after.as_ref().is_none_or(|c| is_after(r, c)))
        .take(query.limit as usize + 1)
        .collect();
    operation_page(rows, query)
}
