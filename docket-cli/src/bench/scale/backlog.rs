//! (g) End-to-end runs/s of the 3-node graph through a real worker while a backlog of pending
//! runs waits — a small one and a large one, one after the other in the same run. Each
//! backlog is seeded due before the worker starts and topped up by one new run per finished
//! run, so it stays the same size through the window; runs/s counts the runs finished inside
//! the window (after a warm-up). The flow's verification (see [`flow`](super::flow)) covers
//! every run of both backlogs.

use std::time::{Duration, Instant};

use super::super::driver::Window;
use super::super::moments::CHAIN;
use super::super::{BenchError, Ctx};
use super::flow;

/// One backlog's measurement.
pub(crate) struct AtBacklog {
    /// Pending runs kept.
    pub backlog: usize,
    /// Runs finished per second in the window.
    pub rate: f64,
}

/// Both backlogs, verified.
pub(crate) struct BacklogScale {
    /// The small backlog.
    pub small: AtBacklog,
    /// The large backlog.
    pub large: AtBacklog,
    /// What the verification proved.
    pub verified: Vec<String>,
}

/// Measures `small`, then `large`.
pub(crate) async fn run(
    ctx: &Ctx,
    small: usize,
    large: usize,
    window: Window,
) -> Result<BacklogScale, BenchError> {
    let n = ctx.options.concurrency;
    let mut verified = Vec::new();
    let mut sizes = Vec::new();
    for (phase, backlog) in [("g-small", small), ("g-large", large)] {
        let flow = flow::start(ctx, phase, CHAIN, n, backlog, 0).await?;
        tokio::time::sleep(window.warmup).await;
        flow.watch.0.count(true);
        let from = Instant::now();
        tokio::time::sleep(window.measure).await;
        // A window in which nothing finished measures nothing: extend it to the first run.
        let extend_until = Instant::now() + Duration::from_secs(120);
        while flow.watch.0.counted() == 0 && Instant::now() < extend_until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        flow.watch.0.count(false);
        let elapsed = from.elapsed();
        let rate = flow.watch.0.counted() as f64 / elapsed.as_secs_f64().max(f64::EPSILON);
        let seeded_in = flow.seeded_in;
        let end = flow.finish(ctx, "(g)").await?;
        verified.push(format!(
            "(g) {backlog}-run backlog (seeded in {:.1} s): {} runs started, {} done with \
             n = 3 and sound histories, {} still pending each claimed exactly once afterwards; \
             no fence loss, crash, discard, abandon or poison",
            seeded_in.as_secs_f64(),
            end.started,
            end.done,
            end.pending
        ));
        sizes.push(AtBacklog { backlog, rate });
    }
    let large_size = sizes.pop();
    let small_size = sizes.pop();
    match (small_size, large_size) {
        (Some(small), Some(large)) => Ok(BacklogScale {
            small,
            large,
            verified,
        }),
        _ => Err(BenchError::Setup("(g) measured no backlog".into())),
    }
}
