//! (f) at scale: the latency of one `claim_due` (limit 1, oldest first) with a small and a
//! large number of pending runs — due and unclaimed — measured one after the other in the
//! same run.
//!
//! Each size is seeded through [`seed::due_runs`] (timed), then one claimer takes `samples`
//! claims back to back; after each claim one fresh due run is written (untimed), so the
//! pending count stays exactly at its size while the figure is taken. Then every remaining
//! pending run is claimed in pages of 1,000, and the verification requires that each seeded
//! run was leased exactly once, at attempt 1, and that no lease named a run the phase did not
//! write.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use docket_core::model::{OwnerScope, RunId, Timestamp, MAX_PAGE_LIMIT};
use docket_core::store::{ClaimLease, ClaimPolicy, ClaimRequest};

use super::super::claims::ORPHAN_TTL_MS;
use super::super::commits::nz;
use super::super::driver::{histogram, record};
use super::super::moments::{init, run_id, STEP_GRAPH};
use super::super::{BenchError, Ctx};
use super::seed;

/// One size's measurement.
pub(crate) struct ClaimAtSize {
    /// Pending runs while measuring.
    pub pending: usize,
    /// Latency of each limit-1 claim.
    pub latency: Histogram<u64>,
    /// How long seeding took.
    pub seeded_in: Duration,
}

/// Both sizes, verified.
pub(crate) struct ClaimScale {
    /// The small size.
    pub small: ClaimAtSize,
    /// The large size.
    pub large: ClaimAtSize,
    /// What the verification proved.
    pub verified: Vec<String>,
}

/// Measures `small`, then `large` pending runs, `samples` claims each.
pub(crate) async fn run(
    ctx: &Ctx,
    small: usize,
    large: usize,
    samples: usize,
) -> Result<ClaimScale, BenchError> {
    let graph = ctx.docket.save_graph_json(STEP_GRAPH).await?;
    let rtg = ctx.docket.runtime_graph(&graph).await?;
    let mut verified = Vec::new();
    let mut sizes = Vec::new();
    for (phase, pending) in [("f-small", small), ("f-large", large)] {
        let seeded_in = seed::due_runs(&ctx.backend, &rtg, phase, 0..pending).await?;
        let mut seen = vec![false; pending + samples];
        let mut problems = Vec::new();
        let mut latency = histogram();
        for i in 0..samples {
            let asked = Instant::now();
            let batch = ctx.backend.claim_due(&request(1)).await?;
            record(&mut latency, asked.elapsed());
            if batch.leases.len() != 1 {
                problems.push(format!(
                    "(f) {pending} pending: a limit-1 claim returned {} leases",
                    batch.leases.len()
                ));
                break;
            }
            note(&mut seen, &mut problems, phase, &batch.leases);
            // Keep the pending count where it was: one fresh due run per claim, untimed.
            let now = Timestamp::now_utc();
            let (proposal, events) = init(&rtg, run_id(phase, pending + i)?, now, now)?;
            ctx.backend
                .initialize(&OwnerScope::Tenantless, proposal, events)
                .await?;
        }
        // Drain the rest, so nothing of this size is due when the next phase starts.
        loop {
            let batch = ctx.backend.claim_due(&request(MAX_PAGE_LIMIT)).await?;
            if batch.leases.is_empty() {
                break;
            }
            note(&mut seen, &mut problems, phase, &batch.leases);
            if problems.len() > 20 {
                break;
            }
        }
        let unclaimed = seen.iter().filter(|s| !**s).count();
        if unclaimed != 0 {
            problems.push(format!(
                "(f) {pending} pending: {unclaimed} of the {} runs written were never leased",
                seen.len()
            ));
        }
        if !problems.is_empty() {
            return Err(BenchError::Verification(problems));
        }
        verified.push(format!(
            "(f) {pending} pending: {} runs (seeded in {:.1} s, {:.0} runs/s) each leased \
             exactly once at attempt 1, nothing else leased",
            seen.len(),
            seeded_in.as_secs_f64(),
            pending as f64 / seeded_in.as_secs_f64().max(f64::EPSILON)
        ));
        sizes.push(ClaimAtSize {
            pending,
            latency,
            seeded_in,
        });
    }
    let large_size = sizes.pop();
    let small_size = sizes.pop();
    match (small_size, large_size) {
        (Some(small), Some(large)) => Ok(ClaimScale {
            small,
            large,
            verified,
        }),
        _ => Err(BenchError::Setup("(f) measured no size".into())),
    }
}

/// A limit-`limit` oldest-first claim at the real clock.
fn request(limit: u32) -> ClaimRequest {
    ClaimRequest {
        policy: ClaimPolicy::Oldest,
        now: Timestamp::now_utc(),
        limit: nz(limit),
        orphan_ttl_ms: ORPHAN_TTL_MS,
        max_claim_attempts: nz(5),
        preference: None,
    }
}

/// Marks each lease's run as seen; a second lease, a later attempt or a foreign run is a
/// problem.
fn note(seen: &mut [bool], problems: &mut Vec<String>, phase: &str, leases: &[ClaimLease]) {
    for lease in leases {
        match index(phase, &lease.run_id).filter(|i| *i < seen.len()) {
            Some(i) if seen[i] => {
                problems.push(format!("(f) run {} was leased twice", lease.run_id));
            }
            Some(i) => seen[i] = true,
            None => problems.push(format!(
                "(f) a claim leased {}, which this phase did not write",
                lease.run_id
            )),
        }
        if lease.claim_attempt != 1 {
            problems.push(format!(
                "(f) run {} was leased at attempt {}, not 1",
                lease.run_id, lease.claim_attempt
            ));
        }
    }
}

/// `i` of a run id `bench-<phase>-<i>`.
fn index(phase: &str, id: &RunId) -> Option<usize> {
    id.as_str()
        .strip_prefix("bench-")?
        .strip_prefix(phase)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_map_back_to_their_index_and_foreign_ones_do_not() {
        let id = run_id("f-small", 42).expect("id");
        assert_eq!(index("f-small", &id), Some(42));
        assert_eq!(index("f-large", &id), None);
        let other = run_id("f-small-x", 1).expect("id");
        assert_eq!(index("f-small", &other), None);
    }
}
