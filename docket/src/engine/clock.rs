//! The engine's injected sources of elapsed time and randomness.
//!
//! The wall clock ([`docket_core::model::Clock`]) stamps everything durable; drain budgets are
//! measured on a separate monotonic clock so a wall clock jumping backwards (or a manual clock
//! in tests) never stretches a drain, and jitter is injected so tests can make it zero.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use std::time::Instant;

use rand::Rng;

/// Milliseconds on a clock that never goes backwards.
pub trait MonotonicClock: Send + Sync + fmt::Debug + 'static {
    /// Milliseconds since an arbitrary, fixed origin.
    fn now_ms(&self) -> u64;
}

/// The process's monotonic clock ([`Instant`]).
#[derive(Debug, Clone, Copy)]
pub struct SystemMonotonic {
    origin: Instant,
}

impl SystemMonotonic {
    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        SystemMonotonic {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemMonotonic {
    fn default() -> Self {
        Self::new()
    }
}

impl MonotonicClock for SystemMonotonic {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// A monotonic clock that returns scripted samples in order, then repeats the last one (for
/// tests of the elapsed drain budget).
#[derive(Debug, Default)]
pub struct ScriptedMonotonic {
    samples: Mutex<VecDeque<u64>>,
    last: Mutex<u64>,
}

impl ScriptedMonotonic {
    /// A clock that answers `samples` one by one.
    #[must_use]
    pub fn new(samples: impl IntoIterator<Item = u64>) -> Self {
        ScriptedMonotonic {
            samples: Mutex::new(samples.into_iter().collect()),
            last: Mutex::new(0),
        }
    }
}

impl MonotonicClock for ScriptedMonotonic {
    fn now_ms(&self) -> u64 {
        let next = self
            .samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sample) = next {
            *last = sample;
        }
        *last
    }
}

/// Spreads delays so many workers do not act in lockstep.
pub trait Jitter: Send + Sync + fmt::Debug + 'static {
    /// A delay in `0..=n` milliseconds to add to (or use instead of) `n`.
    fn jitter(&self, n: u64) -> u64;
}

/// Uniform jitter in `1..=n`, 0 when `n` is 0 (`docs/engine.md`, “The dispatcher”).
#[derive(Debug, Clone, Copy, Default)]
pub struct UniformJitter;

impl Jitter for UniformJitter {
    fn jitter(&self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            rand::thread_rng().gen_range(1..=n)
        }
    }
}

/// No jitter at all: always 0 (deterministic tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJitter;

impl Jitter for NoJitter {
    fn jitter(&self, _n: u64) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_samples_then_repeat_the_last() {
        let clock = ScriptedMonotonic::new([0, 500, 1500]);
        let seen: Vec<u64> = (0..4).map(|_| clock.now_ms()).collect();
        assert_eq!(seen, vec![0, 500, 1500, 1500]);
    }

    #[test]
    fn uniform_jitter_stays_in_range() {
        assert_eq!(UniformJitter.jitter(0), 0);
        for _ in 0..100 {
            let j = UniformJitter.jitter(10);
            assert!((1..=10).contains(&j));
        }
        assert_eq!(NoJitter.jitter(10), 0);
    }
}
