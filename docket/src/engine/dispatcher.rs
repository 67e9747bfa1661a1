//! The dispatcher (`docs/engine.md`, “The dispatcher”): one per worker. Demand = concurrency −
//! live vehicles that have not yet sent the last commit of their drain
//! ([`super::finishing::Finishing`]); at most one claim poll in flight, further requests
//! coalesce into one pending poll; polls on start, on a jittered timer, on a wake hint, when a
//! vehicle sends its last commit and on every vehicle exit.
//!
//! Store work never runs in the dispatcher loop itself: polls run on their own task (through
//! the [`AdmissionPhase`]), vehicles on theirs, and releases of leases that could not be
//! launched are spawned.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument;

use docket_core::model::{Clock, RunId};
use docket_core::store::{
    Backend, ClaimBatch, ClaimLease, ClaimPolicy, ClaimRequest, PoisonedClaim, StoreError, Wakeups,
};

use super::admission::AdmissionPhase;
use super::clock::Jitter;
use super::poll_pace::{next_poll_at, RecentPolls};
use super::stats::{Counter, WorkerStats};
use super::vehicle::Vehicle;
use super::worker::ShutdownReport;

/// Why a poll was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollSource {
    /// The worker started.
    Initial,
    /// The poll timer fired.
    Scheduled,
    /// A wake hint or an explicit request.
    Notification,
    /// A vehicle exited.
    VehicleExit,
    /// A request arrived while a poll was in flight.
    Coalesced,
}

impl PollSource {
    fn as_str(self) -> &'static str {
        match self {
            PollSource::Initial => "initial",
            PollSource::Scheduled => "scheduled",
            PollSource::Notification => "notification",
            PollSource::VehicleExit => "vehicle_exit",
            PollSource::Coalesced => "coalesced",
        }
    }
}

/// A lease could not be launched; the dispatcher releases it (the attempt stays counted).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("launch failed: {0}")]
pub struct LaunchError(pub String);

/// Turns a lease into the future that drains it. The dispatcher runs the future on its own
/// task and counts it as a live vehicle until it ends.
pub trait Launcher: Send + Sync + fmt::Debug + 'static {
    /// Prepares the drain of `lease`.
    ///
    /// # Errors
    /// [`LaunchError`] when the lease cannot be drained here; it is released.
    fn launch(&self, lease: ClaimLease) -> Result<BoxFuture<'static, ()>, LaunchError>;
}

/// The production launcher: a [`Vehicle`] drain per lease.
#[derive(Clone, Debug)]
pub struct VehicleLauncher {
    vehicle: Vehicle,
}

impl VehicleLauncher {
    /// Launches drains with `vehicle`.
    #[must_use]
    pub fn new(vehicle: Vehicle) -> Self {
        VehicleLauncher { vehicle }
    }
}

impl Launcher for VehicleLauncher {
    fn launch(&self, lease: ClaimLease) -> Result<BoxFuture<'static, ()>, LaunchError> {
        let vehicle = self.vehicle.clone();
        // The dispatcher launches each lease as soon as the claim's reply is handled, so this
        // instant stands for the reply; the wait ends when the spawned task first runs.
        let claimed = Instant::now();
        Ok(Box::pin(async move {
            vehicle.stats().started(claimed.elapsed());
            // The outcome is already traced and counted by the vehicle; an error leaves the
            // claim to expire.
            let _ = vehicle.drain(lease).await;
        }))
    }
}

/// Observe-only callbacks (exceptions are the caller's problem; they must not block).
pub(crate) type PoisonHook = Arc<dyn Fn(&[PoisonedClaim]) + Send + Sync>;
/// Called for every launched lease.
pub(crate) type LeaseHook = Arc<dyn Fn(&ClaimLease) + Send + Sync>;

/// Dispatcher settings taken from the worker configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub concurrency: usize,
    pub poll_interval_ms: u64,
    pub orphan_ttl_ms: u64,
    pub max_claim_attempts: u32,
    pub drain_timeout_ms: u64,
    pub claim_policy: ClaimPolicy,
}

/// State shared with the [`super::Worker`] handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Runs whose claims live vehicles hold.
    pub live: Mutex<HashMap<tokio::task::Id, RunId>>,
    /// Live vehicles whose last commit is in flight: they run no more nodes, so their slots
    /// count as free for the next claim (see [`super::finishing::Finishing`]). The dispatcher
    /// removes a vehicle when it reaps it, with its entry in `live`.
    pub finishing: Mutex<std::collections::HashSet<tokio::task::Id>>,
}

impl Shared {
    pub(crate) fn live_runs(&self) -> Vec<RunId> {
        let mut runs: Vec<RunId> = self
            .live
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        runs.sort();
        runs
    }
}

