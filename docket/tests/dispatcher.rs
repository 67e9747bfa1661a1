//! The dispatcher (scenarios 141–151 of `docs/scenarios.md`): demand, coalescing, launch failures,
//! poison observation, shutdown, preference alternation.

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Semaphore;

use docket::core::model::{RunId, RunStatus};
use docket::core::store::{ClaimClass, ClaimLease, PoisonedClaim, RunStore};
use docket::engine::{LaunchError, Launcher, Worker, WorkerConfig, WorkerFailure};

use support::graphs::{endless, steps};
use support::scripted::Scripted;
use support::{poll_until, FullInterval, Parts, VFx};

/// Launches "vehicles" that end only when a permit is added (or panic / fail on request).
#[derive(Debug)]
struct Held {
    gate: Arc<Semaphore>,
    launched: Mutex<Vec<RunId>>,
    fail: bool,
    panic_first: AtomicU32,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            gate: Arc::new(Semaphore::new(0)),
            launched: Mutex::default(),
            fail: false,
            panic_first: AtomicU32::new(0),
        }
    }
}

impl Held {
    fn launched(&self) -> usize {
        self.launched.lock().expect("lock").len()
    }
}

impl Launcher for Held {
    fn launch(&self, lease: ClaimLease) -> Result<BoxFuture<'static, ()>, LaunchError> {
        if self.fail {
            return Err(LaunchError("no room".into()));
        }
        self.launched.lock().expect("lock").push(lease.run_id);
        let panic = self
            .panic_first
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let gate = Arc::clone(&self.gate);
        Ok(Box::pin(async move {
            assert!(!panic, "a vehicle that panics");
            if let Ok(permit) = gate.acquire().await {
                permit.forget();
            }
        }))
    }
}

fn fx(concurrency: usize) -> VFx {
    VFx::with(
        WorkerConfig {
            concurrency,
            poll_interval_ms: 60_000,
            drain_timeout_ms: 200,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    )
}

const LIMIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn demand_is_concurrency_minus_live_vehicles() {
    let fx = fx(2);
    for _ in 0..3 {
        fx.start(&steps(1)).await;
    }
    let held = Arc::new(Held::default());
    let worker = Worker::builder(fx.docket.engine())
        .launcher(held.clone())
        .start();
    poll_until(LIMIT, || held.launched() == 2).await;
    assert_eq!(fx.store.claim_limits().first(), Some(&2));
    // Full: a requested poll is skipped (no claim call with demand 0).
    let claims = Scripted::count(&fx.store.claims);
    worker.request_poll();
    held.gate.add_permits(1);
    poll_until(LIMIT, || held.launched() == 3).await;
    let limits = fx.store.claim_limits();
    assert!(
        limits[1..].iter().all(|&l| l == 1),
        "after one exit the demand is one: {limits:?}"
    );
    assert!(Scripted::count(&fx.store.claims) > claims);
    assert_eq!(worker.live_claims().len(), 2);
    held.gate.add_permits(10);
    worker.shutdown().await;
}

#[tokio::test]
async fn an_immediate_burst_becomes_one_in_flight_poll_plus_one_pending_poll() {
    let fx = fx(2);
    let gate = fx.store.gate_claims();
    let worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held::default()))
        .start();
    poll_until(LIMIT, || Scripted::count(&fx.store.claims) == 1).await;
    for _ in 0..200 {
        worker.request_poll();
    }
    // The whole burst reaches the dispatcher while the first poll is still blocked.
    poll_until(LIMIT, || worker.stats().snapshot().poll_requests >= 201).await;
    gate.add_permits(10_000);
    fx.store.ungate_claims();
    poll_until(LIMIT, || worker.stats().snapshot().polls == 2).await;
    assert_eq!(
        Scripted::count(&fx.store.claims),
        2,
        "one follow-up poll for the burst"
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn a_hard_kill_drops_the_in_flight_claim_poll() {
    let fx = fx(1);
    let _gate = fx.store.gate_claims();
    let worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held::default()))
        .start();
    poll_until(LIMIT, || Scripted::count(&fx.store.claims) == 1).await;
    worker.kill();
    poll_until(LIMIT, || {
        fx.store.dropped_claims.load(Ordering::SeqCst) == 1
    })
    .await;
}

