//! Worker counters and the commit-latency histogram (what `docket demo` reports).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Highest commit latency the histogram tracks exactly (longer ones are clamped to it).
const MAX_TRACKED_MICROS: u64 = 60_000_000;

/// Counters of one worker (or one facade's manual drains). Cheap to update from many tasks.
#[derive(Debug)]
pub struct WorkerStats {
    moments_committed: AtomicU64,
    fence_losses: AtomicU64,
    discards: AtomicU64,
    abandons: AtomicU64,
    poisons: AtomicU64,
    host_incompatible: AtomicU64,
    recovered_steals: AtomicU64,
    ambiguous_resolved: AtomicU64,
    vehicles_launched: AtomicU64,
    vehicle_crashes: AtomicU64,
    released_unlaunched: AtomicU64,
    polls: AtomicU64,
    poll_requests: AtomicU64,
    wake_hints: AtomicU64,
    commit_latency: Mutex<Histogram<u64>>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            moments_committed: AtomicU64::new(0),
            fence_losses: AtomicU64::new(0),
            discards: AtomicU64::new(0),
            abandons: AtomicU64::new(0),
            poisons: AtomicU64::new(0),
            host_incompatible: AtomicU64::new(0),
            recovered_steals: AtomicU64::new(0),
            ambiguous_resolved: AtomicU64::new(0),
            vehicles_launched: AtomicU64::new(0),
            vehicle_crashes: AtomicU64::new(0),
            released_unlaunched: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            poll_requests: AtomicU64::new(0),
            wake_hints: AtomicU64::new(0),
            commit_latency: Mutex::new(new_histogram()),
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // 1 µs .. 60 s with 3 significant digits: bounds are constants, so this cannot fail.
    Histogram::new_with_bounds(1, MAX_TRACKED_MICROS, 3).expect("constant, valid histogram bounds")
}

/// A point-in-time copy of [`WorkerStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Moments committed by vehicles.
    pub moments_committed: u64,
    /// Drains that lost their fence (before fetch or at commit).
    pub fence_losses: u64,
    /// Moments discarded on a commit error other than a lost fence.
    pub discards: u64,
    /// Poisoning hand-backs (compile/graph incompatibility and deferrals).
    pub abandons: u64,
    /// Runs poisoned (by claim attempts or by abandons).
    pub poisons: u64,
    /// Non-poisoning hand-backs because this host's attempt ceiling is too low.
    pub host_incompatible: u64,
    /// Leases that recovered a run from a holder that stopped without releasing it.
    pub recovered_steals: u64,
    /// Commits with a lost acknowledgement that a re-read proved committed.
    pub ambiguous_resolved: u64,
    /// Vehicles launched.
    pub vehicles_launched: u64,
    /// Vehicles that ended on an error (their claims expire).
    pub vehicle_crashes: u64,
    /// Leases released without a vehicle (failed launch, shutdown).
    pub released_unlaunched: u64,
    /// Claim polls made.
    pub polls: u64,
    /// Poll requests handled (started, coalesced or skipped for lack of demand).
    pub poll_requests: u64,
    /// Wake hints the store pushed (its wakeup stream); 0 when it offers none.
    pub wake_hints: u64,
}

impl std::ops::Add for StatsSnapshot {
    type Output = StatsSnapshot;

    fn add(self, o: StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            moments_committed: self.moments_committed + o.moments_committed,
            fence_losses: self.fence_losses + o.fence_losses,
            discards: self.discards + o.discards,
            abandons: self.abandons + o.abandons,
            poisons: self.poisons + o.poisons,
            host_incompatible: self.host_incompatible + o.host_incompatible,
            recovered_steals: self.recovered_steals + o.recovered_steals,
            ambiguous_resolved: self.ambiguous_resolved + o.ambiguous_resolved,
            vehicles_launched: self.vehicles_launched + o.vehicles_launched,
            vehicle_crashes: self.vehicle_crashes + o.vehicle_crashes,
            released_unlaunched: self.released_unlaunched + o.released_unlaunched,
            polls: self.polls + o.polls,
            poll_requests: self.poll_requests + o.poll_requests,
            wake_hints: self.wake_hints + o.wake_hints,
        }
    }
}

