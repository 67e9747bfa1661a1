//! This store's own failures, as the portable errors of the traits: there is no driver, so
//! the only ones are a poisoned lock and a value `serde_json` cannot encode.

use docket_core::ops::OpsError;
use docket_core::store::{Message, StoreError};

/// The lock was poisoned by a panic while held.
///
/// Writes happen only after every check passed, so a panic cannot leave a half-written row;
/// refusing further work is still the safe answer.
pub(crate) fn poisoned_lock() -> StoreError {
    StoreError::permanent(Message("the map store's lock is poisoned".into()))
}

/// A run or event `what` that `serde_json` cannot encode: the proposal is refused and
/// nothing is written.
pub(crate) fn unencodable(what: &str, error: &serde_json::Error) -> StoreError {
    StoreError::invalid_transition(format!("{what} cannot be encoded: {error}"))
}

/// A field of an operation record that `serde_json` cannot encode: the call is refused and
/// nothing is written.
pub(crate) fn unencodable_operation(error: &serde_json::Error) -> OpsError {
    OpsError::invalid_argument(format!("cannot be encoded: {error}"))
}
