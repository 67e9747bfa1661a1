//! How many terminal records an owner keeps.

use std::num::NonZeroU32;

use crate::ops::error::OpsError;

/// Terminal records kept per owner unless configured otherwise.
pub const DEFAULT_RETAINED_TERMINAL: u32 = 256;

/// How many terminal records each owner keeps. A terminal transition that takes an owner
/// past the limit evicts that owner's oldest terminal records (smallest completion sequence
/// first) in the same write; an evicted record is gone (its id may be registered again) but
/// its completion sequence is never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Retention(NonZeroU32);

impl Retention {
    /// Keep at most `max_terminal` terminal records per owner.
    ///
    /// # Errors
    /// `InvalidArgument` for 0.
    pub fn new(max_terminal: u32) -> Result<Self, OpsError> {
        NonZeroU32::new(max_terminal).map(Retention).ok_or_else(|| {
            OpsError::invalid_argument("an owner must retain at least one terminal record")
        })
    }

    /// The limit.
    #[must_use]
    pub const fn max_terminal(self) -> u32 {
        self.0.get()
    }

    /// How many of the oldest terminal records to evict when an owner holds `retained`.
    #[must_use]
    pub fn overflow(self, retained: u64) -> u64 {
        retained.saturating_sub(u64::from(self.0.get()))
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention(NonZeroU32::new(DEFAULT_RETAINED_TERMINAL).unwrap_or(NonZeroU32::MIN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_keeps_256_and_evicts_the_excess() {
        let retention = Retention::default();
        assert_eq!(retention.max_terminal(), 256);
        assert_eq!(retention.overflow(256), 0);
        assert_eq!(retention.overflow(258), 2);
        assert_eq!(Retention::new(3).expect("valid").overflow(5), 2);
        assert!(Retention::new(0).is_err());
    }
}