#[tokio::test]
async fn a_failed_poll_is_reported_and_the_dispatcher_keeps_polling() {
    let fx = VFx::with(
        WorkerConfig {
            concurrency: 1,
            poll_interval_ms: 20,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    );
    fx.start(&steps(1)).await;
    fx.store.fail_next_claims(1);
    let held = Arc::new(Held::default());
    let worker = Worker::builder(fx.docket.engine())
        .launcher(held.clone())
        .start();
    poll_until(LIMIT, || held.launched() == 1).await;
    assert!(worker.stats().snapshot().polls >= 2);
    held.gate.add_permits(10);
    worker.shutdown().await;
}

#[tokio::test]
async fn poison_is_observed_without_mutation_and_failed_launches_are_released() {
    let fx = VFx::with(
        WorkerConfig {
            concurrency: 2,
            poll_interval_ms: 60_000,
            max_claim_attempts: 1,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    );
    let doomed = fx.start(&steps(1)).await;
    // One launch without progress: the next claim need poisons it.
    let lease = fx.claim().await;
    fx.store
        .inner
        .release_claim(&lease.run_id, &lease.claim_token, lease.claimed_at)
        .await
        .expect("release");
    let healthy = fx.start(&steps(1)).await;
    let seen: Arc<Mutex<Vec<PoisonedClaim>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held {
            fail: true,
            ..Held::default()
        }))
        .on_poisoned(move |p| sink.lock().expect("lock").extend_from_slice(p))
        .start();
    poll_until(LIMIT, || Scripted::count(&fx.store.releases) >= 1).await;
    poll_until(LIMIT, || {
        seen.lock()
            .expect("lock")
            .iter()
            .any(|p| p.run_id == doomed.id)
    })
    .await;
    worker.shutdown().await;
    let info = fx.info(&healthy.id).await;
    assert!(!info.is_claimed(), "a failed launch releases its lease");
    assert_eq!(info.run.checkpoint_seq, 1, "nothing ran");
    assert!(worker_stats_released(&fx));
}

fn worker_stats_released(fx: &VFx) -> bool {
    Scripted::count(&fx.store.releases) >= 1
}

#[tokio::test]
async fn shutdown_stops_demand_and_bounds_draining_without_releasing_an_active_vehicle() {
    let fx = fx(1);
    fx.start(&steps(1)).await;
    let held = Arc::new(Held::default());
    let worker = Worker::builder(fx.docket.engine())
        .launcher(held.clone())
        .start();
    poll_until(LIMIT, || held.launched() == 1).await;
    let report = worker.shutdown().await;
    assert!(!report.drained);
    assert_eq!(report.vehicles_remaining, 1);
    assert!(report.duration >= Duration::from_millis(200));
    assert_eq!(
        Scripted::count(&fx.store.releases),
        0,
        "its claim expires normally"
    );
}

#[tokio::test]
async fn shutdown_releases_leases_returned_by_an_in_flight_poll_instead_of_launching_them() {
    let fx = fx(2);
    let run = fx.start(&steps(1)).await;
    fx.store.gate_claims();
    let held = Arc::new(Held::default());
    let worker = Worker::builder(fx.docket.engine())
        .launcher(held.clone())
        .start();
    poll_until(LIMIT, || Scripted::count(&fx.store.claims) == 1).await;
    worker.begin_shutdown();
    fx.store.ungate_claims();
    let report = worker.shutdown().await;
    assert!(report.drained);
    assert_eq!(held.launched(), 0);
    assert_eq!(Scripted::count(&fx.store.releases), 1);
    assert!(!fx.info(&run.id).await.is_claimed());
}

#[tokio::test]
async fn graceful_shutdown_lets_a_vehicle_commit_its_current_moment_as_a_yield() {
    let fx = fx(1);
    let run = fx.start(&endless(Some(100_000))).await;
    let worker = Worker::start(fx.docket.engine());
    let stats = Arc::clone(worker.stats());
    poll_until(LIMIT, || stats.snapshot().moments_committed >= 2).await;
    let report = worker.shutdown().await;
    assert!(report.drained, "{report:?}");
    // Every launched vehicle's wait after its claim was measured.
    assert!(stats.snapshot().vehicles_launched >= 1);
    assert_eq!(
        stats.claim_to_start().len(),
        stats.snapshot().vehicles_launched
    );
    let info = fx.info(&run.id).await;
    assert_eq!(info.run.status, RunStatus::Running);
    assert!(!info.is_claimed(), "the yield released the claim");
    assert!(info.wake_at.is_some());
    let last = fx.events(&run.id).await.pop().expect("events");
    assert_eq!(
        last.metadata.get("park_reason").and_then(|v| v.as_str()),
        Some("drain_budget")
    );
}

#[tokio::test]
async fn a_vehicle_that_panics_is_accounted_for_and_demand_recovers() {
    let fx = fx(1);
    fx.start(&steps(1)).await;
    fx.start(&steps(1)).await;
    let held = Arc::new(Held {
        panic_first: AtomicU32::new(1),
        ..Held::default()
    });
    let worker = Worker::builder(fx.docket.engine())
        .launcher(held.clone())
        .start();
    // The panicking vehicle exits; its exit triggers a poll that launches the next lease.
    poll_until(LIMIT, || held.launched() == 2).await;
    held.gate.add_permits(10);
    worker.shutdown().await;
}

