//! (e) at scale: the process's peak resident memory after a small and after a large number of
//! completed runs, one worker running the whole way (the 3-node graph, producers keeping `2N`
//! runs in flight). The peak is reset when the phase starts where the kernel allows it, so
//! it covers the worker's growth, not what earlier phases left behind; the bench's own
//! bookkeeping in this phase is a few counters (run ids are derived from a counter, finished
//! runs are counted, not listed), so growth is the engine's and the store client's. Every run
//! is verified by the flow (see [`flow`](super::flow)).

use std::time::{Duration, Instant};

use super::super::moments::CHAIN;
use super::super::rss;
use super::super::{BenchError, Ctx};
use super::flow;

/// Generous bound on the whole phase.
const PHASE_LIMIT: Duration = Duration::from_secs(3_600);

/// Both peaks, verified.
pub(crate) struct MemoryScale {
    /// Peak KiB after `small` completed runs.
    pub small_kib: u64,
    /// Peak KiB after `large` completed runs.
    pub large_kib: u64,
    /// What the verification proved.
    pub verified: String,
}

/// Runs until `large` runs completed, reading the peak at `small` and at `large`; `None` where
/// `/proc` has no figures.
pub(crate) async fn run(
    ctx: &Ctx,
    small: usize,
    large: usize,
) -> Result<Option<MemoryScale>, BenchError> {
    let n = ctx.options.concurrency;
    let reset = rss::reset_peak();
    let flow = flow::start(ctx, "e-runs", CHAIN, n, 0, 2 * n).await?;
    let deadline = Instant::now() + PHASE_LIMIT;
    let mut peaks = Vec::new();
    for target in [small, large] {
        while flow.watch.0.finished() < target as u64 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        peaks.push(rss::peak_kib());
    }
    let reached = flow.watch.0.finished();
    let end = flow.finish(ctx, "(e)").await?;
    if reached < large as u64 {
        return Err(BenchError::Verification(vec![format!(
            "(e) only {reached} of {large} runs completed within {PHASE_LIMIT:?}"
        )]));
    }
    let verified = format!(
        "(e) {} runs started, {} done with n = 3 and sound histories, {} still pending each \
         claimed exactly once afterwards; peak {}",
        end.started,
        end.done,
        end.pending,
        if reset {
            "reset when the phase began"
        } else {
            "not resettable here: it covers the whole process"
        }
    );
    Ok(match (peaks.first(), peaks.get(1)) {
        (Some(Some(small_kib)), Some(Some(large_kib))) => Some(MemoryScale {
            small_kib: *small_kib,
            large_kib: *large_kib,
            verified,
        }),
        _ => None,
    })
}
