//! Time: UTC microsecond timestamps and the injected clock.
//!
//! Every durable timestamp is a [`Timestamp`] (microseconds since the Unix epoch, UTC). The wall
//! clock is only read through [`Clock`], so the runtime, the lifecycle and every store can be
//! driven by a [`ManualClock`] in tests.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A UTC instant with microsecond precision, stored as microseconds since the Unix epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// Builds a timestamp from microseconds since the epoch.
    #[must_use]
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    /// Builds a timestamp from milliseconds since the epoch (saturating).
    #[must_use]
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis.saturating_mul(1000))
    }

    /// Microseconds since the epoch.
    #[must_use]
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// This instant moved forward by `ms` milliseconds (saturating; negative moves back).
    #[must_use]
    pub const fn add_millis(self, ms: i64) -> Self {
        Self(self.0.saturating_add(ms.saturating_mul(1000)))
    }

    /// This instant moved forward by `us` microseconds (saturating).
    #[must_use]
    pub const fn add_micros(self, us: i64) -> Self {
        Self(self.0.saturating_add(us))
    }

    /// Whole milliseconds from `earlier` to `self`, floored at zero.
    #[must_use]
    pub fn millis_since(self, earlier: Timestamp) -> u64 {
        u64::try_from(self.0.saturating_sub(earlier.0).max(0) / 1000).unwrap_or(0)
    }

    /// The current wall-clock time. Only [`SystemClock`] should call this.
    #[must_use]
    pub fn now_utc() -> Self {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Self(since)
    }

    /// RFC 3339 rendering with microseconds, e.g. `2026-11-30T09:53:54.000001Z`.
    #[must_use]
    pub fn to_rfc3339(self) -> String {
        let secs = self.0.div_euclid(1_000_000);
        let micros = self.0.rem_euclid(1_000_000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60
        )
    }
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's days-to-civil algorithm, shifted so eras start on 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let m = u32::try_from(m).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.to_rfc3339())
    }
}

/// The injected wall clock. Every decision that depends on time reads it through this trait.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The real UTC wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now_utc()
    }
}

/// A clock that only moves when told to; clones share the same instant.
#[derive(Debug, Clone)]
pub struct ManualClock {
    micros: Arc<AtomicI64>,
}

impl ManualClock {
    /// A manual clock starting at `start`.
    #[must_use]
    pub fn new(start: Timestamp) -> Self {
        Self {
            micros: Arc::new(AtomicI64::new(start.as_micros())),
        }
    }

    /// Sets the current instant.
    pub fn set(&self, at: Timestamp) {
        self.micros.store(at.as_micros(), Ordering::SeqCst);
    }

    /// Moves the clock forward by `ms` milliseconds and returns the new instant.
    pub fn advance_millis(&self, ms: i64) -> Timestamp {
        let delta = ms.saturating_mul(1000);
        let next = self
            .micros
            .fetch_add(delta, Ordering::SeqCst)
            .saturating_add(delta);
        Timestamp::from_micros(next)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros(self.micros.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_rendering_matches_known_instants() {
        assert_eq!(Timestamp::EPOCH.to_rfc3339(), "1970-01-01T00:00:00.000000Z");
        // 2000-02-29T12:34:56.789012Z
        let t = Timestamp::from_micros(951_827_696_789_012);
        assert_eq!(t.to_rfc3339(), "2000-02-29T12:34:56.789012Z");
        let before_epoch = Timestamp::from_micros(-1);
        assert_eq!(before_epoch.to_rfc3339(), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        let shared = clock.clone();
        assert_eq!(clock.now(), Timestamp::from_millis(1_000));
        assert_eq!(shared.advance_millis(500), Timestamp::from_millis(1_500));
        assert_eq!(clock.now(), Timestamp::from_millis(1_500));
    }

    #[test]
    fn arithmetic_saturates_instead_of_overflowing() {
        let max = Timestamp::from_micros(i64::MAX);
        assert_eq!(max.add_millis(10), max);
        assert_eq!(
            Timestamp::from_millis(5).millis_since(Timestamp::from_millis(9)),
            0
        );
    }
}
