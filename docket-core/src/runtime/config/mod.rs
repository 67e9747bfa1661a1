//! Runtime configuration (`docs/runs-and-moments.md`, “Configuration and injection”): everything
//! nondeterministic enters here.

mod ids;

use std::fmt;
use std::sync::Arc;

pub use ids::{IdGenerator, IdKind, RandomIds, SequentialIds};

use super::error::{ErrorKind, Phase, RuntimeError};
use crate::model::{Clock, SystemClock, Timestamp, ValueMap};

/// Default host attempt ceiling in milliseconds.
pub const DEFAULT_MAX_ATTEMPT_ELAPSED_MS: u64 = 2_000;

/// Injected clock, id generator and host limits for the moment loop.
///
/// Cloning is cheap: the clock and the id generator are shared.
#[derive(Clone)]
pub struct RuntimeConfig {
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    max_attempt_elapsed_ms: u64,
    max_supersteps: Option<u64>,
    context: ValueMap,
    resume_floor: Option<Timestamp>,
}

impl fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("clock", &self.clock)
            .field("ids", &self.ids)
            .field("max_attempt_elapsed_ms", &self.max_attempt_elapsed_ms)
            .field("max_supersteps", &self.max_supersteps)
            .field("context_keys", &self.context.keys().collect::<Vec<_>>())
            .field("resume_floor", &self.resume_floor)
            .finish()
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self::new(Arc::new(SystemClock))
    }
}

impl RuntimeConfig {
    /// Defaults (random ids, 2 s attempt ceiling, no host superstep bound, empty context, no
    /// resume floor) around `clock`.
    #[must_use]
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        RuntimeConfig {
            clock,
            ids: Arc::new(RandomIds),
            max_attempt_elapsed_ms: DEFAULT_MAX_ATTEMPT_ELAPSED_MS,
            max_supersteps: None,
            context: ValueMap::new(),
            resume_floor: None,
        }
    }

    /// Replaces the id generator.
    #[must_use]
    pub fn with_ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.ids = ids;
        self
    }

    /// Sets the host attempt ceiling.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] when `ms` is zero: every attempt needs a finite, positive
    /// deadline.
    pub fn with_max_attempt_elapsed_ms(mut self, ms: u64) -> Result<Self, RuntimeError> {
        if ms == 0 {
            return Err(RuntimeError::new(
                ErrorKind::InvalidOptions,
                Phase::Config,
                "max_attempt_elapsed_ms must be a positive integer",
            ));
        }
        self.max_attempt_elapsed_ms = ms;
        Ok(self)
    }

    /// Sets the host fallback for graphs without a `max_supersteps` policy.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] when `limit` is `Some(0)`.
    pub fn with_max_supersteps(mut self, limit: Option<u64>) -> Result<Self, RuntimeError> {
        if limit == Some(0) {
            return Err(RuntimeError::new(
                ErrorKind::InvalidOptions,
                Phase::Config,
                "max_supersteps must be a positive integer",
            ));
        }
        self.max_supersteps = limit;
        Ok(self)
    }

    /// Sets the host application context passed to nodes.
    #[must_use]
    pub fn with_context(mut self, context: ValueMap) -> Self {
        self.context = context;
        self
    }

    /// Sets (or clears) the resume floor (`docs/runs-and-moments.md`, “The resume floor”).
    #[must_use]
    pub fn with_resume_floor(mut self, floor: Option<Timestamp>) -> Self {
        self.resume_floor = floor;
        self
    }

    /// The injected clock.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The injected id generator.
    #[must_use]
    pub fn ids(&self) -> &dyn IdGenerator {
        self.ids.as_ref()
    }

    /// The host attempt ceiling in milliseconds (always positive).
    #[must_use]
    pub fn max_attempt_elapsed_ms(&self) -> u64 {
        self.max_attempt_elapsed_ms
    }

    /// The host `max_supersteps` fallback.
    #[must_use]
    pub fn max_supersteps(&self) -> Option<u64> {
        self.max_supersteps
    }

    /// The host application context.
    #[must_use]
    pub fn context(&self) -> &ValueMap {
        &self.context
    }

    /// The resume floor.
    #[must_use]
    pub fn resume_floor(&self) -> Option<Timestamp> {
        self.resume_floor
    }

    /// The current instant.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// `max(clock(), resume_floor)`: the instant the resume path compares timers with.
    #[must_use]
    pub fn floored_now(&self) -> Timestamp {
        let now = self.clock.now();
        self.resume_floor.map_or(now, |floor| now.max(floor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ManualClock;

    #[test]
    fn defaults_and_validation() {
        let clock = ManualClock::new(Timestamp::from_millis(10));
        let config = RuntimeConfig::new(Arc::new(clock.clone()));
        assert_eq!(config.max_attempt_elapsed_ms(), 2_000);
        assert_eq!(config.max_supersteps(), None);
        assert!(config.clone().with_max_attempt_elapsed_ms(0).is_err());
        assert!(config.clone().with_max_supersteps(Some(0)).is_err());
        let floored = config.with_resume_floor(Some(Timestamp::from_millis(50)));
        assert_eq!(floored.floored_now(), Timestamp::from_millis(50));
        clock.advance_millis(100);
        assert_eq!(floored.floored_now(), Timestamp::from_millis(110));
        assert_eq!(floored.now(), Timestamp::from_millis(110));
    }
}
