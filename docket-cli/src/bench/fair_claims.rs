//! (b) under tenant-fair claiming: the same drain as the limit-1 claim figure, on a pool
//! spread over five tenants and claimed with `ClaimPolicy::TenantFair`, so the figure reads
//! beside the `Oldest` limit-1 rate of the same run (the cost of the round robin: the
//! cursor, the shares and the per-owner candidates).

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use docket_core::model::{OwnerScope, RunId, TenantId, Timestamp};
use docket_core::store::ClaimPolicy;

use super::claims::{drain_store, verify_store};
use super::moments::{init, run_id, STEP_GRAPH};
use super::{BenchError, Ctx};

/// How far ahead the pool is due (past the other claim pools, so none of them mix).
const POOL_OFFSET_MS: i64 = 2 * 3_600_000;

/// Tenants the pool is spread over.
const TENANTS: usize = 5;

/// The verified tenant-fair claim rate.
pub(crate) struct FairClaims {
    /// Leases per second, limit 1.
    pub rate: f64,
    /// What the verification proved.
    pub verified: String,
}

/// Initializes the pool (run `i` owned by tenant `i mod 5`), then drains it.
pub(crate) async fn run(ctx: &Ctx) -> Result<FairClaims, BenchError> {
    let n = ctx.options.concurrency;
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
    let now = Timestamp::now_utc();
    let ids: Vec<RunId> = (0..pool)
        .map(|i| run_id("claimfair", i))
        .collect::<Result<_, _>>()?;
    futures::stream::iter(ids.iter().cloned().enumerate())
        .map(|(i, id)| {
            let backend = Arc::clone(&ctx.backend);
            let (owner, rtg) = &graphs[i % TENANTS];
            async move {
                let (proposal, events) = init(rtg, id, now.add_millis(POOL_OFFSET_MS), now)?;
                backend.initialize(owner, proposal, events).await?;
                Ok::<_, BenchError>(())
            }
        })
        .buffer_unordered(n)
        .try_collect::<()>()
        .await?;
    let fair = ClaimPolicy::TenantFair;
    let (leases, elapsed) =
        drain_store(Arc::clone(&ctx.backend), n, fair, 1, POOL_OFFSET_MS, pool).await?;
    let ids: BTreeSet<RunId> = ids.into_iter().collect();
    let problems =
        verify_store(ctx.backend.as_ref(), fair, &leases, &ids, POOL_OFFSET_MS, 1).await?;
    if !problems.is_empty() {
        return Err(BenchError::Verification(problems));
    }
    Ok(FairClaims {
        rate: pool as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
        verified: format!(
            "(b) tenant-fair, limit 1: each of {pool} runs of {TENANTS} tenants claimed exactly \
             once (attempt 1), nothing left due"
        ),
    })
}
