//! The declaration itself: a harness that declares a registry must hand out a store that
//! offers one, and one that does not must hand out a store that offers none. Runs on every
//! store, so a registry is never skipped by mistake.

use crate::env::Env;

/// `RunStore::ops_registry` answers exactly as the harness declares.
pub async fn the_registry_is_offered_exactly_when_declared(env: &Env<'_>) {
    let offered = env.store().ops_registry().is_some();
    if env.capabilities().ops_registry {
        assert!(
            offered,
            "the harness declares an operation registry but the backend offers none"
        );
    } else {
        assert!(
            !offered,
            "the backend offers an operation registry but the harness does not declare it, \
             so its families would be skipped"
        );
    }
}