pub(crate) struct Dispatcher {
    pub backend: Arc<dyn Backend>,
    pub clock: Arc<dyn Clock>,
    pub jitter: Arc<dyn Jitter>,
    pub settings: Settings,
    pub admission: Arc<AdmissionPhase>,
    pub launcher: Arc<dyn Launcher>,
    pub stats: Arc<WorkerStats>,
    pub shared: Arc<Shared>,
    pub on_poisoned: Option<PoisonHook>,
    pub on_lease: Option<LeaseHook>,
}

type PollResult = (PollSource, u32, Result<ClaimBatch, StoreError>);

/// Claim polls failing with a permanent store error in a row before the dispatcher stops.
pub(crate) const MAX_PERMANENT_POLL_FAILURES: u32 = 5;

/// The longest delay between two scheduled polls while polls keep failing (unless the poll
/// interval itself is longer).
const MAX_FAILURE_BACKOFF_MS: u64 = 30_000;

/// How the dispatcher ended.
#[derive(Debug)]
pub(crate) struct DispatcherExit {
    /// The shutdown that followed.
    pub report: ShutdownReport,
    /// Why it stopped on its own, if it did: the last of
    /// [`MAX_PERMANENT_POLL_FAILURES`] permanent store errors in a row.
    pub failure: Option<StoreError>,
}

/// The mutable loop state.
struct Loop {
    vehicles: JoinSet<()>,
    poll: JoinSet<PollResult>,
    pending: bool,
    timer_at: Option<Instant>,
    /// When the poll in flight (or the last one) started.
    poll_started: Option<Instant>,
    /// How long the latest successful polls took (paces the timer).
    recent_polls: RecentPolls,
    /// Failed polls since the last successful one (backs the timer off).
    failed_polls: u32,
    /// Of those, the ones that failed permanently.
    permanent_failures: u32,
    /// Set when the permanent failures reach the limit: the dispatcher stops.
    gave_up: Option<StoreError>,
}

