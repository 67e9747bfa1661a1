//! Worker counters and two latency histograms, commits and claim-to-start (what `docket demo`
//! reports and `docket serve` exports).

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
    commit_latency: Latencies,
    claim_to_start: Latencies,
}

/// One latency distribution: an HDR histogram in microseconds (clamped to its bounds) and the
/// exact sum of what was recorded, which the histogram alone cannot give (Prometheus'
/// `_sum`).
#[derive(Debug)]
struct Latencies {
    histogram: Mutex<Histogram<u64>>,
    sum_micros: AtomicU64,
}

impl Latencies {
    fn new() -> Self {
        Latencies {
            histogram: Mutex::new(new_histogram()),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn record(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        if let Ok(mut h) = self.histogram.lock() {
            // In bounds by the clamp; a failed record would only lose one sample.
            let _ = h.record(micros.clamp(1, MAX_TRACKED_MICROS));
        }
    }

    fn histogram(&self) -> Histogram<u64> {
        self.histogram
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|_| new_histogram())
    }

    fn sum(&self) -> Duration {
        Duration::from_micros(self.sum_micros.load(Ordering::Relaxed))
    }
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
            commit_latency: Latencies::new(),
            claim_to_start: Latencies::new(),
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
        if let Some(latency) = latency {
            self.commit_latency.record(latency);
        }
    }

    /// Records how long a lease waited between the claim's reply reaching the dispatcher and
    /// its vehicle starting on it.
    pub(crate) fn started(&self, waited: Duration) {
        self.claim_to_start.record(waited);
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
        self.commit_latency.histogram()
    }

    /// The exact total of every commit latency recorded.
    #[must_use]
    pub fn commit_latency_sum(&self) -> Duration {
        self.commit_latency.sum()
    }

    /// A copy of the claim-to-start histogram, in microseconds: for each launched lease, from
    /// the claim's reply reaching the dispatcher to its vehicle starting on the run.
    #[must_use]
    pub fn claim_to_start(&self) -> Histogram<u64> {
        self.claim_to_start.histogram()
    }

    /// The exact total of every claim-to-start wait recorded.
    #[must_use]
    pub fn claim_to_start_sum(&self) -> Duration {
        self.claim_to_start.sum()
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
        assert_eq!(stats.commit_latency_sum(), Duration::from_millis(6));
    }

    #[test]
    fn sums_are_exact_where_the_histogram_clamps() {
        let stats = WorkerStats::new();
        stats.started(Duration::from_nanos(300));
        stats.started(Duration::from_secs(120));
        let h = stats.claim_to_start();
        assert_eq!(h.len(), 2);
        // The histogram clamps both ends (1 µs, 60 s); the sum keeps what was recorded.
        assert_eq!(h.max(), h.highest_equivalent(MAX_TRACKED_MICROS));
        assert_eq!(stats.claim_to_start_sum(), Duration::from_secs(120));
        assert!(stats.commit_latency().is_empty());
    }
}
