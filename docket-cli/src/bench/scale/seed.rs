//! Seeding many due runs fast: each run's `initialize` proposal is computed in the bench and
//! written through [`RunStore::initialize_batch`](docket_core::store::RunStore::initialize_batch)
//! in batches of [`SEED_BATCH`] (one transaction, pipeline or script batch per call on the
//! bundled stores), a few batches in flight at once. That is the write `Docket::start_runs`
//! ends in, without the facade's graph look-up; the time it takes is measured and reported.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};

use docket_core::graph::RuntimeGraph;
use docket_core::model::{OwnerScope, Timestamp};
use docket_core::store::{Backend, BatchedInit};

use super::super::moments::{init, run_id};
use super::super::BenchError;

/// Runs per `initialize_batch` call: `Docket::start_runs`'s batch size.
const SEED_BATCH: usize = docket::START_BATCH_LIMIT;

/// Batches in flight while seeding: enough to keep a server busy on both cores.
const SEED_IN_FLIGHT: usize = 4;

/// Initializes the runs `bench-<phase>-<i>` for every `i` in `range`, each due now, and
/// returns how long that took.
///
/// # Errors
/// The first store error (of a call or of a member).
pub(crate) async fn due_runs(
    backend: &Arc<dyn Backend>,
    rtg: &RuntimeGraph,
    phase: &str,
    range: Range<usize>,
) -> Result<Duration, BenchError> {
    let started = Instant::now();
    let batches: Vec<Range<usize>> = range
        .clone()
        .step_by(SEED_BATCH)
        .map(|first| first..(first + SEED_BATCH).min(range.end))
        .collect();
    futures::stream::iter(batches)
        .map(|batch| {
            let backend = Arc::clone(backend);
            async move {
                let now = Timestamp::now_utc();
                let members = batch
                    .map(|i| {
                        let (proposal, events) = init(rtg, run_id(phase, i)?, now, now)?;
                        Ok::<_, BenchError>(BatchedInit {
                            owner: OwnerScope::Tenantless,
                            proposal,
                            events,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                for outcome in backend.initialize_batch(members).await {
                    outcome?;
                }
                Ok::<_, BenchError>(())
            }
        })
        .buffer_unordered(SEED_IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}
