//! (b) under tenant-fair claiming: the claim drains of the (b) figures (limit 1, then limit
//! `K`) on pools spread over five tenants, each limit measured twice over with
//! `ClaimPolicy::TenantFair` and twice over with `ClaimPolicy::Oldest`, on pools of the same
//! shape, alternated. The figure is the tenant-fair rate beside the oldest-first rate of those
//! pools: the cost of the round robin (the cursor, the shares and the per-owner candidates;
//! on stores that serialize fair claims, also the parallelism they give up) and nothing else.
//!
//! Why paired rather than beside the plain (b) figures: those drain tenantless pools earlier
//! in the run, and the store is not the same store by the time the fair pools are drained —
//! their claims leave thousands of leased rows behind (on PostgreSQL without autovacuum, dead
//! index entries every later scan steps over), and a run's tenant changes which index
//! entries it has. A comparison that is meant to isolate the policy has to hold the rest
//! still: here both policies drain pools of the same size, tenants and age, written before
//! any of them is timed, in the order oldest, fair, fair, oldest, so a drift over the phase
//! (a store filling up, a cache warming) weighs on both alike.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use docket_core::graph::RuntimeGraph;
use docket_core::model::{OwnerScope, RunId, TenantId, Timestamp};
use docket_core::store::{BatchedInit, ClaimPolicy};

use super::claims::{drain_store, verify_store};
use super::moments::{init, run_id, STEP_GRAPH};
use super::{BenchError, Ctx};

/// How far ahead the first pool is due (past the other claim pools, so none of them mix);
/// each later pool is due an hour after the one drained before it.
const POOL_OFFSET_MS: i64 = 2 * 3_600_000;

/// Tenants each pool is spread over.
const TENANTS: usize = 5;

/// The drains of one limit, in order: the policies alternate so that neither always goes
/// first.
const ORDER: [ClaimPolicy; 4] = [
    ClaimPolicy::Oldest,
    ClaimPolicy::TenantFair,
    ClaimPolicy::TenantFair,
    ClaimPolicy::Oldest,
];

/// Runs initialized per store call while the pools are written.
const INIT_BATCH: usize = 100;

/// One limit's paired rates.
pub(crate) struct PairedRates {
    /// Tenant-fair leases per second over its drains.
    pub fair: f64,
    /// Oldest-first leases per second over its drains of the same kind of pools.
    pub oldest: f64,
}

/// The verified claim rates under both policies.
pub(crate) struct FairClaims {
    /// Limit 1.
    pub single: PairedRates,
    /// Limit `K` (`--claim-batch`).
    pub batch: PairedRates,
    /// What the verification proved.
    pub verified: String,
}

/// Saves the step graph under each of the five tenants, then for each limit writes four
/// pools (run `i` owned by tenant `i mod 5`) and drains them in [`ORDER`].
///
/// # Errors
/// Store errors; [`BenchError::Verification`] when a pool was not claimed exactly once.
pub(crate) async fn run(ctx: &Ctx) -> Result<FairClaims, BenchError> {
    let pool = ctx.options.claim_pool;
    let mut graphs = Vec::new();
    for t in 0..TENANTS {
        let tenant = TenantId::new(format!("claims-{t}"))
            .map_err(|e| BenchError::Setup(format!("tenant id: {e}")))?;
        let docket = ctx.docket.tenant(tenant.clone());
        let graph = docket.save_graph_json(STEP_GRAPH).await?;
        graphs.push((
            OwnerScope::Tenant(tenant),
            docket.runtime_graph(&graph).await?,
        ));
    }
    let batch_limit = ctx.options.claim_batch;
    let single = paired(ctx, &graphs, 1, POOL_OFFSET_MS).await?;
    // The second limit's pools are due after the first's (one hour apart each).
    let batch_offset = POOL_OFFSET_MS + ORDER.len() as i64 * 3_600_000;
    let batch = paired(ctx, &graphs, batch_limit, batch_offset).await?;
    Ok(FairClaims {
        single,
        batch,
        verified: format!(
            "(b) tenant-fair and oldest-first, limits 1 and {batch_limit}: each of 2 × 4 × {pool} \
             runs of {TENANTS} tenants claimed exactly once (attempt 1), nothing left due"
        ),
    })
}

/// One limit: writes the four pools (due `first_offset_ms`, then an hour apart) before any
/// is timed, then drains them in [`ORDER`] and verifies each.
async fn paired(
    ctx: &Ctx,
    graphs: &[(OwnerScope, RuntimeGraph)],
    limit: u32,
    first_offset_ms: i64,
) -> Result<PairedRates, BenchError> {
    let pool = ctx.options.claim_pool;
    let mut pools = Vec::new();
    for k in 0..ORDER.len() {
        let ids: Vec<RunId> = (0..pool)
            .map(|i| run_id(&format!("claimfair{limit}x{k}"), i))
            .collect::<Result<_, _>>()?;
        let offset = first_offset_ms + k as i64 * 3_600_000;
        write_pool(ctx, graphs, &ids, offset).await?;
        pools.push((ids, offset));
    }
    let (mut fair, mut oldest) = (Tally::default(), Tally::default());
    for ((ids, offset), policy) in pools.into_iter().zip(ORDER) {
        let (leases, elapsed) = drain_store(
            Arc::clone(&ctx.backend),
            ctx.options.concurrency,
            policy,
            limit,
            offset,
            pool,
        )
        .await?;
        let ids: BTreeSet<RunId> = ids.into_iter().collect();
        let problems =
            verify_store(ctx.backend.as_ref(), policy, &leases, &ids, offset, limit).await?;
        if !problems.is_empty() {
            return Err(BenchError::Verification(problems));
        }
        let tally = match policy {
            ClaimPolicy::TenantFair => &mut fair,
            _ => &mut oldest,
        };
        tally.runs += pool;
        tally.seconds += elapsed.as_secs_f64();
    }
    Ok(PairedRates {
        fair: fair.rate(),
        oldest: oldest.rate(),
    })
}

/// Runs drained and the time the drains took, for one policy.
#[derive(Default)]
struct Tally {
    runs: usize,
    seconds: f64,
}

impl Tally {
    fn rate(&self) -> f64 {
        self.runs as f64 / self.seconds.max(f64::EPSILON)
    }
}

/// Initializes the runs `ids` due `offset_ms` from now, run `i` owned by tenant `i mod 5`, in
/// batches of [`INIT_BATCH`] (`concurrency` batches at a time).
async fn write_pool(
    ctx: &Ctx,
    graphs: &[(OwnerScope, RuntimeGraph)],
    ids: &[RunId],
    offset_ms: i64,
) -> Result<(), BenchError> {
    let now = Timestamp::now_utc();
    let members: Vec<BatchedInit> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (owner, rtg) = &graphs[i % TENANTS];
            let (proposal, events) = init(rtg, id.clone(), now.add_millis(offset_ms), now)?;
            Ok(BatchedInit {
                owner: owner.clone(),
                proposal,
                events,
            })
        })
        .collect::<Result<_, BenchError>>()?;
    let mut batches = Vec::new();
    let mut members = members.into_iter().peekable();
    while members.peek().is_some() {
        batches.push(members.by_ref().take(INIT_BATCH).collect::<Vec<_>>());
    }
    futures::stream::iter(batches)
        .map(|batch| {
            let backend = Arc::clone(&ctx.backend);
            async move {
                for outcome in backend.initialize_batch(batch).await {
                    outcome?;
                }
                Ok::<_, BenchError>(())
            }
        })
        .buffer_unordered(ctx.options.concurrency)
        .try_collect::<()>()
        .await
}