/// Which counter to bump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    FenceLoss,
    Discard,
    Abandon,
    Poison,
    HostIncompatible,
    RecoveredSteal,
    AmbiguousResolved,
    VehicleLaunched,
    VehicleCrash,
    ReleasedUnlaunched,
    Poll,
    PollRequest,
    WakeHint,
}

impl WorkerStats {
    /// Fresh, zeroed counters.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn bump(&self, counter: Counter) {
        self.add(counter, 1);
    }

    pub(crate) fn add(&self, counter: Counter, n: u64) {
        let cell = match counter {
            Counter::FenceLoss => &self.fence_losses,
            Counter::Discard => &self.discards,
            Counter::Abandon => &self.abandons,
            Counter::Poison => &self.poisons,
            Counter::HostIncompatible => &self.host_incompatible,
            Counter::RecoveredSteal => &self.recovered_steals,
            Counter::AmbiguousResolved => &self.ambiguous_resolved,
            Counter::VehicleLaunched => &self.vehicles_launched,
            Counter::VehicleCrash => &self.vehicle_crashes,
            Counter::ReleasedUnlaunched => &self.released_unlaunched,
            Counter::Poll => &self.polls,
            Counter::PollRequest => &self.poll_requests,
            Counter::WakeHint => &self.wake_hints,
        };
        cell.fetch_add(n, Ordering::Relaxed);
    }

    /// Records one committed moment and, when known, how long its commit took.
    pub(crate) fn committed(&self, latency: Option<Duration>) {
        self.moments_committed.fetch_add(1, Ordering::Relaxed);
        let Some(latency) = latency else {
            return;
        };
        let micros = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_TRACKED_MICROS);
        if let Ok(mut h) = self.commit_latency.lock() {
            // In bounds by the clamp above; a failed record would only lose one sample.
            let _ = h.record(micros);
        }
    }

    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> StatsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            moments_committed: get(&self.moments_committed),
            fence_losses: get(&self.fence_losses),
            discards: get(&self.discards),
            abandons: get(&self.abandons),
            poisons: get(&self.poisons),
            host_incompatible: get(&self.host_incompatible),
            recovered_steals: get(&self.recovered_steals),
            ambiguous_resolved: get(&self.ambiguous_resolved),
            vehicles_launched: get(&self.vehicles_launched),
            vehicle_crashes: get(&self.vehicle_crashes),
            released_unlaunched: get(&self.released_unlaunched),
            polls: get(&self.polls),
            poll_requests: get(&self.poll_requests),
            wake_hints: get(&self.wake_hints),
        }
    }

    /// A copy of the commit-latency histogram, in microseconds.
    #[must_use]
    pub fn commit_latency(&self) -> Histogram<u64> {
        self.commit_latency
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|_| new_histogram())
    }
}

/// Merges latency histograms of several workers (in microseconds).
#[must_use]
pub fn merged_latency<'a>(stats: impl IntoIterator<Item = &'a WorkerStats>) -> Histogram<u64> {
    let mut total = new_histogram();
    for s in stats {
        // Same bounds everywhere, so adding cannot fail.
        let _ = total.add(s.commit_latency());
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_latency_accumulate() {
        let stats = WorkerStats::new();
        stats.committed(Some(Duration::from_millis(2)));
        stats.committed(Some(Duration::from_millis(4)));
        stats.committed(None);
        stats.bump(Counter::FenceLoss);
        let snap = stats.snapshot();
        assert_eq!(snap.moments_committed, 3);
        assert_eq!(snap.fence_losses, 1);
        let h = merged_latency([&stats]);
        assert_eq!(h.len(), 2);
        assert!(h.value_at_quantile(0.99) >= 3_900);
    }
}
