//! How the inline driver serves parks: by sleeping until the deadline.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use crate::model::ManualClock;

/// Waits for a number of milliseconds.
#[async_trait]
pub trait Sleeper: Send + Sync + fmt::Debug {
    /// Returns once `ms` milliseconds have passed (by whatever clock the sleeper serves).
    async fn sleep(&self, ms: u64);
}

/// Real sleeping with tokio's timer.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

#[async_trait]
impl Sleeper for TokioSleeper {
    async fn sleep(&self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// A test sleeper: advances a [`ManualClock`] instead of waiting, and records every call.
#[derive(Debug)]
pub struct ManualSleeper {
    clock: ManualClock,
    calls: Mutex<Vec<u64>>,
}

impl ManualSleeper {
    /// A sleeper that advances `clock` (clones share the instant).
    #[must_use]
    pub fn new(clock: ManualClock) -> Self {
        ManualSleeper {
            clock,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// The durations slept so far, in call order.
    #[must_use]
    pub fn calls(&self) -> Vec<u64> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Sleeper for ManualSleeper {
    async fn sleep(&self, ms: u64) {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(ms);
        self.clock
            .advance_millis(i64::try_from(ms).unwrap_or(i64::MAX));
    }
}
