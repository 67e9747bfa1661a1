//! Seeding many due runs fast: each run's `initialize` proposal is computed in the bench and
//! written straight through [`RunStore::initialize`](docket_core::store::RunStore::initialize),
//! many calls in flight at once. That is the same single-run write `Docket::start_run`
//! ends in, without the facade's graph look-up per run; the store has no bulk insert of its
//! own yet, so the time it takes is measured and reported, not hidden.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};

use docket_core::graph::RuntimeGraph;
use docket_core::model::{OwnerScope, Timestamp};
use docket_core::store::Backend;

use super::super::moments::{init, run_id};
use super::super::BenchError;

/// Calls in flight while seeding: enough to keep a server's connection pool busy.
const SEED_IN_FLIGHT: usize = 32;

/// Initializes the runs `bench-<phase>-<i>` for every `i` in `range`, each due now, and
/// returns how long that took.
///
/// # Errors
/// The first store error.
pub(crate) async fn due_runs(
    backend: &Arc<dyn Backend>,
    rtg: &RuntimeGraph,
    phase: &str,
    range: Range<usize>,
) -> Result<Duration, BenchError> {
    let started = Instant::now();
    futures::stream::iter(range)
        .map(|i| {
            let backend = Arc::clone(backend);
            async move {
                let now = Timestamp::now_utc();
                let (proposal, events) = init(rtg, run_id(phase, i)?, now, now)?;
                backend
                    .initialize(&OwnerScope::Tenantless, proposal, events)
                    .await?;
                Ok::<_, BenchError>(())
            }
        })
        .buffer_unordered(SEED_IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}
