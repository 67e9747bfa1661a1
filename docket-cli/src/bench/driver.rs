//! The closed-loop driver: `N` tasks, each repeating its own operation back to back for a
//! warm-up and then a measured window, recording the latency of every operation that completed
//! inside the window.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use hdrhistogram::Histogram;
use tokio::task::JoinHandle;

use super::BenchError;

/// Highest latency tracked exactly (60 s, in microseconds); longer ones are clamped.
const MAX_TRACKED_MICROS: u64 = 60_000_000;

/// A latency histogram in microseconds (1 µs … 60 s, 3 significant digits).
#[must_use]
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_MICROS, 3).expect("constant, valid histogram bounds")
}

/// Records `elapsed` in `h` (clamped into the tracked range).
pub(crate) fn record(h: &mut Histogram<u64>, elapsed: Duration) {
    let micros = u64::try_from(elapsed.as_micros())
        .unwrap_or(u64::MAX)
        .clamp(1, MAX_TRACKED_MICROS);
    // In range by the clamp: a failed record could only lose one sample.
    let _ = h.record(micros);
}

/// The `q` quantile of `h` in milliseconds (0 for an empty histogram); `q ≥ 1` is the exact
/// maximum recorded, not the top of its bucket.
#[must_use]
pub(crate) fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else if q >= 1.0 {
        h.max() as f64 / 1_000.0
    } else {
        h.value_at_quantile(q) as f64 / 1_000.0
    }
}

/// One task's repeated operation.
#[async_trait]
pub(crate) trait Op: Send + 'static {
    /// Performs the operation once.
    async fn once(&mut self) -> Result<(), BenchError>;
}

/// Warm-up and measured window of a timed phase.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    /// Operations completing before the window are not counted.
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
}

/// What a closed loop measured, with the operations handed back for verification.
pub(crate) struct LoopOutcome<O> {
    /// Every task's operation state, in task order.
    pub ops: Vec<O>,
    /// Operations that completed inside the window.
    pub completed: u64,
    /// Their latencies.
    pub latency: Histogram<u64>,
    /// The window's length.
    pub window: Duration,
}

impl<O> LoopOutcome<O> {
    /// Operations per second inside the window.
    #[must_use]
    pub(crate) fn rate(&self) -> f64 {
        self.completed as f64 / self.window.as_secs_f64().max(f64::EPSILON)
    }
}

/// What one task hands back: its op, its count and latencies in the window, its error.
type TaskEnd<O> = (O, u64, Histogram<u64>, Option<BenchError>);

/// Runs every op in its own task until the window ends.
///
/// # Errors
/// The first error any operation returned (the other tasks still run to the end of the
/// window), or a task that panicked.
pub(crate) async fn closed_loop<O: Op>(
    ops: Vec<O>,
    window: Window,
) -> Result<LoopOutcome<O>, BenchError> {
    let start = Instant::now();
    let counted_from = start + window.warmup;
    let end = counted_from + window.measure;
    let tasks: Vec<JoinHandle<TaskEnd<O>>> = ops
        .into_iter()
        .map(|mut op| {
            tokio::spawn(async move {
                let mut completed = 0;
                let mut latency = histogram();
                loop {
                    let began = Instant::now();
                    if began >= end {
                        return (op, completed, latency, None);
                    }
                    if let Err(e) = op.once().await {
                        return (op, completed, latency, Some(e));
                    }
                    let done = Instant::now();
                    if done >= counted_from && done <= end {
                        completed += 1;
                        record(&mut latency, done - began);
                    }
                }
            })
        })
        .collect();
    let mut outcome = LoopOutcome {
        ops: Vec::with_capacity(tasks.len()),
        completed: 0,
        latency: histogram(),
        window: window.measure,
    };
    let mut first_error = None;
    for task in tasks {
        let (op, completed, latency, error) = task.await.map_err(task_failed)?;
        outcome.ops.push(op);
        outcome.completed += completed;
        // Same bounds everywhere, so adding cannot fail.
        let _ = outcome.latency.add(&latency);
        if first_error.is_none() {
            first_error = error;
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

/// A bench task that panicked or was cancelled.
pub(crate) fn task_failed(e: tokio::task::JoinError) -> BenchError {
    BenchError::Task(e.to_string())
}