#[tokio::test]
async fn demand_one_polls_alternate_the_preferred_class_and_errors_do_not_flip_it() {
    let fx = fx(1);
    let worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held::default()))
        .start();
    let polls = |n: u64| {
        let stats = Arc::clone(worker.stats());
        move || stats.snapshot().polls >= n
    };
    poll_until(LIMIT, polls(1)).await;
    worker.request_poll();
    poll_until(LIMIT, polls(2)).await;
    fx.store.fail_next_claims(1);
    worker.request_poll();
    poll_until(LIMIT, polls(3)).await;
    worker.request_poll();
    poll_until(LIMIT, polls(4)).await;
    let prefs: Vec<_> = fx
        .store
        .policies
        .lock()
        .expect("lock")
        .iter()
        .map(|p| p.preference)
        .collect();
    use ClaimClass::{Expired, Ready};
    assert_eq!(
        prefs,
        vec![Some(Ready), Some(Expired), Some(Ready), Some(Ready)]
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn polls_above_demand_one_carry_the_preference_but_never_flip_it() {
    let fx = fx(3);
    let worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held::default()))
        .start();
    for n in 1..=3 {
        let stats = Arc::clone(worker.stats());
        poll_until(LIMIT, move || stats.snapshot().polls >= n).await;
        worker.request_poll();
    }
    let prefs: Vec<_> = fx
        .store
        .policies
        .lock()
        .expect("lock")
        .iter()
        .map(|p| p.preference)
        .collect();
    assert!(
        prefs.iter().all(|p| *p == Some(ClaimClass::Ready)),
        "{prefs:?}"
    );
    worker.shutdown().await;
}