impl Dispatcher {
    /// Runs until `stop` reads `true` (or claim polls keep failing permanently), then shuts
    /// down (`docs/engine.md`, “Graceful shutdown”).
    pub(crate) async fn run(
        self,
        mut stop: watch::Receiver<bool>,
        mut requests: mpsc::UnboundedReceiver<()>,
    ) -> DispatcherExit {
        let mut state = Loop {
            vehicles: JoinSet::new(),
            poll: JoinSet::new(),
            pending: false,
            timer_at: None,
            poll_started: None,
            recent_polls: RecentPolls::default(),
            failed_polls: 0,
            permanent_failures: 0,
            gave_up: None,
        };
        let mut wakeups: Option<Wakeups> = self.backend.wakeups();
        self.request(&mut state, PollSource::Initial);
        loop {
            let timer_at = state.timer_at;
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => break,
                Some(done) = state.poll.join_next(), if !state.poll.is_empty() => {
                    match done {
                        Ok(result) => self.handle_poll(&mut state, result),
                        Err(e) => tracing::warn!(result = "error", error = %e, "docket.dispatcher.poll.crash"),
                    }
                    if let Some(error) = &state.gave_up {
                        tracing::error!(
                            result = "stopped",
                            failures = state.permanent_failures,
                            %error,
                            "docket.dispatcher.give_up"
                        );
                        break;
                    }
                    if std::mem::take(&mut state.pending) {
                        self.request(&mut state, PollSource::Coalesced);
                    } else {
                        self.arm_timer_after_poll(&mut state);
                    }
                }
                Some(exit) = state.vehicles.join_next_with_id(), if !state.vehicles.is_empty() => {
                    let id = match &exit {
                        Ok((id, ())) => *id,
                        Err(e) => e.id(),
                    };
                    if let Err(e) = &exit {
                        tracing::warn!(error = %e, "docket.vehicle.crash");
                    }
                    self.reaped(id);
                    self.request(&mut state, PollSource::VehicleExit);
                }
                hint = next_hint(&mut wakeups), if wakeups.is_some() => match hint {
                    Some(()) => {
                        self.stats.bump(Counter::WakeHint);
                        self.request(&mut state, PollSource::Notification);
                    }
                    None => wakeups = None,
                },
                Some(()) = requests.recv() => self.request(&mut state, PollSource::Notification),
                () = sleep_until(timer_at), if timer_at.is_some() => {
                    state.timer_at = None;
                    self.request(&mut state, PollSource::Scheduled);
                }
            }
        }
        let failure = state.gave_up.take();
        DispatcherExit {
            report: self.shutdown(state).await,
            failure,
        }
    }

    /// Forgets a vehicle whose task ended.
    fn reaped(&self, id: tokio::task::Id) {
        if let Ok(mut live) = self.shared.live.lock() {
            live.remove(&id);
        }
        if let Ok(mut finishing) = self.shared.finishing.lock() {
            finishing.remove(&id);
        }
    }

    /// Vehicles that still take a slot: the live ones less those whose last commit is in
    /// flight.
    fn occupied(&self, state: &Loop) -> usize {
        let finishing = self.shared.finishing.lock().map_or(0, |f| f.len());
        state.vehicles.len().saturating_sub(finishing)
    }

    fn demand(&self, state: &Loop) -> usize {
        self.settings
            .concurrency
            .saturating_sub(self.occupied(state))
    }

    /// Starts a poll, or marks one pending if a poll is in flight.
    fn request(&self, state: &mut Loop, source: PollSource) {
        self.stats.bump(Counter::PollRequest);
        if !state.poll.is_empty() {
            state.pending = true;
            return;
        }
        let demand = self.demand(state);
        let Some(limit) = u32::try_from(demand).ok().and_then(NonZeroU32::new) else {
            self.arm_timer(state);
            return;
        };
        state.poll_started = Some(Instant::now());
        let backend = Arc::clone(&self.backend);
        let admission = Arc::clone(&self.admission);
        let now = self.clock.now();
        let settings = self.settings;
        let span = tracing::info_span!(
            "docket.dispatcher.poll",
            source = source.as_str(),
            demand = limit.get(),
            in_flight = state.vehicles.len(),
        );
        state.poll.spawn(
            async move {
                let result = admission
                    .run(limit.get(), |preference| async move {
                        let policy = ClaimRequest {
                            policy: settings.claim_policy,
                            now,
                            limit,
                            orphan_ttl_ms: settings.orphan_ttl_ms,
                            max_claim_attempts: NonZeroU32::new(settings.max_claim_attempts)
                                .unwrap_or(NonZeroU32::MIN),
                            preference: Some(preference),
                        };
                        backend.claim_due(&policy).await
                    })
                    .await;
                match &result {
                    Ok(batch) => tracing::debug!(
                        result = "ok",
                        leases = batch.leases.len(),
                        poisoned = batch.poisoned.len(),
                        "docket.dispatcher.poll"
                    ),
                    Err(error) => {
                        tracing::warn!(result = "error", %error, "docket.dispatcher.poll")
                    }
                }
                (source, limit.get(), result)
            }
            .instrument(span),
        );
    }

    /// Arms the poll timer from now: the jittered poll interval, or, while polls keep failing,
    /// an exponentially longer one (doubling per failure, at most [`MAX_FAILURE_BACKOFF_MS`]),
    /// so an unreachable or refusing store is not hammered.
    fn arm_timer(&self, state: &mut Loop) {
        state.timer_at = Some(Instant::now() + Duration::from_millis(self.timer_delay_ms(state)));
    }

    /// Arms the poll timer after a poll finished: the same delay, counted from the start of
    /// that poll less an allowance for the next poll's duration ([`next_poll_at`]), so that
    /// the next poll *finishes* about one delay after the last one started. A run that becomes
    /// due just after a poll read the store is then claimed within about one poll interval,
    /// not an interval plus the polls on either side (measured by the bench's wakeup figure
    /// without push hints). Never sooner than 1 ms from now, so a store slower than the
    /// interval is polled back to back, not in a busy loop.
    fn arm_timer_after_poll(&self, state: &mut Loop) {
        let now = Instant::now();
        let delay = Duration::from_millis(self.timer_delay_ms(state));
        state.timer_at = Some(match state.poll_started {
            Some(started) => next_poll_at(started, now, delay, &state.recent_polls),
            None => now + delay,
        });
    }

    /// The jittered delay of the next scheduled poll, in `1..=interval` (the interval backed
    /// off while polls fail).
    fn timer_delay_ms(&self, state: &Loop) -> u64 {
        let interval = failure_backoff_ms(self.settings.poll_interval_ms, state.failed_polls);
        self.jitter.jitter(interval).clamp(1, interval.max(1))
    }

    fn handle_poll(&self, state: &mut Loop, (_source, _demand, result): PollResult) {
        self.stats.bump(Counter::Poll);
        let batch = match result {
            Ok(batch) => {
                if let Some(started) = state.poll_started {
                    state.recent_polls.push(started.elapsed());
                }
                state.failed_polls = 0;
                state.permanent_failures = 0;
                batch
            }
            // Errors launch nothing; the timer retries, backing off. A store that refuses
            // permanently (read-only, no privileges) will not start working by itself: after
            // a few tries the dispatcher stops and the worker reports why.
            Err(error) => {
                state.failed_polls = state.failed_polls.saturating_add(1);
                if error.is_permanent() {
                    state.permanent_failures += 1;
                    if state.permanent_failures >= MAX_PERMANENT_POLL_FAILURES {
                        state.gave_up = Some(error);
                    }
                }
                return;
            }
        };
        if !batch.poisoned.is_empty() {
            self.stats.add(Counter::Poison, batch.poisoned.len() as u64);
            for p in &batch.poisoned {
                tracing::warn!(run_id = %p.run_id, reason = p.reason.as_str(), "docket.claim.poisoned");
            }
            if let Some(hook) = &self.on_poisoned {
                hook(&batch.poisoned);
            }
        }
        for lease in batch.leases {
            if self.occupied(state) >= self.settings.concurrency {
                self.release_unlaunched(lease, "capacity");
                continue;
            }
            match self.launcher.launch(lease.clone()) {
                Ok(future) => {
                    self.stats.bump(Counter::VehicleLaunched);
                    if let Some(hook) = &self.on_lease {
                        hook(&lease);
                    }
                    let handle = state.vehicles.spawn(future);
                    if let Ok(mut live) = self.shared.live.lock() {
                        live.insert(handle.id(), lease.run_id.clone());
                    }
                    tracing::debug!(run_id = %lease.run_id, result = "ok", "docket.dispatcher.launch");
                }
                Err(error) => {
                    tracing::warn!(run_id = %lease.run_id, result = "error", %error, "docket.dispatcher.launch");
                    self.release_unlaunched(lease, "launch_failed");
                }
            }
        }
        if !batch.poisoned.is_empty() && self.demand(state) > 0 {
            // Poisoned candidates consumed demand without producing work: look again now.
            state.pending = true;
        }
    }

    fn release_unlaunched(&self, lease: ClaimLease, reason: &'static str) {
        self.stats.bump(Counter::ReleasedUnlaunched);
        let backend = Arc::clone(&self.backend);
        let now = self.clock.now();
        tokio::spawn(async move {
            if let Err(error) = backend
                .release_claim(&lease.run_id, &lease.claim_token, now)
                .await
            {
                tracing::warn!(run_id = %lease.run_id, reason, %error, "docket.dispatcher.release");
            }
        });
    }

    async fn shutdown(self, mut state: Loop) -> ShutdownReport {
        let started = Instant::now();
        let deadline = started + Duration::from_millis(self.settings.drain_timeout_ms);
        // Leases of an in-flight poll are released, never launched.
        if !state.poll.is_empty() {
            if let Ok(Some(Ok((_, _, Ok(batch))))) =
                tokio::time::timeout_at(deadline, state.poll.join_next()).await
            {
                for lease in batch.leases {
                    self.stats.bump(Counter::ReleasedUnlaunched);
                    let _ = tokio::time::timeout_at(
                        deadline,
                        self.backend.release_claim(
                            &lease.run_id,
                            &lease.claim_token,
                            self.clock.now(),
                        ),
                    )
                    .await;
                }
            }
        }
        // Vehicles see the stop flag and yield after their current moment.
        while !state.vehicles.is_empty() {
            match tokio::time::timeout_at(deadline, state.vehicles.join_next_with_id()).await {
                Ok(Some(exit)) => {
                    let id = match &exit {
                        Ok((id, ())) => *id,
                        Err(e) => e.id(),
                    };
                    self.reaped(id);
                }
                Ok(None) | Err(_) => break,
            }
        }
        let remaining = state.vehicles.len();
        let report = ShutdownReport {
            drained: remaining == 0,
            vehicles_remaining: remaining,
            duration: started.elapsed(),
        };
        tracing::info!(
            result = if report.drained { "drained" } else { "timeout" },
            vehicles_remaining = remaining,
            "docket.dispatcher.shutdown"
        );
        // Dropping the set aborts vehicles still running: their claims expire normally.
        report
    }
}

/// The poll interval after `failed` failed polls in a row: `interval` doubled per failure
/// after the first, capped at [`MAX_FAILURE_BACKOFF_MS`] (or `interval`, if longer).
fn failure_backoff_ms(interval: u64, failed: u32) -> u64 {
    let doublings = failed.saturating_sub(1).min(16);
    interval
        .saturating_mul(1 << doublings)
        .min(interval.max(MAX_FAILURE_BACKOFF_MS))
}

async fn next_hint(wakeups: &mut Option<Wakeups>) -> Option<()> {
    match wakeups {
        Some(stream) => stream.next().await,
        None => None,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_polls_back_off_exponentially_up_to_a_cap() {
        let delays: Vec<u64> = (0..9).map(|n| failure_backoff_ms(1_000, n)).collect();
        assert_eq!(
            delays,
            [1_000, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
        );
        assert_eq!(failure_backoff_ms(60_000, 5), 60_000);
        assert_eq!(failure_backoff_ms(u64::MAX, u32::MAX), u64::MAX);
    }
}
