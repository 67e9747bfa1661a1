//! Injected id generation (`docs/runs-and-moments.md`, “Configuration and injection”).
//!
//! Run ids and runtime-generated interrupt ids are the only ids that do not derive from
//! committed state; they enter through an [`IdGenerator`] so tests can make them predictable.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use rand::RngCore;

/// What an id is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IdKind {
    /// A run id.
    Run,
    /// An interrupt id the node did not choose.
    Interrupt,
}

impl IdKind {
    /// The prefix ids of this kind carry (`"run"`, `"interrupt"`).
    #[must_use]
    pub fn prefix(self) -> &'static str {
        match self {
            IdKind::Run => "run",
            IdKind::Interrupt => "interrupt",
        }
    }
}

/// Mints ids. Implementations must return non-empty strings without control characters.
pub trait IdGenerator: Send + Sync + fmt::Debug {
    /// A fresh id of `kind`.
    fn generate(&self, kind: IdKind) -> String;
}

/// The default generator: `"<kind>_" + 16 random lowercase hex digits`.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdGenerator for RandomIds {
    fn generate(&self, kind: IdKind) -> String {
        let mut bytes = [0_u8; 8];
        rand::thread_rng().fill_bytes(&mut bytes);
        format!("{}_{}", kind.prefix(), hex::encode(bytes))
    }
}

/// A deterministic generator for tests: `"<kind>_<n>"` with `n` counting from 1 per kind.
#[derive(Debug, Default)]
pub struct SequentialIds {
    next: Mutex<BTreeMap<IdKind, u64>>,
}

impl SequentialIds {
    /// A generator whose first id of every kind ends in `_1`.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl IdGenerator for SequentialIds {
    fn generate(&self, kind: IdKind) -> String {
        // A poisoned lock only means another test thread panicked mid-increment; the counter
        // itself is still a valid number, so keep counting.
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = next.entry(kind).or_insert(0);
        *n += 1;
        format!("{}_{n}", kind.prefix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_have_the_documented_shape() {
        let id = RandomIds.generate(IdKind::Run);
        assert_eq!(id.len(), "run_".len() + 16);
        assert!(id.starts_with("run_"));
        assert!(id[4..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(id, RandomIds.generate(IdKind::Run));
    }

    #[test]
    fn sequential_ids_count_per_kind() {
        let ids = SequentialIds::new();
        assert_eq!(ids.generate(IdKind::Run), "run_1");
        assert_eq!(ids.generate(IdKind::Interrupt), "interrupt_1");
        assert_eq!(ids.generate(IdKind::Run), "run_2");
    }
}