/// Scenario 166 of `docs/scenarios.md`: a wake hint is a fast path. With a one-minute poll
/// interval, a run started after the worker's first poll is claimed and finished within seconds,
/// because the store's hint makes the dispatcher poll at once.
#[tokio::test]
async fn a_wake_hint_gets_a_new_run_claimed_long_before_the_poll_interval() {
    let fx = fx(2);
    let worker = Worker::builder(fx.docket.engine()).start();
    poll_until(LIMIT, || Scripted::count(&fx.store.claims) >= 1).await;
    poll_until(LIMIT, || worker.stats().snapshot().polls >= 1).await;
    let run = fx.start(&steps(2)).await;
    let started = std::time::Instant::now();
    let mut status = RunStatus::Running;
    while status != RunStatus::Done {
        assert!(
            started.elapsed() < LIMIT,
            "not finished {LIMIT:?} after its start (poll interval 60 s): {status:?}"
        );
        tokio::task::yield_now().await;
        status = fx.info(&run.id).await.run.status;
    }
    assert!(
        worker.stats().snapshot().polls >= 2,
        "the hint caused a poll"
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn a_dispatcher_that_panics_takes_the_worker_down_with_its_message() {
    let fx = fx(2);
    fx.start(&steps(1)).await;
    // Any panic inside the dispatcher's own task (here an observer hook; in the field, a log
    // writer) used to leave a worker that polled nothing and held its claims.
    let mut worker = Worker::builder(fx.docket.engine())
        .on_lease(|_| panic!("the log line could not be written"))
        .start();
    let failure = tokio::time::timeout(LIMIT, worker.failure())
        .await
        .expect("the dead dispatcher is reported");
    assert!(
        matches!(
            &failure,
            WorkerFailure::Panicked { task: "dispatcher", message }
                if message == "the log line could not be written"
        ),
        "{failure:?}"
    );
    assert!(
        failure.to_string().contains("dispatcher task panicked"),
        "{failure}"
    );
    let report = tokio::time::timeout(LIMIT, worker.shutdown())
        .await
        .expect("shutting a failed worker down does not hang");
    assert!(!report.drained);
}

#[tokio::test]
async fn a_store_that_refuses_claims_permanently_stops_the_worker_after_a_few_polls() {
    let fx = VFx::with(
        WorkerConfig {
            concurrency: 1,
            poll_interval_ms: 5,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    );
    fx.start(&steps(1)).await;
    fx.store.refuse_next_claims_permanently(u32::MAX);
    let mut worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held::default()))
        .start();
    let failure = tokio::time::timeout(LIMIT, worker.failure())
        .await
        .expect("the worker gives up instead of polling forever");
    assert!(
        matches!(&failure, WorkerFailure::Store { attempts: 5, error } if error.is_permanent()),
        "{failure:?}"
    );
    assert!(
        failure.to_string().contains("injected claim failure"),
        "{failure}"
    );
    assert_eq!(
        Scripted::count(&fx.store.claims),
        5,
        "a bounded number of tries"
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn transient_claim_failures_back_off_and_never_stop_the_worker() {
    let fx = VFx::with(
        WorkerConfig {
            concurrency: 1,
            poll_interval_ms: 20,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    );
    fx.start(&steps(1)).await;
    // More transient failures than the permanent limit: they never stop the worker.
    fx.store.fail_next_claims(6);
    let started = std::time::Instant::now();
    let held = Arc::new(Held::default());
    let mut worker = Worker::builder(fx.docket.engine())
        .launcher(held.clone())
        .start();
    poll_until(LIMIT, || held.launched() == 1).await;
    // Timer polls after failures 1..=6 wait 20, 40, 80, 160, 320 and 640 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(1_260),
        "the retries backed off: {:?}",
        started.elapsed()
    );
    assert!(
        futures::FutureExt::now_or_never(worker.failure()).is_none(),
        "transient failures are not fatal"
    );
    held.gate.add_permits(10);
    worker.shutdown().await;
}

/// Starts an idle worker (nothing due, full-interval jitter) on a store whose first claims
/// take `first_claims_ms`, one each, and every later one `claim_ms`, and returns how far apart
/// its first `polls` polls started.
async fn scheduled_poll_gaps(
    poll_interval_ms: u64,
    first_claims_ms: &[u64],
    claim_ms: u64,
    polls: usize,
) -> Vec<Duration> {
    let fx = VFx::with(
        WorkerConfig {
            concurrency: 1,
            poll_interval_ms,
            ..WorkerConfig::default()
        },
        Parts {
            jitter: Some(Arc::new(FullInterval)),
            ..Parts::default()
        },
    );
    fx.store.delay_claims(Duration::from_millis(claim_ms));
    fx.store
        .delay_next_claims(first_claims_ms.iter().map(|ms| Duration::from_millis(*ms)));
    let worker = Worker::builder(fx.docket.engine())
        .launcher(Arc::new(Held::default()))
        .start();
    poll_until(LIMIT, || {
        fx.store.claim_starts.lock().expect("lock").len() >= polls
    })
    .await;
    let starts = fx.store.claim_starts.lock().expect("lock").clone();
    worker.shutdown().await;
    starts[..polls].windows(2).map(|w| w[1] - w[0]).collect()
}

/// The poll timer counts the interval from the start of the last poll less what that poll
/// took, so a run that becomes due just after a poll read the store is claimed within about
/// one interval. With claims taking 30 ms and a 100 ms interval (full jitter), scheduled polls
/// start 69 ms apart (70 less a millisecond for the timer's tick), each finishing 99 ms after
/// the one before started (counted from the end of the last poll, they would start 130 ms
/// apart). Tokio's paused clock makes the times exact.
#[tokio::test(start_paused = true)]
async fn scheduled_polls_finish_one_interval_after_the_previous_poll_started() {
    let gaps = scheduled_poll_gaps(100, &[], 30, 4).await;
    assert!(
        gaps.iter().all(|gap| *gap == Duration::from_millis(69)),
        "scheduled polls started {gaps:?} apart"
    );
}

/// A store slower than the poll interval is polled back to back (1 ms apart), not in a
/// busy loop and not an interval after each slow poll.
#[tokio::test(start_paused = true)]
async fn a_store_slower_than_the_interval_is_polled_back_to_back() {
    let gaps = scheduled_poll_gaps(20, &[], 50, 4).await;
    assert!(
        gaps.iter().all(|gap| *gap == Duration::from_millis(51)),
        "polls of a 50 ms store started {gaps:?} apart"
    );
}

/// A slow poll is allowed for in the polls after it, not only in the next one: with a 100 ms
/// interval and claims of 10, 40, 10, 10, 10 ms, the polls after the slow one start 59 ms
/// apart (each finishes within the interval after the one before started if it is no slower
/// than that 40 ms poll; 1 ms goes to the timer's tick); counting only the last poll's
/// duration would start them 89 ms apart, and a 40 ms poll after a 10 ms one would finish
/// 129 ms after its predecessor started.
#[tokio::test(start_paused = true)]
async fn a_slow_poll_is_allowed_for_in_the_polls_after_it() {
    let gaps = scheduled_poll_gaps(100, &[10, 40, 10, 10, 10], 10, 5).await;
    let ms = |n| Duration::from_millis(n);
    assert_eq!(gaps, vec![ms(89), ms(59), ms(59), ms(59)]);
}

/// A stall longer than the interval makes the next poll start 1 ms after it, and the polls
/// after that allow for it with at most half the interval (and the timer's millisecond), so one
/// stall does not make the worker poll back to back for the next several polls.
#[tokio::test(start_paused = true)]
async fn a_stall_counts_for_at_most_half_the_interval_afterwards() {
    let gaps = scheduled_poll_gaps(100, &[10, 300, 10, 10], 10, 5).await;
    let ms = |n| Duration::from_millis(n);
    assert_eq!(gaps, vec![ms(89), ms(301), ms(49), ms(49)]);
}
